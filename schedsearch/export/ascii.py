"""ASCII timelines like the papers' figures: one row per device, one column per time unit.

Each task is drawn as its label (kind tag + micro-batch, e.g. ``F3``; with
``labels="stage"`` the stage too, ``0F3``, as PyTorch writes actions)
padded over its duration; idle time is ``.``. An overlapped group is drawn
once, its members' labels joined by ``/`` (an input and weight gradient of
one micro-batch fused into a full backward read ``B``): DualPipe's
overlapped pair reads ``F7/B3``. When a time unit is wider than one
character the cell width grows to fit the longest label; transfers get a
row per channel (``~``).
"""

from __future__ import annotations

from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance, overlap_groups

__all__ = ["render_ascii", "task_label", "LABEL_STYLES"]

LABEL_STYLES = ("kind", "stage", "block")


def task_label(problem: Problem | None, block: str, microbatch: int, style: str = "kind") -> str:
    """Short label of a task: ``F3`` (kind and micro-batch), ``0F3`` (stage first) or ``F0.down#3``."""
    if style not in LABEL_STYLES:
        raise ValueError(f"render_ascii: 'labels' must be one of {LABEL_STYLES}, got {style!r}")
    if problem is None or style == "block":
        return f"{block}#{microbatch}" if style == "block" else f"{block}{microbatch}"
    try:
        b = problem.graph.block(block)
    except KeyError:
        return f"{block}{microbatch}"
    if style == "stage" and b.stage is not None:
        return f"{b.stage}{b.kind}{microbatch}"
    return f"{b.kind}{microbatch}"


def _group_label(problem: Problem | None, members: tuple[TaskInstance, ...], style: str) -> str:
    """Members' labels joined by ``/``; an I and a W of one stage and micro-batch read as one B."""
    info = []
    for m in members:
        kind, stage = m.block, None
        if problem is not None:
            try:
                b = problem.graph.block(m.block)
                kind, stage = b.kind, b.stage
            except KeyError:
                pass
        info.append((kind, stage, m))
    parts: list[str] = []
    used: set[int] = set()
    order = "FBIW"
    info.sort(key=lambda x: order.index(x[0]) if x[0] in order else len(order))
    for i, (kind, stage, m) in enumerate(info):
        if i in used:
            continue
        if kind == "I":
            for j, (k2, s2, m2) in enumerate(info):
                if j not in used and j != i and k2 == "W" and s2 == stage and m2.microbatch == m.microbatch:
                    used.update((i, j))
                    prefix = f"{stage}" if style == "stage" and stage is not None else ""
                    parts.append(f"{prefix}B{m.microbatch}")
                    break
            if i in used:
                continue
        used.add(i)
        parts.append(task_label(problem, m.block, m.microbatch, style))
    return "/".join(parts)


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
        ``"kind"`` (``F3``), ``"stage"`` (``0F3``) or ``"block"`` (``F0#3``).

    Examples
    --------
    1F1B on two devices; ``=`` continues a task, ``|`` ends it:

    >>> from schedsearch.export import render_ascii
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> print(render_ascii(problem, one_f_one_b(problem), labels="stage", legend=False))
        0       2       4       6       8
    d0: 0F0 0F1 ........0B0====|....0B1====|
    d1: ....1F0 1B0====|1F1 1B1====|........
    """
    devices = list(problem.cluster.device_names) if problem is not None else list(schedule.devices)
    makespan = schedule.makespan
    if makespan == 0:
        return "(empty schedule)"
    # one drawable item per plain task and per overlapped group
    items: dict[str, list[tuple[int, int, str]]] = {d: [] for d in devices}
    for t in schedule.tasks:
        if t.group_key is None:
            for d in t.devices:
                items.setdefault(d, []).append((t.start, t.end, task_label(problem, t.block, t.microbatch, labels)))
    for (_, devs, start), members in overlap_groups(schedule).items():
        end = max(m.end for m in members)
        text = _group_label(problem, members, labels)
        for d in devs:
            items.setdefault(d, []).append((start, end, text))
    entries = [x for v in items.values() for x in v]
    shortest = min((e - s for s, e, _ in entries), default=1)
    longest_label = max((len(x) for _, _, x in entries), default=1)
    if cell is None:
        # room for the longest label and a separator in the shortest task
        cell = max(1, -(-(longest_label + 1) // shortest))
    scale = 1
    while makespan * cell // scale > max_width:
        scale += 1
    width = -(-makespan * cell // scale)
    name_w = max(len(d) for d in devices)
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
        for start, end, text in sorted(items.get(d, [])):
            a = start * cell // scale
            b = max(a + 1, end * cell // scale)
            span = b - a
            if span <= len(text):
                body = text[:span]
            elif span - len(text) > 1:
                body = text + "=" * (span - len(text) - 1) + "|"
            else:
                body = text + " "
            for i, ch in enumerate(body):
                row[a + i] = ch
        lines.append(f"{d.rjust(name_w)}: " + "".join(row))
    if schedule.transfers:
        channels = sorted({tr.channel for tr in schedule.transfers})
        cw = max(name_w, max(len(c) for c in channels))
        for c in channels:
            row = ["."] * width
            for tr in schedule.transfers:
                if tr.channel != c or tr.end == tr.start:
                    continue
                a, b = tr.start * cell // scale, max(tr.start * cell // scale + 1, tr.end * cell // scale)
                for i in range(a, b):
                    row[i] = "~"
            lines.append(f"{c.rjust(cw)}: " + "".join(row))
    if legend:
        note = f"1 char = {scale}/{cell} time unit" if scale > 1 else f"1 time unit = {cell} char"
        lines.append(f"(makespan {makespan}; {note}; '.' idle; '~' transfer; 'a/b' overlapped group)")
    return "\n".join(lines)
