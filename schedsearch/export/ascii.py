"""ASCII timelines like the papers' figures: one row per device, one column per time unit.

Each task is drawn as its label (kind tag + micro-batch, e.g. ``F3``) padded
over its duration; idle time is ``.``. When a time unit is wider than one
character the cell width grows to fit the longest label.
"""

from __future__ import annotations

from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["render_ascii", "task_label"]


def task_label(problem: Problem | None, block: str, microbatch: int) -> str:
    """Short label: the block's kind tag and the micro-batch number (``F3``)."""
    if problem is None:
        return f"{block}{microbatch}"
    try:
        kind = problem.graph.block(block).kind
    except KeyError:
        kind = block
    return f"{kind}{microbatch}"


def render_ascii(
    problem: Problem | None,
    schedule: Schedule,
    *,
    cell: int | None = None,
    max_width: int = 400,
    legend: bool = True,
) -> str:
    """Render ``schedule`` as text, one row per device.

    Parameters
    ----------
    cell:
        Characters per time unit (default: fit the longest label in one unit
        when all tasks last 1, else 1 and labels are written over their span).
    max_width:
        Wider timelines are scaled down (several time units per character).
    """
    devices = list(problem.cluster.device_names) if problem is not None else list(schedule.devices)
    makespan = schedule.makespan
    if makespan == 0:
        return "(empty schedule)"
    labels = {t.key: task_label(problem, t.block, t.microbatch) for t in schedule.tasks}
    shortest = min((t.duration for t in schedule.tasks), default=1)
    longest_label = max((len(s) for s in labels.values()), default=1)
    if cell is None:
        cell = max(1, -(-longest_label // shortest))
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
        for task in schedule.on_device(d):
            a, b = task.start * cell // scale, max(task.start * cell // scale + 1, task.end * cell // scale)
            text = labels[task.key]
            span = b - a
            body = (text + "-" * span)[:span] if span >= len(text) else text[:span]
            if span > len(text):
                body = text + "=" * (span - len(text) - 1) + "|" if span - len(text) > 1 else text + " "
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
        lines.append(f"(makespan {makespan}; {note}; '.' idle; '~' transfer)")
    return "\n".join(lines)
