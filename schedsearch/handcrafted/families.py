"""The schedule families: one record per family, the only table that names them.

A :class:`Family` holds every fact the library keeps about one family of
pipeline schedules:

* its name on the command line and in a pipeline description (``key``)
  and its display name (``title``);
* its layout: ``"loop"`` (rank ``r`` holds stages ``r, r+P, ...``),
  ``"v"`` (down the ranks and back up, two stages per rank) or
  ``"bidirectional"`` (two opposite pipelines: two copies of every
  stage's parameters);
* its published schedules (:class:`ScheduleSpec`: placement, handcrafted
  generator, closed forms), which :func:`~schedsearch.handcrafted.reproduce`
  runs and :func:`~schedsearch.search.portfolio.solve` tries as constructions;
* how :func:`schedsearch.plan` offers it: the stages per rank it tries,
  its backward styles (:class:`Variant`, with the plan table's name and the
  published schedule of the same style), whether it pairs a forward with a
  backward (``F&B``) and what it needs of the ranks and micro-batches;
* torch and torchtitan: the stage style torch's runtime builds for it, the
  ``pipeline_parallel_schedule`` name that makes torchtitan place its
  stages, torch's own schedule class per variant, and whether a runtime
  of :data:`RUNTIMES` can run its plans (:meth:`Family.runtime_gap`: why
  not, in a user's words).

Everything that names a family reads it from here: the planner's
candidates and problems (:mod:`schedsearch.plan.planner`), the allowed
families of a description (:data:`schedsearch.plan.pipeline.FAMILIES`), the
torchtitan settings (:mod:`schedsearch.plan.torchtitan`), the
reproductions and the command line. Adding a family is adding a record to
this module.

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

import functools
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from schedsearch.errors import InvalidPipelineError, InvalidProblemError
from schedsearch.handcrafted.chimera import chimera as _chimera_schedule
from schedsearch.handcrafted.classic import gpipe as _gpipe, interleaved_1f1b as _interleaved_1f1b
from schedsearch.handcrafted.classic import one_f_one_b as _one_f_one_b
from schedsearch.handcrafted.dualpipe import dualpipe as _dualpipe_schedule, dualpipev as _dualpipev_schedule
from schedsearch.handcrafted.v_capped import V_TASKS_PER_S, v_half as _v_half, v_min as _v_min
from schedsearch.handcrafted.zero_bubble import interleaved_zero_bubble as _interleaved_zb
from schedsearch.handcrafted.zero_bubble import zb_h1 as _zb_h1, zb_v as _zb_v
from schedsearch.placements import stages
from schedsearch.placements.chains import vshape
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["ALL_FAMILIES", "LAYOUTS", "RUNTIMES", "SCHEDULES", "Family", "ScheduleSpec", "Variant", "check_runtime", "family", "family_of_schedule",
           "planner_families"]

Params = Mapping[str, Any]

#: The layouts of a family: name -> how its stages sit on the ranks.
LAYOUTS = {
    "loop": "rank r holds stages r, r+P, ... (torch's 'loop' style)",
    "v": "two stages per rank, down the ranks and back up (torch's 'v' style)",
    "bidirectional": "two opposite pipelines: every rank holds a stage of each, two copies of the parameters",
}


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
    #: the placement the command line's ``search --placement NAME`` builds,
    #: ``builder(num_devices, num_microbatches, **durations and memory)``; None: none under this name
    placement: Callable[..., Problem] | None = None
    #: the generator under a limit on its work, for a construction that tries candidates (V-Half, V-Min):
    #: ``generate_within(problem, params, work_limit)`` with ``work_limit`` in task instances counted over
    #: the candidates tried (at most its own default; None: the default); None: ``generate`` is linear and
    #: takes no limit
    generate_within: Callable[[Problem, Params, int | None], Schedule] | None = None


@functools.wraps(stages.interleaved)  # its signature is interleaved's: the command line reads its flags from it
def _interleaved_placement(num_devices: int, num_microbatches: int, *, num_chunks: int = 2, **kwargs: Any) -> Problem:
    return stages.interleaved(num_devices, num_chunks, num_microbatches, **kwargs)


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

#: Work V-Half and V-Min spend on their candidates, in task instances counted over the candidates tried
#: (3 deterministic seconds at :data:`V_TASKS_PER_S`: all of them up to about 8 devices and 32
#: micro-batches; the first that fits at least). A count, not the wall clock, so a published schedule is
#: the same on any machine and load.
_V_CANDIDATES_WORK = int(3.0 * V_TASKS_PER_S)


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
    name="1f1b", title="1F1B", placement=vshape,
    defaults={"devices": 4, "microbatches": 8, "forward": 1, "backward": 2},
    build=lambda q: vshape(q["devices"], q["microbatches"], forward=q["forward"], backward=q["backward"]),
    generate=lambda pr, q: _one_f_one_b(pr),
    formula=_classic_formula("1f1b"),
    reference="Narayanan et al., PipeDream-Flush (2021); Fan et al., DAPPLE (2021)",
    formula_text={"makespan": "(m+p-1)(F+B)", "bubble": "(p-1)(F+B)", "peak_memory": "min(p-r, m) on device r"},
))
_register(ScheduleSpec(
    name="interleaved", title="interleaved 1F1B (Megatron)", placement=_interleaved_placement,
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
    name="zb-h1", title="ZB-H1 (ZB1P)", placement=stages.zero_bubble,
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
    name="zb-v", title="ZB-V", placement=stages.vshape_chunks,
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
        generate=lambda pr, q, capped=_capped: capped(pr, work_limit=_V_CANDIDATES_WORK),
        generate_within=lambda pr, q, work, capped=_capped: capped(
            pr, work_limit=_V_CANDIDATES_WORK if work is None else min(_V_CANDIDATES_WORK, max(0, work))),
        formula=lambda q: {},
        reference=f"Qi et al., Pipeline Parallelism with Controllable Memory (2024), {_title}; capped V greedy, "
                  f"cap {_cap}",
    ))
del _name, _title, _capped, _cap
_register(ScheduleSpec(
    name="chimera", title="Chimera", placement=stages.chimera,
    defaults={"devices": 4, "microbatches": 4, "forward": 1, "backward": 2},
    build=lambda q: stages.chimera(q["devices"], q["microbatches"], forward=q["forward"], backward=q["backward"]),
    generate=lambda pr, q: _chimera_schedule(pr),
    formula=_chimera_formula,
    reference="Li and Hoefler, Chimera (SC 2021)",
    formula_text={"bubble": "(m/D)(D-2)max(F,B)", "peak_memory": "D/2+1+min(d, D-1-d)"},
))
_register(ScheduleSpec(
    name="dualpipe", title="DualPipe", placement=stages.dualpipe,
    defaults={"devices": 8, "microbatches": 20, "forward": 1, "backward": 2, "weight_grad": 1, "overlap": 3},
    build=lambda q: stages.dualpipe(q["devices"], q["microbatches"], forward=q["forward"], backward=q["backward"],
                                    weight_grad=q["weight_grad"], overlap=q["overlap"]),
    generate=lambda pr, q: _dualpipe_schedule(pr),
    formula=_dualpipe_formula(False),
    reference="DeepSeek-AI, DeepSeek-V3 technical report (2024), DualPipe",
    formula_text={"makespan": "chunks(F+B)+bubble", "bubble": "(PP/2-1)(F&B+B-3W)", "bubble_per_device": "(PP/2-1)(F&B+B-3W)", "peak_memory": "PP, PP+1 on the middle two"},
))
_register(ScheduleSpec(
    name="dualpipev", title="DualPipeV", placement=stages.dualpipev,
    defaults={"devices": 4, "microbatches": 10, "forward": 1, "backward": 2, "weight_grad": 1, "overlap": 3},
    build=lambda q: stages.dualpipev(q["devices"], q["microbatches"], forward=q["forward"], backward=q["backward"],
                                     weight_grad=q["weight_grad"], overlap=q["overlap"]),
    generate=lambda pr, q: _dualpipev_schedule(pr),
    formula=_dualpipe_formula(True),
    reference="DeepSeek-AI DualPipe repository (DualPipeV); PyTorch ScheduleDualPipeV",
    formula_text={"makespan": "2m(F+B)+bubble", "bubble": "(p-1)(F&B+B-3W)", "bubble_per_device": "(p-1)(F&B+B-3W)", "peak_memory": "2p, 2p+1 on the last"},
))




@attrs.frozen(kw_only=True)
class Variant:
    """One backward style of a family: its name in the plan table and its published schedule.

    ``schedule`` is the key of the published schedule of this style in
    :data:`SCHEDULES` (None: there is none, e.g. a V layout with a whole
    backward), ``torch_schedule`` the name of torch's own schedule class of
    this style as ``torch.distributed.pipelining.schedules.get_schedule_class``
    (and torchtitan's ``pipeline_parallel_schedule``) takes it (None: torch
    has none).
    """

    name: str
    split_backward: bool
    schedule: str | None = None
    torch_schedule: str | None = None


def _anything(num_ranks: int, num_microbatches: int) -> str:
    return ""


@attrs.frozen(kw_only=True)
class Family:
    """A schedule family: every fact the library keeps about it (see the module docstring).

    Parameters
    ----------
    key:
        Its name on the command line and in a description's ``families``.
    title:
        Its display name.
    layout:
        A key of :data:`LAYOUTS`.
    schedules:
        Keys of its published schedules in :data:`SCHEDULES`.
    variants:
        Its backward styles, in the order the plan table lists them.
    planner:
        True when :func:`schedsearch.plan` offers it.
    chunks:
        The stages per rank the planner tries, in table order.
    any_chunks:
        It runs any number of stages per rank from 2 (interleaved): a
        model in layers also tries the counts at which its blocks split
        into equal stages (:meth:`runs_chunks`).
    full_backward:
        Its split-backward problems also hold a whole backward (``B``) per
        stage and micro-batch, run as its input and weight gradients
        together (DualPipe's ``F&B`` pairs overlap a forward with it).
    overlap:
        It pairs a forward with a backward (``F&B``) when the description
        gives ``fb_overlap_ms``.
    requires:
        ``requires(num_ranks, num_microbatches)``: why the planner cannot
        use it at these numbers, "" when it can.
    torchtitan_schedule:
        The ``pipeline_parallel_schedule`` name that makes torchtitan place
        its stages ``"v"``-style (torchtitan places every other name
        ``"loop"``-style); None for a loop family, which takes
        ``PipelineScheduleSingle`` or ``PipelineScheduleMulti`` by its
        stages per rank.
    torch_gap:
        Why torch's CSV runtime cannot run its plans, in a user's words;
        "" when it can.

    Examples
    --------
    >>> from schedsearch.handcrafted import family
    >>> fam = family("interleaved")
    >>> fam.chunks, [fam.label(3, v.split_backward) for v in fam.variants], fam.torch_style
    ((2, 3, 4), ['interleaved 1F1B v=3', 'interleaved ZB v=3'], 'loop')
    >>> family("dualpipe").torch_gap
    "needs two copies of every stage's parameters; torch's CSV runtime holds one"
    """

    key: str
    title: str
    layout: str
    schedules: tuple[str, ...]
    variants: tuple[Variant, ...]
    planner: bool = False
    chunks: tuple[int, ...] = (1,)
    any_chunks: bool = False
    full_backward: bool = False
    overlap: bool = False
    requires: Callable[[int, int], str] = _anything
    torchtitan_schedule: str | None = None
    torch_gap: str = ""

    @property
    def torch_style(self) -> str | None:
        """The stage style torch's runtime builds for it, ``"loop"`` or ``"v"``; None when torch has none."""
        return self.layout if self.layout in ("loop", "v") else None

    @property
    def two_pipelines(self) -> bool:
        """True when its ranks hold two opposite pipelines (two copies of the parameters)."""
        return self.layout == "bidirectional"

    def runs_chunks(self, chunks: int) -> bool:
        """Whether it runs ``chunks`` stages per rank.

        Examples
        --------
        >>> from schedsearch.handcrafted import family
        >>> family("interleaved").runs_chunks(10), family("interleaved").runs_chunks(1), family("zb-v").runs_chunks(4)
        (True, False, False)
        """
        return chunks in self.chunks or (self.any_chunks and chunks >= 2)

    def variant(self, split_backward: bool) -> Variant:
        """Its backward style with (True) or without (False) a split backward."""
        for v in self.variants:
            if v.split_backward == split_backward:
                return v
        raise InvalidProblemError(
            f"family {self.key!r} has no {'split' if split_backward else 'whole'} backward; its backward styles "
            f"are {[v.name for v in self.variants]}")

    def runtime_gap(self, runtime: str) -> str:
        """Why ``runtime`` (a key of :data:`RUNTIMES`) cannot execute this family's plans, in a user's words;
        "" when it can.

        Examples
        --------
        >>> from schedsearch.handcrafted import family
        >>> family("dualpipe").runtime_gap("torch")
        "needs two copies of every stage's parameters; torch's CSV runtime holds one"
        >>> family("dualpipe").runtime_gap("any"), family("zb-v").runtime_gap("torch")
        ('', '')
        """
        check_runtime(runtime)
        return self.torch_gap if runtime == "torch" else ""

    def label(self, chunks: int, split_backward: bool) -> str:
        """The plan table's name of the variant at ``chunks`` stages per rank (``v=`` when the family has several)."""
        name = self.variant(split_backward).name
        return f"{name} v={chunks}" if len(self.chunks) > 1 else name


#: The runtimes a plan can be made for: name -> what it is (:meth:`Family.runtime_gap` says which families each runs).
RUNTIMES = {
    "torch": "torch's CSV runtime (torch.distributed.pipelining, as torchtitan runs it)",
    "any": "no runtime in particular: the best plan of every family, whether a runtime can execute it or not",
}

def check_runtime(runtime: Any) -> None:
    """Raise :class:`~schedsearch.errors.InvalidPipelineError` unless ``runtime`` is a key of :data:`RUNTIMES`."""
    if not isinstance(runtime, str) or runtime not in RUNTIMES:
        raise InvalidPipelineError(f"plan: runtime must be one of {sorted(RUNTIMES)}, got {runtime!r}")


#: Every family, by key, in the order the planner lists them.
ALL_FAMILIES: dict[str, Family] = {}


def _add(fam: Family) -> None:
    ALL_FAMILIES[fam.key] = fam


def _even_ranks_and_microbatches(num_ranks: int, num_microbatches: int) -> str:
    if num_ranks % 2 or num_microbatches % 2:
        return (f"needs an even number of ranks and of micro-batches, got {num_ranks} ranks, "
                f"{num_microbatches} micro-batches")
    return ""


def _a_microbatch_per_stage(num_ranks: int, num_microbatches: int) -> str:
    if num_microbatches < 2 * num_ranks:
        return f"needs at least {2 * num_ranks} micro-batches (the number of stages), got {num_microbatches}"
    return ""


_TWO_COPIES = "needs two copies of every stage's parameters; torch's CSV runtime holds one"

_add(Family(
    key="1f1b", title="1F1B", layout="loop", schedules=("1f1b", "zb-h1"), planner=True, chunks=(1,),
    variants=(Variant(name="1F1B", split_backward=False, schedule="1f1b", torch_schedule="1F1B"),
              Variant(name="ZB-H1", split_backward=True, schedule="zb-h1")),
))
_add(Family(
    key="interleaved", title="interleaved", layout="loop", schedules=("interleaved", "interleaved-zb"), planner=True,
    chunks=(2, 3, 4), any_chunks=True,
    variants=(Variant(name="interleaved 1F1B", split_backward=False, schedule="interleaved",
                      torch_schedule="Interleaved1F1B"),
              Variant(name="interleaved ZB", split_backward=True, schedule="interleaved-zb",
                      torch_schedule="InterleavedZeroBubble")),
))
_add(Family(
    key="zb-v", title="ZB-V", layout="v", schedules=("zb-v", "v-half", "v-min"), planner=True, chunks=(2,),
    variants=(Variant(name="ZB-V", split_backward=True, schedule="zb-v", torch_schedule="ZBVZeroBubble"),
              Variant(name="V 1F1B", split_backward=False)),
    torchtitan_schedule="ZBVZeroBubble",
))
_add(Family(
    key="dualpipev", title="DualPipeV", layout="v", schedules=("dualpipev",), planner=True, chunks=(2,),
    variants=(Variant(name="DualPipeV", split_backward=True, schedule="dualpipev", torch_schedule="DualPipeV"),),
    full_backward=True, overlap=True, requires=_a_microbatch_per_stage, torchtitan_schedule="DualPipeV",
))
_add(Family(
    key="dualpipe", title="DualPipe", layout="bidirectional", schedules=("dualpipe",), planner=True, chunks=(1,),
    variants=(Variant(name="DualPipe", split_backward=True, schedule="dualpipe"),),
    full_backward=True, overlap=True, requires=_even_ranks_and_microbatches, torch_gap=_TWO_COPIES,
))
_add(Family(
    key="gpipe", title="GPipe", layout="loop", schedules=("gpipe",),
    variants=(Variant(name="GPipe", split_backward=False, schedule="gpipe", torch_schedule="GPipe"),),
))
_add(Family(
    key="chimera", title="Chimera", layout="bidirectional", schedules=("chimera",),
    variants=(Variant(name="Chimera", split_backward=False, schedule="chimera"),), torch_gap=_TWO_COPIES,
))


def family(key: str) -> Family:
    """The family named ``key``.

    Examples
    --------
    >>> from schedsearch.handcrafted.families import family
    >>> fam = family("zb-v")
    >>> fam.layout, fam.label(2, True), fam.torchtitan_schedule, fam.schedules
    ('v', 'ZB-V', 'ZBVZeroBubble', ('zb-v', 'v-half', 'v-min'))
    """
    fam = ALL_FAMILIES.get(key) if isinstance(key, str) else None
    if fam is None:
        raise InvalidProblemError(f"unknown schedule family {key!r}; choose one of {list(ALL_FAMILIES)}")
    return fam


def family_of_schedule(name: str) -> Family:
    """The family a published schedule (a key of :data:`SCHEDULES`) belongs to."""
    for fam in ALL_FAMILIES.values():
        if name in fam.schedules:
            return fam
    raise InvalidProblemError(f"unknown schedule {name!r}; choose one of {list(SCHEDULES)}")


def planner_families() -> tuple[str, ...]:
    """The keys of the families :func:`schedsearch.plan` offers, in its table's order.

    Examples
    --------
    >>> from schedsearch.handcrafted.families import planner_families
    >>> planner_families()
    ('1f1b', 'interleaved', 'zb-v', 'dualpipev', 'dualpipe')
    """
    return tuple(key for key, fam in ALL_FAMILIES.items() if fam.planner)
