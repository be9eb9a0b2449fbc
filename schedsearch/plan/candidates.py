"""The planner's candidates: one schedule family at one setting, whether it applies, and its integer problem.

:func:`candidates` lists every candidate of a pipeline's allowed families,
``_why_not`` says why one cannot be planned (its shape: the stage count, the
split-backward times, the ranks and micro-batches, a zero time, an F&B pair
shorter than its members), ``_memory_need`` what its neediest rank must hold
at once in any plan, and :func:`build_problem` its integer problem (the
times from :mod:`schedsearch.plan.times`). What a runtime can run is the
family record's answer (:meth:`~schedsearch.handcrafted.families.Family.runtime_gap`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from schedsearch.handcrafted.families import SCHEDULES, Family, family as family_record
from schedsearch.plan.pipeline import Pipeline, Stage
from schedsearch.problem import Problem
from schedsearch.plan.times import candidate_times, rank_pipelines
from schedsearch.schedule import Schedule
from schedsearch.units import Units

__all__ = ["Candidate", "build_problem", "candidates", "runtime_gap"]


@attrs.frozen(kw_only=True)
class Candidate:
    """One schedule family at one setting: ``chunks`` stages per rank, split backward or not, F&B pairs or not.

    Examples
    --------
    >>> from schedsearch.plan.planner import Candidate
    >>> Candidate(family="interleaved", chunks=2, split_backward=True).label
    'interleaved ZB v=2'
    >>> Candidate(family="dualpipe", chunks=1, split_backward=True, overlap=True).num_stages(4)
    4
    """

    family: str
    chunks: int = 1
    split_backward: bool = False
    overlap: bool = False

    @property
    def record(self) -> Family:
        """The family's record (:mod:`schedsearch.handcrafted.families`)."""
        return family_record(self.family)

    @property
    def label(self) -> str:
        return self.record.label(self.chunks, self.split_backward) + (" (F&B)" if self.overlap else "")

    @property
    def layout(self) -> str:
        """The stage-to-rank layout: ``"loop"`` or ``"v"`` (torch's styles), ``"bidirectional"`` (two pipelines)."""
        return self.record.layout

    def num_stages(self, num_ranks: int) -> int:
        return num_ranks * self.chunks

    def handcrafted_name(self) -> str | None:
        """The published schedule of the same family and backward, or None."""
        variant = next((v for v in self.record.variants if v.split_backward == self.split_backward), None)
        return variant.name if variant is not None and variant.schedule is not None else None


def runtime_gap(candidate: Candidate, runtime: str) -> str:
    """Why ``runtime`` (a key of :data:`RUNTIMES`) cannot execute plans of ``candidate``, in a user's terms; "" when it can.

    The family record answers it (:meth:`~schedsearch.handcrafted.families.Family.runtime_gap`).

    Examples
    --------
    >>> from schedsearch.plan.planner import Candidate, runtime_gap
    >>> runtime_gap(Candidate(family="dualpipe", split_backward=True), "torch")
    "needs two copies of every stage's parameters; torch's CSV runtime holds one"
    >>> runtime_gap(Candidate(family="zb-v", chunks=2, split_backward=True), "torch")
    ''
    """
    return candidate.record.runtime_gap(runtime)


def candidates(pipeline: Pipeline) -> list[Candidate]:
    """Every candidate of the pipeline's allowed families, in table order: each family at its own stage
    counts per rank and, for a family that runs any count (interleaved), also at the count of stages a fixed
    description gives (40 stages on 8 ranks: v=5)."""
    out: list[Candidate] = []
    overlap = pipeline.fb_overlap_ms is not None
    given, spare = divmod(len(pipeline.stages), pipeline.num_ranks)
    for key in pipeline.families:
        fam = family_record(key)
        counts = list(fam.chunks)
        if pipeline.partition == "fixed" and not spare and given not in counts and fam.any_chunks \
                and fam.runs_chunks(given):
            counts.append(given)
        out += [Candidate(family=key, chunks=v, split_backward=variant.split_backward, overlap=overlap and fam.overlap)
                for v in counts for variant in fam.variants]
    return out


def _why_not(pipeline: Pipeline, candidate: Candidate, stages: Sequence[Stage] | None) -> str:
    """Why ``candidate`` cannot be planned (empty when it can be tried)."""
    P, m = pipeline.num_ranks, pipeline.num_microbatches
    n = candidate.num_stages(P)
    if stages is None:
        what = "layers" if pipeline.partition == "dp" else "stages"
        return (f"needs {n} stages, the description gives {len(pipeline.stages)} {what}: give the layers per entry "
                f"(layers_per_entry, --layers-per-entry) to plan it in layers")
    if candidate.split_backward and not all(s.has_split for s in stages):
        return "needs input_grad_ms and weight_grad_ms for every stage (split backward)"
    fields = ("forward_ms", "input_grad_ms", "weight_grad_ms") if candidate.split_backward else ("forward_ms",)
    if candidate.record.full_backward or not candidate.split_backward:
        fields += ("backward_ms",)
    for k, s in enumerate(stages):
        zero = next((f for f in fields if getattr(s, f) == 0), None)
        if zero is not None:
            return (f"stage {k} ({s.name}) has {zero} = 0: the schedule model's blocks last at least one time "
                    f"unit, so a zero time cannot be kept (give it a positive time)")
    why = candidate.record.requires(P, m)
    if why:
        return why
    if candidate.overlap:
        if pipeline.fb_overlap_ms is None:
            return "needs fb_overlap_ms (the time of an overlapped forward-and-backward pair) for its F&B pairs"
        longest = max(max(t for t in (s.forward_ms, s.input_grad_ms, s.weight_grad_ms) if t is not None)
                      for s in stages)
        if pipeline.fb_overlap_ms < longest:
            return (f"fb_overlap_ms {pipeline.fb_overlap_ms:g} is shorter than the longest forward or gradient "
                    f"block of its stages ({longest:g} ms): an overlapped pair lasts at least its longest member")
    return ""


def _memory_need(pipeline: Pipeline, candidate: Candidate, stages: Sequence[Stage]) -> tuple[int, int, int, int]:
    """(rank, its parameter bytes, activation bytes it must hold at once, total) for the neediest rank."""
    pipes, _ = rank_pipelines(candidate, pipeline.num_ranks)
    worst = (0, 0, 0, -1)
    for r in range(pipeline.num_ranks):
        params = sum(stages[s].parameter_bytes for pipe in pipes for s, d in enumerate(pipe) if d == r)
        acts = max(sum(stages[s].activation_bytes for s, d in enumerate(pipe) if d == r) for pipe in pipes)
        if params + acts > worst[3]:
            worst = (r, params, acts, params + acts)
    return worst


def build_problem(pipeline: Pipeline, candidate: Candidate, stages: Sequence[Stage], units: Units, *,
                  relaxed_memory: bool = False) -> Problem:
    """The integer problem of one candidate: durations in ``units`` time units, memory in memory units.

    Its times are the candidate's (:func:`~schedsearch.plan.times.candidate_times`,
    which holds them in exact ms and this problem beside them): each
    duration is its time rounded to whole units. Activations are allocated
    by the forward and freed when the backward (or the weight gradient)
    ends; each rank starts with its parameters and may hold at most the
    budget. Transfers between stages on different ranks run on the channel
    between the two ranks, which takes ``pipeline.p2p``'s time for the
    sending stage's bytes. Memory amounts are rounded up and the budget down
    (a plan that fits in units fits in bytes); with ``relaxed_memory`` the
    other way round (amounts down, budget up: every plan that fits in bytes
    fits in units, the problem whose bounds hold for the bytes).
    """
    times = candidate_times(pipeline, candidate, stages, units)
    return times.relaxed_problem() if relaxed_memory and not times.memory_exact else times.problem


def _handcrafted(candidate: Candidate, problem: Problem) -> Schedule:
    spec = SCHEDULES[candidate.record.variant(candidate.split_backward).schedule]
    return spec.generate(problem, dict(spec.defaults))

