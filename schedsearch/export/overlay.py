"""Measured over predicted: a Gantt chart of a run's step drawn on the plan's.

One row per rank; in each row the plan's compute actions fill the upper
half (light) and the measured stage calls the lower half (dark), both in
milliseconds from the step's start, coloured by kind (forward, full
backward, input gradient, weight gradient). The measured sends and
receives the runtime added are thin black ticks under the row. A dashed
line marks the predicted step time, a solid one the measured.

Needs matplotlib (the extra ``schedsearch[plot]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedsearch.actions import kind_order
from schedsearch.errors import UnsupportedFeatureError
from schedsearch.handcrafted.actions import planned_actions, seconds_per_unit
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["save_overlay"]

_COLOURS = {"F": "#4c72b0", "B": "#c44e52", "I": "#dd8452", "W": "#55a868"}


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise UnsupportedFeatureError(
            "the measured-over-predicted chart needs matplotlib: install the extra 'schedsearch[plot]'"
        ) from exc
    import sys

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_overlay(problem: Problem, schedule: Schedule, step: Any, path: str | Path, *, title: str = "") -> Path:
    """Draw ``step`` (a :class:`~schedsearch.runtime.trace.StepTrace`) over ``schedule``'s plan into ``path``.

    Raises
    ------
    PlanError
        When the problem has no time unit in seconds.
    UnsupportedFeatureError
        Without matplotlib.
    """
    unit_ms = 1e3 * seconds_per_unit(problem, "measured-over-predicted chart")
    planned = planned_actions(problem, schedule)
    plt = _pyplot()
    ranks = len(problem.cluster.devices)
    fig, ax = plt.subplots(figsize=(12, 0.9 * ranks + 1.5))
    for action, (a, b) in planned.spans.items():
        r = planned.rank_of[action.stage]
        ax.broken_barh([(a * unit_ms, (b - a) * unit_ms)], (r - 0.4, 0.4), facecolors=_COLOURS[action.kind], alpha=0.35,
                       edgecolor="white", linewidth=0.3)
    for c in step.computes:
        ax.broken_barh([(1e3 * c.start_s, 1e3 * (c.end_s - c.start_s))], (c.rank, 0.4), facecolors=_COLOURS[c.kind],
                       edgecolor="white", linewidth=0.3)
    for e in step.events:
        if e.kind.startswith(("SEND_", "RECV_")):
            ax.broken_barh([(1e3 * e.start_s, max(1e3 * (e.end_s - e.start_s), 0.01))], (e.rank + 0.4, 0.06),
                           facecolors="black")
    predicted_ms = planned.makespan * unit_ms
    measured_ms = 1e3 * max(b for _, b in step.rank_spans)
    ax.axvline(predicted_ms, color="grey", linestyle="--", linewidth=1)
    ax.axvline(measured_ms, color="black", linewidth=1)
    ax.set_yticks(range(ranks))
    ax.set_yticklabels([f"rank{r}" for r in range(ranks)])
    ax.invert_yaxis()
    ax.set_xlabel("ms from the step's start (upper half of a row: plan; lower half: measured)")
    ax.set_title(title or f"{problem.name or 'plan'}: predicted {predicted_ms:.1f} ms (dashed), "
                 f"measured {measured_ms:.1f} ms (solid)")
    from matplotlib.patches import Patch

    kinds = sorted({a.kind for a in planned.spans}, key=kind_order)
    ax.legend(handles=[Patch(color=_COLOURS[k], label=k.description) for k in kinds], loc="upper right", fontsize=8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
