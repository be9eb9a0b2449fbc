"""Matplotlib Gantt charts (PNG, SVG, PDF...): one row per device, then one per channel.

Needs matplotlib (the optional extra ``schedsearch[plot]``); it is
imported only when a chart is drawn, with the non-interactive ``Agg``
backend when no backend was chosen.

How a box reads (the rules of :mod:`schedsearch.export.labels`): its
colour is its micro-batch (a job shop's: its job), its hatch its kind
(``F`` plain, ``B`` ``//``, ``I`` ``\\\\``, ``W`` ``xx``) plus, from
``m20`` on, a mark for the palette's round (dots for ``m20``-``m39``,
rings for ``m40``-``m59``...), a lighter shade
a later chunk or the other direction on that device (ZB-V, interleaved,
DualPipe's up pipeline). Its text is its label, ``F3·m12`` (stage 3's
forward, micro-batch 12; a job shop's ``j0.o1``), or the micro-batch alone
(``m12``, a job shop's operation ``o1``) when the full label does not fit,
written upright when the box is too narrow for it across (many ranks and
micro-batches), or nothing: a label is never cut. A pipeline's rows are
its ranks, ``rank0``, ``rank1``... (a job shop's: its machines). The members of an overlapped group share
their interval, each drawn as a horizontal band of the box (F&B: the
forward above, the backward below; an input and weight gradient fused into
a full backward are one B band). A legend names the kinds, the chunks and
what the colours stand for. ``time_scale`` divides the time axis (problem
units per published unit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from schedsearch.actions import kind_order
from schedsearch.errors import UnsupportedFeatureError
from schedsearch.export.labels import (KIND_HATCHES, OTHER_HATCH, PALETTE, TaskStyle, channel_label, cycle_legend,
                                       device_labels, kind_and_stage, shade, task_style, text_colour)
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, overlap_groups

__all__ = ["plot_schedule", "save_plot", "KIND_COLOURS", "chart_boxes", "ChartBox"]

#: Colour of each block kind in a legend that has no micro-batch (kept for callers of the earlier charts).
KIND_COLOURS = {"F": "#4C72B0", "B": "#DD8452", "I": "#C44E52", "W": "#55A868"}
_TRANSFER = "#937860"
_FONT_PT = 7.0
_CHAR_EM = 0.62  # a character's width in font sizes, generous for digits and the middle dot


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise UnsupportedFeatureError(
            "plotting needs matplotlib: install the extra 'schedsearch[plot]' (pip install matplotlib), "
            "or export an ASCII timeline or a Chrome trace instead"
        ) from exc
    if "matplotlib.pyplot" not in __import__("sys").modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@attrs.frozen(kw_only=True)
class ChartBox:
    """One box of a Gantt chart: its row, interval, band and how it is drawn.

    ``row`` is a device's or a channel's name; ``y0``/``height`` the band
    inside the row (0.8 high; overlapped groups split it); ``style`` the
    task's :class:`~schedsearch.export.labels.TaskStyle` (None for a
    transfer); ``members`` the ``(block, micro-batch)`` keys drawn.

    Examples
    --------
    >>> from schedsearch.export.plot import chart_boxes
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> box = chart_boxes(problem, one_f_one_b(problem))[0]
    >>> box.row, box.start, box.end, box.style.label, box.fill
    ('d0', 0, 1, 'F0·m0', '#1f77b4')
    """

    row: str
    start: int
    end: int
    y0: float
    height: float
    style: TaskStyle | None
    members: tuple[tuple[str, int], ...]
    label: str = ""

    @property
    def fill(self) -> str:
        return _TRANSFER if self.style is None else shade(self.style.colour, self.style.chunk)

    @property
    def labels(self) -> tuple[str, ...]:
        return (self.label,) if self.style is None else self.style.labels


def chart_boxes(problem: Problem | None, schedule: Schedule) -> list[ChartBox]:
    """The boxes of the chart of ``schedule``: one per task and device, one per band of a group, one per transfer.

    Examples
    --------
    DualPipeV's overlapped F&B pairs are two bands of one box:

    >>> from schedsearch.export.plot import chart_boxes
    >>> from schedsearch.handcrafted import reproduce
    >>> rep = reproduce("dualpipev", devices=2, microbatches=4)
    >>> bands = [b for b in chart_boxes(rep.problem, rep.schedule) if b.height < 0.8]
    >>> sorted({b.style.kind for b in bands}), bands[0].height
    (['B', 'F'], 0.4)
    """
    boxes: list[ChartBox] = []
    for t in schedule.tasks:
        if t.group_key is not None:
            continue
        for d in t.devices:
            boxes.append(ChartBox(row=d, start=t.start, end=t.end, y0=0.0, height=0.8,
                                  style=task_style(problem, t.block, t.microbatch, d), members=(t.key,)))
    for (_, devs, start), members in overlap_groups(schedule).items():
        end = max(m.end for m in members)
        parts = _group_parts(problem, members)
        h = 0.8 / len(parts)
        for i, (kind_order, keys) in enumerate(parts):
            block, mb = keys[0]
            for d in sorted(devs):
                style = task_style(problem, block, mb, d)
                if len(keys) > 1:  # a fused I and W: one B band
                    style = attrs.evolve(style, kind="B", labels=(style.label.replace(block, "B" + block[1:], 1),
                                                                   *style.labels[1:]))
                boxes.append(ChartBox(row=d, start=start, end=end, y0=i * h, height=h, style=style, members=keys))
    for tr in schedule.transfers:
        if tr.end > tr.start:
            boxes.append(ChartBox(row=f"channel {tr.channel}", start=tr.start, end=tr.end, y0=0.0, height=0.8,
                                  style=None, members=(), label=f"m{tr.microbatch}"))
    return boxes


def _group_parts(problem: Problem | None, members) -> list[tuple[int, tuple[tuple[str, int], ...]]]:
    """Bands of a group, forward first: (kind order, member keys); an I and a W of one stage and micro-batch are one."""
    info = [(*kind_and_stage(problem, m.block, m.block[:1]), m) for m in members]
    parts: list[tuple[int, tuple[tuple[str, int], ...]]] = []
    used: set[int] = set()
    for i, (k, stage, m) in enumerate(info):
        if i in used:
            continue
        if k == "I":
            j = next((j for j, (k2, s2, m2) in enumerate(info)
                      if j not in used and k2 == "W" and s2 == stage and m2.microbatch == m.microbatch), None)
            if j is not None:
                used.update((i, j))
                parts.append((kind_order("B"), (m.key, info[j][2].key)))
                continue
        used.add(i)
        parts.append((kind_order(k), (m.key,)))
    parts.sort(key=lambda x: x[0])
    return parts


def plot_schedule(
    problem: Problem | None,
    schedule: Schedule,
    *,
    title: str | None = None,
    time_scale: int = 1,
    width: float | None = None,
    show_labels: bool = True,
    fold_channels: bool = False,
) -> Any:
    """Draw ``schedule`` and return the matplotlib ``Figure`` (see the module docstring for how a box reads).

    Needs matplotlib (the ``plot`` extra). ``problem`` may be None (rows
    are then the schedule's devices); ``title`` defaults to the schedule's
    or the problem's name; ``time_scale`` divides the time axis; ``width``
    is the figure's width in inches (default from the makespan);
    ``show_labels=False`` draws no text in the boxes; ``fold_channels=True``
    draws every channel's transfers in one row (``transfers``), so that
    many ranks keep the chart readable. A problem with a
    ``time_unit_s`` gets its time axis in milliseconds. Save the figure with
    ``figure.savefig(path)`` or use :func:`save_plot`.

    Examples
    --------
    >>> from schedsearch.export import plot_schedule
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> figure = plot_schedule(problem, one_f_one_b(problem))
    >>> sorted(text.get_text() for text in figure.axes[0].texts)[:3]
    ['B0·m0', 'B0·m1', 'B1·m0']
    >>> [text.get_text() for text in figure.axes[0].get_legend().get_texts()][:3]
    ['F', 'B (hatched //)', 'colour: micro-batch']
    """
    plt = _pyplot()
    from matplotlib.patches import Patch, Rectangle

    devices = list(problem.cluster.device_names) if problem is not None else list(schedule.devices)
    channels = sorted({tr.channel for tr in schedule.transfers if tr.end > tr.start})
    names = device_labels(problem, devices)
    linked = any(names[d] != d for d in devices)  # a pipeline's channels are links between ranks
    folded = f"transfers ({len(channels)} {'links' if linked else 'channels'})"
    rows = devices + ([folded] if fold_channels and channels else [f"channel {c}" for c in channels])
    row_of = {r: i for i, r in enumerate(rows)}
    if fold_channels:
        row_of.update({f"channel {c}": len(devices) for c in channels})
    shown = [names[r] if r in names else channel_label(problem, r[len("channel "):]) if r.startswith("channel ")
             else r for r in rows]
    makespan = max(schedule.makespan, 1)
    boxes = chart_boxes(problem, schedule)
    fig_w = width if width is not None else _default_width(boxes, makespan / time_scale, time_scale, show_labels)
    fig, ax = plt.subplots(figsize=(fig_w, 0.5 * len(rows) + 1.4))
    for box in boxes:
        r = row_of.setdefault(box.row, len(row_of))
        hatch = box.style.hatch if box.style is not None else None
        ax.add_patch(Rectangle((box.start / time_scale, r - 0.4 + box.y0), (box.end - box.start) / time_scale,
                               box.height, facecolor=box.fill, edgecolor="black", linewidth=0.4,
                               hatch=hatch or None))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(shown)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, makespan / time_scale)
    unit_s = problem.time_unit_s if problem is not None else None
    if unit_s is not None:
        # the problem knows its unit: the axis reads milliseconds
        from matplotlib.ticker import FuncFormatter

        ms_per_tick = unit_s * 1e3 * time_scale
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x * ms_per_tick:.4g}"))
        ax.set_xlabel(f"time (ms; 1 problem unit = {unit_s * 1e3:.4g} ms)")
    else:
        ax.set_xlabel("time" + (f" (1 unit = {time_scale} problem units)" if time_scale != 1 else ""))
    ax.set_title(title or schedule.name or (problem.name if problem is not None else ""), loc="left", fontsize=9)
    handles = _legend_handles(boxes, Patch)
    legend = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False,
                       borderaxespad=0.0)
    fig.tight_layout()
    if show_labels:
        # widths in pixels after the layout: a label is written only where all of it fits
        fig.canvas.draw()
        ax_px = ax.get_window_extent().width
        px_per_unit = ax_px / (makespan / time_scale)
        char_px = _CHAR_EM * _FONT_PT * fig.dpi / 72.0
        row_px = ax.get_window_extent().height / max(1, len(rows))
        line_px = 1.05 * _FONT_PT * fig.dpi / 72.0
        for box in boxes:
            if fold_channels and box.style is None:
                continue  # a transfer of a folded row (they may overlap there)
            across = (box.end - box.start) / time_scale * px_per_unit
            up = box.height * row_px
            text, rotation = _fitting_label(box.labels, across, up, char_px, line_px)
            if text:
                r = row_of[box.row]
                ax.text((box.start + box.end) / 2 / time_scale, r - 0.4 + box.y0 + box.height / 2, text,
                        ha="center", va="center", fontsize=_FONT_PT, color=text_colour(box.fill), rotation=rotation,
                        rotation_mode="anchor",
                        bbox=dict(boxstyle="square,pad=0.05", facecolor=box.fill, edgecolor="none", alpha=0.85))
    legend.set_in_layout(True)
    return fig


_MAX_WIDTH_IN = 48.0
_MARGIN_IN = 4.0  # the rows' names and the legend beside the axes


def _default_width(boxes: list[ChartBox], span: float, time_scale: int, labels: bool) -> float:
    """The figure's width in inches: 0.18 in per time unit within 6-24 in, wider (up to 48 in) for labels.

    With labels, the shortest task's box is made at least one line of text
    wide, so that every box can carry its micro-batch upright: an 8-rank,
    32-micro-batch plan gets about 26 in rather than boxes too thin for any
    number.
    """
    width = min(24.0, max(6.0, span * 0.18 + 2))
    shortest = min(((b.end - b.start) / time_scale for b in boxes if b.style is not None and b.end > b.start),
                   default=0.0)
    if labels and shortest > 0:
        line_in = 1.15 * 1.05 * _FONT_PT / 72.0
        width = max(width, min(_MAX_WIDTH_IN, span / shortest * line_in + _MARGIN_IN))
    return width


def _fitting_label(labels: tuple[str, ...], across: float, up: float, char_px: float,
                   line_px: float) -> tuple[str | None, int]:
    """The longest label that fits whole in a box ``across`` x ``up`` pixels, and its rotation (0 or 90 degrees).

    Across first (the full label, then the micro-batch alone); then upright,
    when the box is at least one line wide; ``(None, 0)`` when none fits.

    >>> from schedsearch.export.plot import _fitting_label
    >>> _fitting_label(("F3·m12", "m12"), 60, 12, 6, 10), _fitting_label(("F3·m12", "m12"), 12, 30, 6, 10)
    (('F3·m12', 0), ('m12', 90))
    """
    pad = 2 * char_px / 3
    if up >= line_px:
        text = next((x for x in labels if len(x) * char_px <= across - pad), None)
        if text:
            return text, 0
    if across >= line_px:
        text = next((x for x in labels if len(x) * char_px <= up - pad), None)
        if text:
            return text, 90
    return None, 0


def _legend_handles(boxes: list[ChartBox], Patch: Any) -> list[Any]:
    """Kinds (hatch), what the colour stands for, chunks (shade), transfers."""
    styles = [b.style for b in boxes if b.style is not None]
    kinds = sorted({s.kind for s in styles}, key=lambda k: (kind_order(k), k))
    handles = []
    job_colours = any(s.by_job for s in styles)
    if not job_colours:
        for k in kinds:
            hatch = KIND_HATCHES.get(k, OTHER_HATCH)
            handles.append(Patch(facecolor="white", edgecolor="black", hatch=hatch or None,
                                 label=k + (f" (hatched {hatch})" if hatch else "")))
        groups = sorted({s.colour_index for s in styles})
        cycles = sorted({s.cycle for s in styles})
        handles.append(Patch(facecolor="none", edgecolor="none", label="colour: micro-batch"
                             + (f" mod {len(PALETTE)}" if len(cycles) > 1 else "")))
        for i in groups[:8]:
            handles.append(Patch(facecolor=next(s.colour for s in styles if s.colour_index == i), edgecolor="black",
                                 label=f"m{i}"))
        if len(groups) > 8:
            handles.append(Patch(facecolor="none", edgecolor="none", label=f"... ({len(groups)} micro-batches)"))
        if len(cycles) > 1:  # the palette's rounds: a mark over the kind's hatch
            for c in cycles:
                mark = next(s.mark for s in styles if s.cycle == c)
                handles.append(Patch(facecolor="white", edgecolor="black", hatch=mark or None, label=cycle_legend(c)))
        chunks = sorted({(s.chunk, s.chunk_name) for s in styles if s.chunk_name})
        seen: set[int] = set()
        for chunk, name in chunks:
            if chunk in seen:
                continue
            seen.add(chunk)
            same = [n for c, n in chunks if c == chunk]
            handles.append(Patch(facecolor=shade("#555555", chunk), edgecolor="black",
                                 label=f"shade: {' / '.join(dict.fromkeys(same))}"))
    else:
        handles.append(Patch(facecolor="none", edgecolor="none", label="colour: job"))
        jobs = list(dict.fromkeys((s.group, s.colour) for s in styles))
        for group, colour in jobs[:20]:
            handles.append(Patch(facecolor=colour, edgecolor="black", label=group))
        if len(jobs) > 20:
            handles.append(Patch(facecolor="none", edgecolor="none", label=f"... ({len(jobs)} jobs)"))
    if any(b.style is None for b in boxes):
        handles.append(Patch(facecolor=_TRANSFER, edgecolor="black", label="transfer"))
    return handles


def save_plot(problem: Problem | None, schedule: Schedule, path: str | Path, **kwargs: Any) -> Path:
    """Draw ``schedule`` and save it to ``path`` (format from the suffix: .png, .svg, .pdf).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from schedsearch.export import save_plot
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print(save_plot(problem, one_f_one_b(problem), Path(folder) / "1f1b.svg").name)
    1f1b.svg
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = plot_schedule(problem, schedule, **kwargs)
    try:
        fig.savefig(path, dpi=150, bbox_inches="tight")
    finally:
        _pyplot().close(fig)
    return path
