"""Pictures and traces of periodic schedules with the repetend marked.

For an unrolled :class:`~schedsearch.periodic.PeriodicSchedule`:

* :func:`render_periodic_ascii`: the ASCII timeline plus two rows under the
  devices: ``j`` puts ``|`` where each instance's first task starts (after
  tightening), ``R`` spans one instance (the middle one by default) with
  ``[====]``;
* :func:`periodic_chrome_trace`: every task's ``args`` name its part
  (``warmup``, ``repetend`` with its ``instance``, ``cooldown``), and a row
  ``repetend`` holds one event per instance spanning its tasks;
* :func:`plot_periodic`: the matplotlib Gantt chart with the marked
  instance shaded and every instance start drawn as a dotted line (needs
  the ``schedsearch[plot]`` extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedsearch.export.ascii import render_ascii
from schedsearch.export.labels import device_labels
from schedsearch.export.chrome import chrome_trace
from schedsearch.periodic import PeriodicSchedule
from schedsearch.schedule import Schedule

__all__ = ["instance_windows", "render_periodic_ascii", "periodic_chrome_trace", "write_periodic_trace", "plot_periodic"]


def instance_windows(periodic: PeriodicSchedule, schedule: Schedule, num_microbatches: int) -> list[tuple[int, int]]:
    """``[first start, last end)`` of every instance in an unrolled ``schedule``."""
    parts = periodic.parts(num_microbatches)
    spans: dict[int, list[int]] = {}
    for t in schedule.tasks:
        part, j = parts.get(t.key, ("", -1))
        if part != "repetend":
            continue
        lo_hi = spans.setdefault(j, [t.start, t.end])
        lo_hi[0] = min(lo_hi[0], t.start)
        lo_hi[1] = max(lo_hi[1], t.end)
    return [tuple(spans[j]) for j in sorted(spans)]  # type: ignore[misc]


def render_periodic_ascii(
    periodic: PeriodicSchedule,
    num_microbatches: int,
    *,
    instance: int | None = None,
    cell: int = 4,
    max_width: int = 400,
    legend: bool = True,
) -> str:
    """The unrolled schedule as text with the repetend marked (see the module docstring)."""
    problem = periodic.problem_for(num_microbatches)
    schedule = periodic.unroll(num_microbatches)
    text = render_ascii(problem, schedule, cell=cell, max_width=max_width, legend=False)
    scale = 1
    while schedule.makespan * cell // scale > max_width:
        scale += 1
    width = -(-schedule.makespan * cell // scale)
    name_w = max(len(d) for d in device_labels(problem).values())  # the timeline's row names
    windows = instance_windows(periodic, schedule, num_microbatches)
    j = len(windows) // 2 if instance is None else instance
    starts = ["."] * width
    for lo, _ in windows:
        starts[min(width - 1, lo * cell // scale)] = "|"
    marked = ["."] * width
    lo, hi = windows[j]
    a, b = lo * cell // scale, max(lo * cell // scale + 1, hi * cell // scale)
    for i in range(a, b):
        marked[i] = "="
    marked[a] = "["
    marked[b - 1] = "]"
    lines = [text, f"{'j'.rjust(name_w)[:name_w]}: " + "".join(starts), f"{'R'.rjust(name_w)[:name_w]}: " + "".join(marked)]
    if legend:
        rep = periodic.repetend
        fold = f" ({rep.fold} micro-batches)" if rep.fold > 1 else ""
        lines.append(
            f"(makespan {schedule.makespan}; period {rep.period}{fold}; 'j |' instance starts; "
            f"'R' instance {j} of {len(windows)}; warmup {len(periodic.warmup.tasks)} tasks, "
            f"cooldown {len(periodic.cooldowns[periodic.layout(num_microbatches)[1]].tasks)} tasks)"
        )
    return "\n".join(lines)


def periodic_chrome_trace(periodic: PeriodicSchedule, num_microbatches: int, **kwargs: Any) -> dict[str, Any]:
    """Chrome/Perfetto trace of the unrolled schedule with the repetend marked."""
    problem = periodic.problem_for(num_microbatches)
    schedule = periodic.unroll(num_microbatches)
    doc = chrome_trace(problem, schedule, marks=periodic.marks(num_microbatches), **kwargs)
    unit = doc["otherData"]["time_unit_us"]
    events = doc["traceEvents"]
    tid = 1 + max((e.get("tid", 0) for e in events), default=0)
    events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_name", "args": {"name": "repetend"}})
    events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    for j, (lo, hi) in enumerate(instance_windows(periodic, schedule, num_microbatches)):
        events.append(
            {"ph": "X", "pid": 0, "tid": tid, "name": f"instance {j}", "cat": "repetend", "ts": lo * unit,
             "dur": (hi - lo) * unit, "args": {"instance": j, "period": periodic.period, "fold": periodic.fold}}
        )
    doc["otherData"]["repetend"] = {
        "period": periodic.period,
        "fold": periodic.fold,
        "offsets": {b: list(o) for b, o in periodic.offsets.items()},
    }
    return doc


def write_periodic_trace(periodic: PeriodicSchedule, num_microbatches: int, path: str | Path, **kwargs: Any) -> Path:
    """Write :func:`periodic_chrome_trace` to ``path``."""
    import json

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(periodic_chrome_trace(periodic, num_microbatches, **kwargs)))
    return path


def plot_periodic(periodic: PeriodicSchedule, num_microbatches: int, path: str | Path | None = None,
                  *, instance: int | None = None, **kwargs: Any) -> Any:
    """Gantt chart with the repetend marked; saved to ``path`` when given. Returns the figure."""
    from schedsearch.export.plot import plot_schedule

    problem = periodic.problem_for(num_microbatches)
    schedule = periodic.unroll(num_microbatches)
    fig = plot_schedule(problem, schedule, **kwargs)
    ax = fig.axes[0]
    scale = kwargs.get("time_scale", 1)
    windows = instance_windows(periodic, schedule, num_microbatches)
    j = len(windows) // 2 if instance is None else instance
    for lo, _ in windows:
        ax.axvline(lo / scale, color="grey", linestyle=":", linewidth=0.6)
    lo, hi = windows[j]
    ax.axvspan(lo / scale, hi / scale, color="gold", alpha=0.25, label=f"repetend (instance {j})")
    if path is not None:
        fig.savefig(str(path))
    return fig
