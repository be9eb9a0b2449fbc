"""Named handcrafted schedules: build the problem, generate, measure, compare with the formula.

The schedules and their closed forms are records of
:mod:`schedsearch.handcrafted.families` (:data:`SCHEDULES`, one family's
published schedules each); this module runs them.

:func:`reproduce` is the one entry point of the examples and of
``schedsearch reproduce``: it builds the matching placement, runs the
generator, computes the metrics and the published closed forms, in the
published time unit.

The time scale and the closed forms are described in
:mod:`schedsearch.handcrafted.families`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.families import SCHEDULES, ScheduleSpec
from schedsearch.problem import Problem
from schedsearch.schedule import Metrics, Schedule, metrics

__all__ = ["ScheduleSpec", "SCHEDULES", "Reproduction", "reproduce", "schedule_names"]

Params = Mapping[str, Any]


def schedule_names() -> tuple[str, ...]:
    """The names :func:`reproduce` accepts, in the registry's order (the command line's choices).

    Examples
    --------
    >>> from schedsearch.handcrafted import schedule_names
    >>> schedule_names()
    ('gpipe', '1f1b', 'interleaved', 'interleaved-zb', 'zb-h1', 'zb-v', 'v-half', 'v-min', 'chimera', 'dualpipe', 'dualpipev')
    """
    return tuple(SCHEDULES)


@attrs.frozen(kw_only=True)
class Reproduction:
    """A handcrafted schedule with its problem, metrics and the published closed forms.

    ``measured`` and ``formula`` are in the published time unit (problem
    times divided by ``time_scale``); ``matches`` tells, per figure the
    formula gives, whether the measurement equals it.

    Examples
    --------
    >>> from schedsearch.handcrafted import reproduce
    >>> print(reproduce("zb-h1", devices=4, microbatches=8))
    ZB-H1 (ZB1P): devices=4, microbatches=8, forward=1, input_grad=1, weight_grad=1
      makespan           27   formula m(F+I+W)+(p-1)(F+I-W) = 27: equal
      bubble             3   formula (p-1)(F+I-W) = 3: equal
      bubble_span        3
      bubble_per_device  [3, 3, 3, 3]
      peak_memory        [4, 4, 4, 4]   formula min(p, m) = [4, 4, 4, 4]: equal
    """

    name: str
    title: str
    params: Mapping[str, Any]
    problem: Problem
    schedule: Schedule
    metrics: Metrics
    time_scale: int
    formula: Mapping[str, Any]
    formula_text: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def measured(self) -> dict[str, Any]:
        mt, k = self.metrics, self.time_scale
        devices = self.problem.cluster.device_names

        def scale(x: int) -> float | int:
            return x // k if x % k == 0 else x / k

        return {
            "makespan": scale(mt.makespan),
            "bubble": scale(mt.bubble_global),
            "bubble_span": scale(mt.bubble_span),
            "bubble_per_device": [scale(mt.makespan - mt.busy[d]) for d in devices],
            "peak_memory": [mt.peak_memory[d] for d in devices],
        }

    @property
    def matches(self) -> dict[str, bool]:
        got = self.measured
        return {key: got[key] == value for key, value in self.formula.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "params": dict(self.params),
            "problem": self.problem.name,
            "time_scale": self.time_scale,
            "measured": self.measured,
            "formula": dict(self.formula),
            "matches": self.matches,
        }

    def __str__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items() if v is not None)
        unit = "" if self.time_scale == 1 else f"; times / {self.time_scale} (the published per-chunk unit)"
        lines = [f"{self.title}: {params}{unit}"]
        got = self.measured
        for key in ("makespan", "bubble", "bubble_span", "bubble_per_device", "peak_memory"):
            ref = self.formula.get(key)
            text = self.formula_text.get(key)
            if ref is None:
                mark = ""
            else:
                mark = f"   formula {text + ' = ' if text else ''}{ref}: " + ("equal" if got[key] == ref else "DIFFERENT")
            lines.append(f"  {key:<18} {got[key]}{mark}")
        return "\n".join(lines)


def reproduce(name: str, **params: Any) -> Reproduction:
    """Build, generate and measure the handcrafted schedule ``name``.

    Parameters are those of the schedule's ``defaults`` (``devices``,
    ``microbatches``, ``chunks``, ``forward``, ``backward``,
    ``input_grad``, ``weight_grad``, ``overlap``, ``group_size``); others
    are an error. ``microbatches`` counts pipeline micro-batches (for
    DualPipe the chunks of both directions).

    Examples
    --------
    >>> from schedsearch.handcrafted import reproduce
    >>> r = reproduce("1f1b", devices=4, microbatches=8)
    >>> r.measured["makespan"], r.measured["bubble"], r.matches["makespan"]
    (33, 9, True)
    """
    spec = SCHEDULES.get(name.lower() if isinstance(name, str) else name)
    if spec is None:
        raise InvalidProblemError(f"reproduce: unknown schedule {name!r}; choose one of {sorted(SCHEDULES)}")
    unknown = sorted(k for k, v in params.items() if k not in spec.defaults and v is not None)
    if unknown:
        raise InvalidProblemError(
            f"reproduce {spec.name!r}: unknown parameter(s) {unknown}; it takes {sorted(spec.defaults)}"
        )
    merged = dict(spec.defaults)
    merged.update({k: v for k, v in params.items() if v is not None and k in spec.defaults})
    problem = spec.build(merged)
    schedule = spec.generate(problem, merged)
    return Reproduction(
        name=spec.name,
        title=spec.title,
        params=merged,
        problem=problem,
        schedule=schedule,
        metrics=metrics(problem, schedule),
        time_scale=spec.time_scale(merged),
        formula=spec.formula(merged),
        formula_text=dict(spec.formula_text),
    )
