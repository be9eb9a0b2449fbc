"""ASCII timelines like the papers' figures: one row per device, one column per time unit.

A pipeline's rows are its ranks (``rank0``, ``rank1``...: the device's index
in the cluster, as torch's runtime numbers them); a job shop's are its
machines. The legend gives the makespan in ms first when the problem
carries its time unit.

Each task is drawn as its label padded over its duration; idle time is
``.``. Labels follow the naming rule of :mod:`schedsearch.export.labels`
in plain ASCII: ``Fm12`` (kind and micro-batch 12, the default: the row
says which device), ``F3m12`` with ``labels="stage"`` (stage 3's forward
of micro-batch 12), ``F3.down:m12`` with ``labels="block"`` (the block's
name); a job shop's task is its block's name (``j0.o1``). An overlapped
group is drawn once, its members' labels joined by ``/`` (an input and
weight gradient of one micro-batch fused into a full backward read ``B``):
DualPipe's overlapped pair reads ``Fm7/Bm3``. When a time unit is wider
than one character the cell width grows to fit the longest label; a task
too short for its label shows its micro-batch alone (``m12``), else its
kind letter, never a cut number. Transfers get a row per channel (``~``).
"""

from __future__ import annotations

from schedsearch.actions import kind_order
from schedsearch.errors import InvalidOptionsError
from schedsearch.export.labels import channel_label, device_labels, kind_and_stage
from schedsearch.export.labels import task_label as _full_label
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance, overlap_groups

__all__ = ["render_ascii", "task_label", "LABEL_STYLES"]

LABEL_STYLES = ("kind", "stage", "block")


def task_label(problem: Problem | None, block: str, microbatch: int, style: str = "kind") -> str:
    """ASCII label of a task: ``Fm3`` (kind, micro-batch 3), ``F0m3`` (stage 0 too) or ``F0.down:m3`` (block).

    Examples
    --------
    >>> from schedsearch.export.ascii import task_label
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(4, 16)
    >>> [task_label(problem, "F3", 12, style) for style in ("kind", "stage", "block")]
    ['Fm12', 'F3m12', 'F3:m12']
    """
    if style not in LABEL_STYLES:
        raise InvalidOptionsError(f"render_ascii: 'labels' must be one of {LABEL_STYLES}, got {style!r}")
    if problem is None or style == "block":
        return _full_label(problem, block, microbatch, separator=":")
    try:
        b = problem.graph.block(block)
    except KeyError:
        return _full_label(problem, block, microbatch, separator=":")
    if b.stage is None:
        return _full_label(problem, block, microbatch, separator=":")
    if style == "stage":
        return f"{b.kind}{b.stage}m{microbatch}"
    return f"{b.kind}m{microbatch}"


def _short_labels(problem: Problem | None, block: str, microbatch: int) -> tuple[str, ...]:
    """Shorter stand-ins for a label that does not fit: the micro-batch, the kind letter."""
    if problem is not None:
        try:
            b = problem.graph.block(block)
        except KeyError:
            return ()
        if b.stage is None and problem.num_microbatches == 1:
            return ()
        return (f"m{microbatch}", b.kind[:1])
    return (f"m{microbatch}",)


def _group_label(problem: Problem | None, members: tuple[TaskInstance, ...], style: str) -> tuple[str, str]:
    """Members' labels joined by ``/`` and the micro-batches alone (``m7/m3``); an I and a W of one stage
    and micro-batch read as one B."""
    info = [(*kind_and_stage(problem, m.block, m.block), m) for m in members]
    parts: list[str] = []
    short: list[str] = []
    used: set[int] = set()
    info.sort(key=lambda x: kind_order(x[0]))
    for i, (kind, stage, m) in enumerate(info):
        if i in used:
            continue
        if kind == "I":
            for j, (k2, s2, m2) in enumerate(info):
                if j not in used and j != i and k2 == "W" and s2 == stage and m2.microbatch == m.microbatch:
                    used.update((i, j))
                    middle = f"{stage}" if style == "stage" and stage is not None else ""
                    parts.append(f"B{middle}m{m.microbatch}")
                    short.append(f"m{m.microbatch}")
                    break
            if i in used:
                continue
        used.add(i)
        parts.append(task_label(problem, m.block, m.microbatch, style))
        short.append(f"m{m.microbatch}")
    return "/".join(parts), "/".join(short)


def render_ascii(
    problem: Problem | None,
    schedule: Schedule,
    *,
    cell: int | None = None,
    max_width: int = 400,
    legend: bool = True,
    labels: str = "kind",
) -> str:
    """Render ``schedule`` as text, one row per device.

    Parameters
    ----------
    cell:
        Characters per time unit (default: fit the longest label and one
        separator in the shortest task).
    max_width:
        Wider timelines are scaled down (several time units per character).
    labels:
        ``"kind"`` (``Fm3``), ``"stage"`` (``F0m3``) or ``"block"`` (``F0:m3``).

    Examples
    --------
    1F1B on two devices; ``=`` continues a task, ``|`` ends it:

    >>> from schedsearch.export import render_ascii
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> print(render_ascii(problem, one_f_one_b(problem), legend=False))
           0       2       4       6       8
    rank0: Fm0 Fm1 ........Bm0====|....Bm1====|
    rank1: ....Fm0 Bm0====|Fm1 Bm1====|........
    """
    devices = list(problem.cluster.device_names) if problem is not None else list(schedule.devices)
    makespan = schedule.makespan
    if makespan == 0:
        return "(empty schedule)"
    # one drawable item per plain task and per overlapped group
    # one drawable item per plain task and per overlapped group: (start, end, labels, longest first)
    items: dict[str, list[tuple[int, int, tuple[str, ...]]]] = {d: [] for d in devices}
    for t in schedule.tasks:
        if t.group_key is None:
            texts = (task_label(problem, t.block, t.microbatch, labels),
                     *_short_labels(problem, t.block, t.microbatch))
            for d in t.devices:
                items.setdefault(d, []).append((t.start, t.end, texts))
    for (_, devs, start), members in overlap_groups(schedule).items():
        end = max(m.end for m in members)
        full, short = _group_label(problem, members, labels)
        for d in devs:
            items.setdefault(d, []).append((start, end, (full, short)))
    entries = [x for v in items.values() for x in v]
    shortest = min((e - s for s, e, _ in entries), default=1)
    longest_label = max((len(x[0]) for _, _, x in entries), default=1)
    if cell is None:
        # room for the longest label and a separator in the shortest task
        cell = max(1, -(-(longest_label + 1) // shortest))
    scale = 1
    while makespan * cell // scale > max_width:
        scale += 1
    width = -(-makespan * cell // scale)
    names = device_labels(problem, devices)
    channels = sorted({tr.channel for tr in schedule.transfers})
    channel_names = {c: (channel_label(problem, c) if problem is not None and names != {d: d for d in devices}
                         else c) for c in channels}
    name_w = max(len(names[d]) for d in devices)
    lines = []
    axis = [" "] * width
    step = max(1, 10 // max(1, cell // scale))
    for t in range(0, makespan, step):
        pos = t * cell // scale
        for i, ch in enumerate(str(t)):
            if pos + i < width:
                axis[pos + i] = ch
    lines.append(" " * (name_w + 2) + "".join(axis).rstrip())
    for d in devices:
        row = ["."] * width
        for start, end, texts in sorted(items.get(d, [])):
            a = start * cell // scale
            b = max(a + 1, end * cell // scale)
            span = b - a
            # the longest label that fits with a separator; never a cut one (F1 for F12)
            # a space first when the previous task's last character touches this one
            lead = 1 if a > 0 and row[a - 1] not in ".=|# " else 0
            text = next((x for x in texts if len(x) + lead < span), "")
            if not text:  # one character: the kind letter, or '#'
                body = next((x for x in texts if len(x) == 1 and not x.isdigit()), "#") * span
            elif span - lead - len(text) > 1:
                body = " " * lead + text + "=" * (span - lead - len(text) - 1) + "|"
            else:
                body = " " * lead + text + " "
            for i, ch in enumerate(body):
                row[a + i] = ch
        lines.append(f"{names[d].rjust(name_w)}: " + "".join(row))
    if schedule.transfers:
        cw = max(name_w, max(len(channel_names[c]) for c in channels))
        for c in channels:
            row = ["."] * width
            for tr in schedule.transfers:
                if tr.channel != c or tr.end == tr.start:
                    continue
                a, b = tr.start * cell // scale, max(tr.start * cell // scale + 1, tr.end * cell // scale)
                for i in range(a, b):
                    row[i] = "~"
            lines.append(f"{channel_names[c].rjust(cw)}: " + "".join(row))
    if legend:
        unit_ms = None if problem is None or problem.time_unit_s is None else problem.time_unit_s * 1e3
        unit = "time unit" if unit_ms is None else f"time unit ({unit_ms:.4g} ms)"
        note = f"1 char = {scale}/{cell} {unit}" if scale > 1 else f"1 {unit} = {cell} char"
        staged = problem is None or any(b.stage is not None for b in problem.graph.blocks)
        naming = "Fm3 = forward of micro-batch 3; " if staged else ""
        makespan_text = str(makespan) if unit_ms is None else f"{makespan * unit_ms:.6g} ms = {makespan} time units"
        lines.append(f"(makespan {makespan_text}; {note}; {naming}'.' idle; '#' a task too short for its label; "
                     f"'~' transfer; 'a/b' overlapped group)")
    return "\n".join(lines)
