"""Matplotlib Gantt charts (PNG, SVG, PDF...): one row per device, then one per channel.

Needs matplotlib (the optional extra ``schedsearch[plot]``); it is
imported only when a chart is drawn, with the non-interactive ``Agg``
backend when no backend was chosen. Bars are coloured by kind (F, B, I, W,
others) and labelled with the micro-batch number when wide enough; the
members of an overlapped group share their interval, each drawn as a
horizontal band of the bar (F&B: the forward above, the backward below; an
input and weight gradient fused into a full backward are one B band).
``time_scale`` divides the time axis (problem units per published unit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedsearch.errors import UnsupportedFeatureError
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, overlap_groups

__all__ = ["plot_schedule", "save_plot", "KIND_COLOURS"]

#: Colour of each block kind (matplotlib colour names).
KIND_COLOURS = {"F": "#4C72B0", "B": "#DD8452", "I": "#C44E52", "W": "#55A868"}
_OTHER = "#8172B3"
_TRANSFER = "#937860"


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


def plot_schedule(
    problem: Problem | None,
    schedule: Schedule,
    *,
    title: str | None = None,
    time_scale: int = 1,
    width: float | None = None,
    show_labels: bool = True,
) -> Any:
    """Draw ``schedule`` and return the matplotlib ``Figure``."""
    plt = _pyplot()
    devices = list(problem.cluster.device_names) if problem is not None else list(schedule.devices)
    channels = sorted({tr.channel for tr in schedule.transfers if tr.end > tr.start})
    rows = devices + [f"channel {c}" for c in channels]
    makespan = max(schedule.makespan, 1)
    fig_w = width if width is not None else min(24.0, max(6.0, makespan / time_scale * 0.18 + 2))
    fig, ax = plt.subplots(figsize=(fig_w, 0.5 * len(rows) + 1.2))
    row_of = {d: i for i, d in enumerate(devices)}

    def kind_of(block: str) -> str:
        if problem is None:
            return block[:1]
        try:
            return problem.graph.block(block).kind
        except KeyError:
            return block[:1]

    bars: list[tuple[int, float, float, float, float, str, str]] = []  # row, x, w, y0, h, colour, label
    for t in schedule.tasks:
        if t.group_key is not None:
            continue
        k = kind_of(t.block)
        for d in t.devices:
            bars.append((row_of[d], t.start, t.duration, 0.0, 0.8, KIND_COLOURS.get(k, _OTHER), str(t.microbatch)))
    for (_, devs, start), members in overlap_groups(schedule).items():
        span = max(m.end for m in members) - start
        parts = _group_parts(problem, members, kind_of)
        h = 0.8 / len(parts)
        for i, (k, mb) in enumerate(parts):
            for d in devs:
                bars.append((row_of[d], start, span, i * h, h, KIND_COLOURS.get(k, _OTHER), str(mb)))
    for tr in schedule.transfers:
        if tr.end > tr.start:
            r = len(devices) + channels.index(tr.channel)
            bars.append((r, tr.start, tr.end - tr.start, 0.0, 0.8, _TRANSFER, str(tr.microbatch)))
    char_w = makespan / (fig_w * 12.0)  # time units per character, roughly
    for r, x, w, y0, h, colour, label in bars:
        x_s, w_s = x / time_scale, w / time_scale
        ax.broken_barh([(x_s, w_s)], (r - 0.4 + y0, h), facecolors=colour, edgecolors="black", linewidth=0.4)
        if show_labels and w >= char_w * (len(label) + 0.5) and h >= 0.3:
            ax.text(x_s + w_s / 2, r - 0.4 + y0 + h / 2, label, ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows)
    ax.invert_yaxis()
    ax.set_xlim(0, makespan / time_scale)
    ax.set_xlabel("time" + (f" (1 unit = {time_scale} problem units)" if time_scale != 1 else ""))
    colour_kind = {v: k for k, v in KIND_COLOURS.items()}
    used = {colour_kind.get(c, "other") for *_, c, _ in bars if c != _TRANSFER}
    kinds = sorted(used, key=lambda k: "FBIW".find(k) % 5)
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=KIND_COLOURS.get(k, _OTHER), edgecolor="black", label=k) for k in kinds]
    if channels:
        handles.append(Patch(facecolor=_TRANSFER, edgecolor="black", label="transfer"))
    ax.legend(handles=handles, loc="upper right", fontsize=7, ncol=len(handles), frameon=False,
              bbox_to_anchor=(1.0, 1.12))
    ax.set_title(title or schedule.name or (problem.name if problem is not None else ""), loc="left", fontsize=9)
    fig.tight_layout()
    return fig


def _group_parts(problem: Problem | None, members, kind_of) -> list[tuple[str, int]]:
    """(kind, micro-batch) bands of a group; an I and a W of one stage and micro-batch are one B."""
    info = []
    for m in members:
        stage = None
        if problem is not None:
            try:
                stage = problem.graph.block(m.block).stage
            except KeyError:
                pass
        info.append((kind_of(m.block), stage, m.microbatch))
    parts: list[tuple[str, int]] = []
    rest = list(info)
    for k, stage, mb in info:
        if k == "I" and ("W", stage, mb) in rest and ("I", stage, mb) in rest:
            rest.remove(("I", stage, mb))
            rest.remove(("W", stage, mb))
            parts.append(("B", mb))
    parts += [(k, mb) for k, _, mb in rest]
    parts.sort(key=lambda x: "FBIW".find(x[0]) % 5)
    return parts


def save_plot(problem: Problem | None, schedule: Schedule, path: str | Path, **kwargs: Any) -> Path:
    """Draw ``schedule`` and save it to ``path`` (format from the suffix: .png, .svg, .pdf)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = plot_schedule(problem, schedule, **kwargs)
    try:
        fig.savefig(path, dpi=150)
    finally:
        _pyplot().close(fig)
    return path
