"""Chrome / Perfetto trace JSON with real durations.

One row (thread) per device and per channel in one process (a pipeline's
named ``rank0``, ``rank1``... and ``link rank0-rank1``; a job shop's by
its machines and ``channel:NAME``); each task is a
complete event (``"ph": "X"``) named by the naming rule of
:mod:`schedsearch.export.labels` (``F3·m12``: stage 3's forward of
micro-batch 12; a job shop's task by its block, ``j0.o1``), whose ``ts``/``dur`` are the schedule's time
units scaled by ``time_unit_us`` microseconds, with the block, kind,
micro-batch and stage in ``args`` (and ``overlap``, the group's tag, for the
members of an overlapped group: they share one interval on their device,
and the trace viewers nest them). A multi-device task appears on each of
its devices' rows. Open the file in ``chrome://tracing`` or
https://ui.perfetto.dev.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schedsearch.export.labels import channel_label, device_labels, task_label
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["chrome_trace", "write_chrome_trace"]

_COLOURS = {"F": "thread_state_running", "B": "thread_state_iowait", "I": "rail_response", "W": "cq_build_passed"}


def chrome_trace(
    problem: Problem | None,
    schedule: Schedule,
    *,
    time_unit_us: float | None = None,
    name: str | None = None,
    marks: dict[tuple[str, int], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Build the trace document.

    Parameters
    ----------
    time_unit_us:
        Microseconds per schedule time unit; default: the problem's
        ``time_unit_s`` where it has one, else 1 ms per unit.
    marks:
        Extra ``args`` per task instance ``(block, micro-batch)`` (used to
        mark a repetend, for example).

    Examples
    --------
    One complete event (``"ph": "X"``) per task, one thread per device:

    >>> from schedsearch.export import chrome_trace
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> trace = chrome_trace(problem, one_f_one_b(problem), time_unit_us=1000.0)
    >>> tasks = [event for event in trace["traceEvents"] if event["ph"] == "X"]
    >>> len(tasks), tasks[0]["name"], tasks[0]["ts"], tasks[0]["dur"]
    (8, 'F0·m0', 0.0, 1000.0)
    """
    if time_unit_us is None:
        unit_s = problem.time_unit_s if problem is not None else None
        time_unit_us = 1000.0 if unit_s is None else unit_s * 1e6
    devices = list(problem.cluster.device_names) if problem is not None else list(schedule.devices)
    channels = sorted({tr.channel for tr in schedule.transfers})
    if problem is not None:
        channels = [c.name for c in problem.cluster.channels if c.name in set(channels)]
    tid = {d: i for i, d in enumerate(devices)}
    for c in channels:
        tid[f"channel:{c}"] = len(tid)
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 0, "name": "process_name", "args": {"name": name or schedule.name or "schedule"}}
    ]
    names = device_labels(problem, devices)
    ranked = any(names[d] != d for d in devices)
    for key, t in tid.items():
        if key in names:
            shown = names[key]
        else:  # a channel: a pipeline's by the ranks it links
            shown = channel_label(problem, key[len("channel:"):]) if ranked else key
        events.append({"ph": "M", "pid": 0, "tid": t, "name": "thread_name", "args": {"name": shown}})
        events.append({"ph": "M", "pid": 0, "tid": t, "name": "thread_sort_index", "args": {"sort_index": t}})
    for task in schedule.tasks:
        block = None
        if problem is not None:
            try:
                block = problem.graph.block(task.block)
            except KeyError:
                block = None
        kind = block.kind if block is not None else task.block
        args: dict[str, Any] = {"block": task.block, "microbatch": task.microbatch, "kind": kind,
                                "start": task.start, "end": task.end, "devices": list(task.devices)}
        if block is not None and block.stage is not None:
            args["stage"] = block.stage
        if task.overlap is not None:
            args["overlap"] = task.overlap
        if marks and task.key in marks:
            args.update(marks[task.key])
        for d in task.devices:
            ev = {
                "ph": "X",
                "pid": 0,
                "tid": tid.setdefault(d, len(tid)),
                "name": task_label(problem, task.block, task.microbatch),
                "cat": kind,
                "ts": task.start * time_unit_us,
                "dur": task.duration * time_unit_us,
                "args": args,
            }
            if kind in _COLOURS:
                ev["cname"] = _COLOURS[kind]
            events.append(ev)
    for tr in schedule.transfers:
        if tr.end == tr.start:
            continue
        events.append(
            {
                "ph": "X",
                "pid": 0,
                "tid": tid.setdefault(f"channel:{tr.channel}", len(tid)),
                "name": f"{tr.src}->{tr.dst}·m{tr.microbatch}",
                "cat": "transfer",
                "ts": tr.start * time_unit_us,
                "dur": (tr.end - tr.start) * time_unit_us,
                "args": {"src": tr.src, "dst": tr.dst, "microbatch": tr.microbatch, "channel": tr.channel,
                         "start": tr.start, "end": tr.end},
            }
        )
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"makespan": schedule.makespan,
                                                                          "time_unit_us": time_unit_us}}


def write_chrome_trace(problem: Problem | None, schedule: Schedule, path: str | Path, **kwargs: Any) -> Path:
    """Write the trace of ``schedule`` to ``path`` (JSON).

    Open it in ui.perfetto.dev or chrome://tracing; ``kwargs`` go to
    :func:`chrome_trace`.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from schedsearch import export, handcrafted, placements
    >>> problem = placements.vshape(2, 2)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = export.write_chrome_trace(problem, handcrafted.gpipe(problem), Path(folder) / "gpipe.trace.json")
    ...     print(path.name, sorted(json.loads(path.read_text())))
    gpipe.trace.json ['displayTimeUnit', 'otherData', 'traceEvents']
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(chrome_trace(problem, schedule, **kwargs)))
    return path
