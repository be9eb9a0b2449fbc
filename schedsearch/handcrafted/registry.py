"""Named handcrafted schedules: build the problem, generate, measure, compare with the formula.

:func:`reproduce` is the one entry point of the examples and of
``schedsearch reproduce``: it builds the matching placement, runs the
generator, computes the metrics and the published closed forms, in the
published time unit.

Time scale. Problems are integer. The interleaved schedules' published
figures take per-chunk durations ``F/v`` and ``B/v`` of a whole stage's
``F`` and ``B``; their problems count time in units of ``1/v`` of the
published unit, so the integer per-chunk durations you pass (``forward=1,
backward=2`` by default) are ``F`` and ``B`` of the formula, and every
measured time is divided by ``time_scale = v`` before the comparison. The
other schedules have ``time_scale = 1``.

Formulas (published unit; ``p`` devices, ``m`` micro-batches, ``v``
chunks; global bubble = makespan minus busy time, worst device):

=================  ===========================================  ===================================
schedule           bubble                                       makespan / peak activations
=================  ===========================================  ===================================
GPipe              ``(p-1)(F+B)``                               ``(m+p-1)(F+B)``; ``m`` everywhere
1F1B               ``(p-1)(F+B)``                               ``(m+p-1)(F+B)``; ``min(p-r, m)``
interleaved 1F1B   ``(p-1)(F+B)/v`` (``m`` multiple of ``N``)   --
interleaved ZB1P   ``(p-1)(F+I-W)/v`` (``m`` multiple of ``N``,   --
                   ``W <= F, I``)
ZB-H1              ``(p-1)(F+I-W)`` (``W <= F, I``, ``m >= p``)  ``m(F+I+W)+(p-1)(F+I-W)``; ``min(p, m)``
ZB-V (F=I=W)       ``(p-1)F``, span bubble 0 (``m >= 2p-1``)     ``(6m+p-1)F``; ``2p``
Chimera            ``k(D-2)max(F,B)`` for ``m = kD``            ``D/2+1+min(d, D-1-d)``
DualPipe           ``(PP/2-1)(F&B+B-3W)``                       ``2n(F+B)+bubble`` if ``F&B=F+B``; ``PP``, ``PP+1`` in the middle
DualPipeV          ``(p-1)(F&B+B-3W)``                          ``2m(F+B)+bubble`` if ``F&B=F+B``; ``2p``, ``2p+1`` on the last
=================  ===========================================  ===================================

Here ``F``, ``B`` are the durations you pass (per chunk for the
interleaved schedules, in the problem's unit; divided by ``v`` for the
formula), ``n = chunks/2`` for DualPipe and ``B = I + W``. The DualPipe
bubble is the README's, which assumes ``B = 2F``, ``W = F`` and
``max(F, B) <= F&B <= F + B``; outside that range (and outside the ranges
in brackets) the library states no closed form rather than a wrong one.
These ranges were checked exhaustively on small grids (see the tests).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.chimera import chimera as _chimera_schedule
from schedsearch.handcrafted.classic import gpipe as _gpipe, interleaved_1f1b as _interleaved_1f1b
from schedsearch.handcrafted.classic import one_f_one_b as _one_f_one_b
from schedsearch.handcrafted.dualpipe import dualpipe as _dualpipe_schedule, dualpipev as _dualpipev_schedule
from schedsearch.handcrafted.v_capped import v_half as _v_half, v_min as _v_min
from schedsearch.handcrafted.zero_bubble import interleaved_zero_bubble as _interleaved_zb
from schedsearch.handcrafted.zero_bubble import zb_h1 as _zb_h1, zb_v as _zb_v
from schedsearch.placements import stages
from schedsearch.placements.pipeline import vshape
from schedsearch.problem import Problem
from schedsearch.schedule import Metrics, Schedule, metrics

__all__ = ["ScheduleSpec", "SCHEDULES", "Reproduction", "reproduce", "schedule_names"]

Params = Mapping[str, Any]


@attrs.frozen(kw_only=True)
class ScheduleSpec:
    """A named handcrafted schedule: its placement, generator and closed forms."""

    name: str
    title: str
    #: parameters it reads, with defaults
    defaults: Mapping[str, Any]
    build: Callable[[Params], Problem]
    generate: Callable[[Problem, Params], Schedule]
    formula: Callable[[Params], dict[str, Any]]
    time_scale: Callable[[Params], int] = lambda params: 1
    reference: str = ""
    #: the closed forms as text, per figure
    formula_text: Mapping[str, str] = attrs.field(factory=dict)


def _p(params: Params, key: str) -> Any:
    return params[key]


def _fb(params: Params) -> tuple[int, int]:
    return params["forward"], params["backward"]


def _classic_formula(kind: str) -> Callable[[Params], dict[str, Any]]:
    def formula(params: Params) -> dict[str, Any]:
        p, m = params["devices"], params["microbatches"]
        F, B = _fb(params)
        peaks = [m] * p if kind == "gpipe" else [min(p - r, m) for r in range(p)]
        return {"makespan": (m + p - 1) * (F + B), "bubble": (p - 1) * (F + B), "peak_memory": peaks}

    return formula


def _interleaved_formula(split: bool) -> Callable[[Params], dict[str, Any]]:
    def formula(params: Params) -> dict[str, Any]:
        p, v, m = params["devices"], params["chunks"], params["microbatches"]
        N = params.get("group_size") or p
        if m % N:
            return {}
        if split:
            F, I, W = params["forward"], params["input_grad"], params["weight_grad"]
            if W > min(F, I):
                return {}
            return {"bubble": (p - 1) * (F + I - W) / v}
        F, B = _fb(params)
        return {"bubble": (p - 1) * (F + B) / v}

    return formula


def _zbh1_formula(params: Params) -> dict[str, Any]:
    p, m = params["devices"], params["microbatches"]
    F, I, W = params["forward"], params["input_grad"], params["weight_grad"]
    out: dict[str, Any] = {"peak_memory": [min(p, m)] * p}
    if W <= min(F, I) and m >= p:
        out["makespan"] = m * (F + I + W) + (p - 1) * (F + I - W)
        out["bubble"] = (p - 1) * (F + I - W)
    return out


def _zbv_formula(params: Params) -> dict[str, Any]:
    p, m = params["devices"], params["microbatches"]
    F, I, W = params["forward"], params["input_grad"], params["weight_grad"]
    if not (F == I == W) or m < 2 * p - 1:
        return {}
    return {"makespan": (6 * m + p - 1) * F, "bubble": (p - 1) * F, "bubble_span": 0, "peak_memory": [2 * p] * p}


def _chimera_formula(params: Params) -> dict[str, Any]:
    D, m = params["devices"], params["microbatches"]
    F, B = _fb(params)
    if D % 2 or m % D:
        return {}
    k = m // D
    return {"bubble": k * (D - 2) * max(F, B), "peak_memory": [D // 2 + 1 + min(d, D - 1 - d) for d in range(D)]}


def _dualpipe_formula(v_shape: bool) -> Callable[[Params], dict[str, Any]]:
    def formula(params: Params) -> dict[str, Any]:
        F, B, W, FB = params["forward"], params["backward"], params["weight_grad"], params["overlap"]
        if v_shape:
            p, m = params["devices"], params["microbatches"]
            half, per_phase, ranks = p, m, p
            peaks = [2 * p] * (p - 1) + [2 * p + 1]
        else:
            PP, chunks = params["devices"], params["microbatches"]
            half, per_phase, ranks = PP // 2, chunks // 2, PP
            peaks = [PP + (1 if r in (PP // 2 - 1, PP // 2) else 0) for r in range(PP)]
        out: dict[str, Any] = {"peak_memory": peaks}
        if not (B == 2 * F and W == F and max(F, B) <= FB <= F + B):
            return out  # the README's bubble assumes B = 2F, W = F (and an overlap no longer than F + B)
        bubble = (half - 1) * (FB + B - 3 * W)
        out["bubble"] = bubble
        if FB == F + B:
            out["makespan"] = 2 * per_phase * (F + B) + bubble
            out["bubble_per_device"] = [bubble] * ranks
        return out

    return formula


SCHEDULES: dict[str, ScheduleSpec] = {}

#: Seconds V-Half and V-Min spend on their candidates (all of them up to about 8 devices and 32
#: micro-batches; the first that fits at least): solve tries every registered schedule unbounded.
_V_CANDIDATES_S = 3.0


#: The parameters of the zero-bubble schedules (split backwards), with their defaults.
_ZB_DEFAULTS = {"devices": 4, "microbatches": 8, "forward": 1, "input_grad": 1, "weight_grad": 1}


def _register(spec: ScheduleSpec) -> None:
    SCHEDULES[spec.name] = spec


_register(ScheduleSpec(
    name="gpipe", title="GPipe",
    defaults={"devices": 4, "microbatches": 8, "forward": 1, "backward": 2},
    build=lambda q: vshape(q["devices"], q["microbatches"], forward=q["forward"], backward=q["backward"]),
    generate=lambda pr, q: _gpipe(pr),
    formula=_classic_formula("gpipe"),
    reference="Huang et al., GPipe (2019)",
    formula_text={"makespan": "(m+p-1)(F+B)", "bubble": "(p-1)(F+B)", "peak_memory": "m on every device"},
))
_register(ScheduleSpec(
    name="1f1b", title="1F1B",
    defaults={"devices": 4, "microbatches": 8, "forward": 1, "backward": 2},
    build=lambda q: vshape(q["devices"], q["microbatches"], forward=q["forward"], backward=q["backward"]),
    generate=lambda pr, q: _one_f_one_b(pr),
    formula=_classic_formula("1f1b"),
    reference="Narayanan et al., PipeDream-Flush (2021); Fan et al., DAPPLE (2021)",
    formula_text={"makespan": "(m+p-1)(F+B)", "bubble": "(p-1)(F+B)", "peak_memory": "min(p-r, m) on device r"},
))
_register(ScheduleSpec(
    name="interleaved", title="interleaved 1F1B (Megatron)",
    defaults={"devices": 4, "chunks": 2, "microbatches": 8, "forward": 1, "backward": 2, "group_size": None},
    build=lambda q: stages.interleaved(q["devices"], q["chunks"], q["microbatches"], forward=q["forward"],
                                       backward=q["backward"]),
    generate=lambda pr, q: _interleaved_1f1b(pr, group_size=q["group_size"]),
    formula=_interleaved_formula(False),
    time_scale=lambda q: q["chunks"],
    reference="Narayanan et al., Megatron-LM interleaved schedule (2021)",
    formula_text={"bubble": "(p-1)(F+B)/v"},
))
_register(ScheduleSpec(
    name="interleaved-zb", title="interleaved zero bubble (ZB1P)",
    defaults={"devices": 4, "chunks": 2, "microbatches": 8, "forward": 1, "input_grad": 1, "weight_grad": 1,
              "group_size": None},
    build=lambda q: stages.interleaved(q["devices"], q["chunks"], q["microbatches"], forward=q["forward"],
                                       backward=q["input_grad"] + q["weight_grad"], split_backward=True,
                                       input_grad=q["input_grad"], weight_grad=q["weight_grad"]),
    generate=lambda pr, q: _interleaved_zb(pr, group_size=q["group_size"]),
    formula=_interleaved_formula(True),
    time_scale=lambda q: q["chunks"],
    reference="Qi et al., Zero Bubble Pipeline Parallelism (2024); PyTorch ScheduleInterleavedZeroBubble",
    formula_text={"bubble": "(p-1)(F+I-W)/v"},
))
_register(ScheduleSpec(
    name="zb-h1", title="ZB-H1 (ZB1P)",
    defaults=dict(_ZB_DEFAULTS),
    build=lambda q: stages.zero_bubble(q["devices"], q["microbatches"], forward=q["forward"],
                                       input_grad=q["input_grad"], weight_grad=q["weight_grad"]),
    generate=lambda pr, q: _zb_h1(pr),
    formula=_zbh1_formula,
    reference="Qi et al., Zero Bubble Pipeline Parallelism (2024)",
    formula_text={"makespan": "m(F+I+W)+(p-1)(F+I-W)", "bubble": "(p-1)(F+I-W)", "peak_memory": "min(p, m)"},
))
def _v_chunks(q: Params) -> Problem:
    """The V placement of the zero-bubble V schedules (ZB-V, V-Half, V-Min): two chunks per device, split backward."""
    return stages.vshape_chunks(q["devices"], q["microbatches"], forward=q["forward"], input_grad=q["input_grad"],
                                weight_grad=q["weight_grad"])


_register(ScheduleSpec(
    name="zb-v", title="ZB-V",
    defaults=dict(_ZB_DEFAULTS),
    build=_v_chunks,
    generate=lambda pr, q: _zb_v(pr),
    formula=_zbv_formula,
    reference="Qi et al., Pipeline Parallelism with Controllable Memory (2024)",
    formula_text={"makespan": "(6m+p-1)F", "bubble": "(p-1)F", "bubble_span": "0", "peak_memory": "2p"},
))
for _name, _title, _capped, _cap in (("v-half", "V-Half", _v_half, "p+2"),
                                      ("v-min", "V-Min", _v_min, "2 ceil((p+2)/3)")):
    _register(ScheduleSpec(
        name=_name, title=_title,
        defaults=dict(_ZB_DEFAULTS),
        build=_v_chunks,
        generate=lambda pr, q, capped=_capped: capped(pr, time_limit_s=_V_CANDIDATES_S),
        formula=lambda q: {},
        reference=f"Qi et al., Pipeline Parallelism with Controllable Memory (2024), {_title}; capped V greedy, "
                  f"cap {_cap}",
    ))
del _name, _title, _capped, _cap
_register(ScheduleSpec(
    name="chimera", title="Chimera",
    defaults={"devices": 4, "microbatches": 4, "forward": 1, "backward": 2},
    build=lambda q: stages.chimera(q["devices"], q["microbatches"], forward=q["forward"], backward=q["backward"]),
    generate=lambda pr, q: _chimera_schedule(pr),
    formula=_chimera_formula,
    reference="Li and Hoefler, Chimera (SC 2021)",
    formula_text={"bubble": "(m/D)(D-2)max(F,B)", "peak_memory": "D/2+1+min(d, D-1-d)"},
))
_register(ScheduleSpec(
    name="dualpipe", title="DualPipe",
    defaults={"devices": 8, "microbatches": 20, "forward": 1, "backward": 2, "weight_grad": 1, "overlap": 3},
    build=lambda q: stages.dualpipe(q["devices"], q["microbatches"], forward=q["forward"], backward=q["backward"],
                                    weight_grad=q["weight_grad"], overlap=q["overlap"]),
    generate=lambda pr, q: _dualpipe_schedule(pr),
    formula=_dualpipe_formula(False),
    reference="DeepSeek-AI, DeepSeek-V3 technical report (2024), DualPipe",
    formula_text={"makespan": "chunks(F+B)+bubble", "bubble": "(PP/2-1)(F&B+B-3W)", "bubble_per_device": "(PP/2-1)(F&B+B-3W)", "peak_memory": "PP, PP+1 on the middle two"},
))
_register(ScheduleSpec(
    name="dualpipev", title="DualPipeV",
    defaults={"devices": 4, "microbatches": 10, "forward": 1, "backward": 2, "weight_grad": 1, "overlap": 3},
    build=lambda q: stages.dualpipev(q["devices"], q["microbatches"], forward=q["forward"], backward=q["backward"],
                                     weight_grad=q["weight_grad"], overlap=q["overlap"]),
    generate=lambda pr, q: _dualpipev_schedule(pr),
    formula=_dualpipe_formula(True),
    reference="DeepSeek-AI DualPipe repository (DualPipeV); PyTorch ScheduleDualPipeV",
    formula_text={"makespan": "2m(F+B)+bubble", "bubble": "(p-1)(F&B+B-3W)", "bubble_per_device": "(p-1)(F&B+B-3W)", "peak_memory": "2p, 2p+1 on the last"},
))


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
