"""The configuration chosen with the schedule: the space, the bounds and the result of
:func:`~schedsearch.plan.planner.plan_layers` on a :class:`~schedsearch.plan.layers.LayerModel`.

For a model in layers and a pipeline degree, the planner searches the
configurations torchtitan lets one set (:class:`~schedsearch.plan.layers.Configuration`)
together with the schedule families that run them:

* **shapes**: every stage count and layout of the planner's families that
  torch runs (``"loop"`` with ``v`` = 1 to 4 stages per rank, ``"v"`` with
  two), where the model has a layer per stage;
* **micro-batch sizes**: every size that divides the global batch and has a
  cost (:meth:`~schedsearch.plan.layers.LayerModel.sizes`);
* **recomputation**: what torchtitan runs (none, full); with
  ``runtime="any"`` also every ``k``-th block for ``k`` in
  :data:`SELECTIVE_EVERY` (torchtitan 0.2's selective option);
* **splits**: every contiguous split when there are at most ``max_splits``
  of them (a small model's space is searched whole); otherwise the splits the
  peers propose (:mod:`schedsearch.plan.peers`: torchtitan's default for the
  shape, torch's ``auto_partition`` for each schedule type of the shape, the
  AdaPipe-style DP for one stage per rank) and the library's own DP
  (:func:`balanced_split`: the least largest rank time, recomputation
  included, among the splits whose every rank can hold its parameters and
  one micro-batch's activations).

Each configuration x family variant that torchtitan runs with that
recomputation (a split backward only without any) is a candidate of the
planner's own machinery (:func:`~schedsearch.plan.planner.plan`'s
preparation, executors and typed outcomes). Before any search every
candidate gets its lower bound in ms (the larger of its integer problem's
:func:`~schedsearch.bounds.analytic_lower_bound` and
:func:`~schedsearch.bounds.memory_area_bounds`, read in real ms as
:func:`~schedsearch.plan.times.real_bound_ms` reads one); candidates are
searched in increasing order of that bound, ``parallel`` at a time within
the whole call's time limit, and a candidate whose bound is not below the
best plan found so far is **pruned** (not searched: no plan of it can be
better; before its search a candidate's bound is also raised by
:func:`~schedsearch.bounds.memory_bounds` and checked again); one whose turn does not come within the
limit is **not reached**. Candidates that cannot run
(their shape, or over the memory budget in any plan) are **skipped** with
their reason. The search bound of the result is the least of the searched
candidates' bounds and the analytic bounds of the pruned and not reached ones: no plan of any
configuration in the space is faster. Whether the space is the whole
configuration space (every split) or the proposed splits is said in
:attr:`LayerPlanResult.covered`.
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from schedsearch.deadline import checkpoint, unstopped
from schedsearch.errors import SchedSearchError
from schedsearch.handcrafted.families import family, planner_families
from schedsearch.plan.candidates import Candidate
from schedsearch.plan.layers import (DESCRIPTION_SPLIT, EMBEDDING_MODULES, HEAD_MODULES, Configuration, LayerModel,
                                     Recomputation)
from schedsearch.plan.table import PlanResult, PlanRow

__all__ = ["SELECTIVE_EVERY", "MAX_SPLITS", "Decision", "LayerCandidate", "LayerPlanResult", "ModeSummary", "Breakdown",
           "balanced_split",
           "configurations", "least_bound_ms", "least_largest_share", "space_floor_ms"]

#: The ``k`` of the selective recomputation (every ``k``-th block) the search tries.
SELECTIVE_EVERY = (2, 4)
#: Up to this many contiguous splits of a shape, every one is searched (the whole space); above, the proposed ones.
MAX_SPLITS = 64


def _shapes(model: LayerModel, num_ranks: int, families: Sequence[str] | None = None) -> list[tuple[str, int]]:
    """(layout, stages per rank) of the planner's torch-run families (of ``families``, when given), with a layer per
    stage: each family's own stage counts and, for a family that runs any count (interleaved), every count at
    which the transformer blocks split into equal stages (the more stages per rank, the smaller the bubble).

    Examples
    --------
    >>> from schedsearch.plan.layers import LayerModel
    >>> from schedsearch.plan.autoplan import _shapes
    >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    >>> model = LayerModel(global_batch=8, num_ranks=4, layers=[{"name": "block", "repeat": 40, "measured": at1}])
    >>> _shapes(model, 4)
    [('loop', 1), ('loop', 2), ('loop', 3), ('loop', 4), ('loop', 5), ('loop', 10), ('v', 2)]
    """
    blocks = model.kinds().count("layer")
    out = []
    for key in planner_families():
        if families is not None and key not in families:
            continue
        fam = family(key)
        if fam.torch_style not in ("loop", "v"):
            continue
        even = [v for v in range(max(fam.chunks) + 1, blocks // num_ranks + 1)
                if fam.any_chunks and blocks % (num_ranks * v) == 0]
        for v in (*fam.chunks, *even):
            if (fam.torch_style, v) not in out and num_ranks * v <= model.num_layers:
                out.append((fam.torch_style, v))
    return out


def _recomputations(runtime: str = "torch", model: LayerModel | None = None) -> list[Recomputation]:
    """The recomputations searched: for the ``"torch"`` runtime those the torchtitan release the files are
    written for runs (:data:`~schedsearch.plan.torchtitan.TORCHTITAN_VERSION`: none, full and its per-operator
    selective mode, ``"op"``, where ``model``'s blocks give its figures), for ``"any"`` also every ``k``-th
    block."""
    from schedsearch.plan.torchtitan import TORCHTITAN_VERSION

    every = [Recomputation(mode="none"), Recomputation(mode="full")]
    if model is None or model.runs_op():
        every.append(Recomputation(mode="op"))
    every += [Recomputation(mode="selective", every=k) for k in SELECTIVE_EVERY]
    return [r for r in every if runtime != "torch" or TORCHTITAN_VERSION in r.torchtitan_releases]


def _stage_ranks(num_stages: int, num_ranks: int, layout: str) -> list[int]:
    """The rank of each stage."""
    if layout == "v":
        return [s if s < num_ranks else 2 * num_ranks - 1 - s for s in range(num_stages)]
    return [s % num_ranks for s in range(num_stages)]


def balanced_split(model: LayerModel, *, num_ranks: int, layout: str, stages_per_rank: int, microbatch_size: int,
                   recomputation: Recomputation) -> list[list[int]] | None:
    """The library's own split: the least largest rank time (one stage per rank) or stage time (more), among
    the splits whose every rank can hold its parameters and one micro-batch's activations at once (None: no
    split can).

    A layer's time is its forward and backward at ``microbatch_size`` plus
    its forward again when ``recomputation`` recomputes every block (mode
    ``"full"``; under ``"op"`` the part of it that mode recomputes, and its
    bytes held; for ``"selective"`` the split of ``"none"`` is balanced on
    the times without recomputation, as which blocks are recomputed depends
    on the split). A rank's time sums its stages'. The DP runs over the
    stages in order and keeps, per end layer, the least largest time so far
    (exact for one stage per rank). With several stages per rank the
    pipeline runs at the pace of its longest stage, and equal rank times
    are also reached by very unequal stages: the DP then keeps the least
    largest stage time, the largest rank time breaking ties.

    Examples
    --------
    >>> from schedsearch.plan.layers import LayerModel, Recomputation
    >>> from schedsearch.plan.autoplan import balanced_split
    >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    >>> model = LayerModel(global_batch=4, num_ranks=2, layers=[{"name": "block", "repeat": 6, "measured": at1}])
    >>> balanced_split(model, num_ranks=2, layout="loop", stages_per_rank=1, microbatch_size=1,
    ...                recomputation=Recomputation(mode="full"))
    [[0, 1, 2], [3, 4, 5]]
    """
    figures = model.at(microbatch_size)
    kinds = model.kinds()
    mode = recomputation.mode
    every = [kind == "layer" and recomputation.every_block and (mode != "op" or model.runs_op()) for kind in kinds]
    load = [m.forward_ms + m.backward_ms + (m.again_ms(mode) if every[i] else 0.0) for i, m in enumerate(figures)]
    held = [m.held_when(mode) if every[i] else m.activation_bytes for i, m in enumerate(figures)]
    params = [layer.parameter_bytes for layer in model.expanded]
    n, S = len(load), num_ranks * stages_per_rank
    rank_of = _stage_ranks(S, num_ranks, layout)
    budget = model.memory_budget_bytes
    prefix = [0.0]
    for x in load:
        prefix.append(prefix[-1] + x)
    # states after stage s: end layer -> ((largest rank time, largest stage time), per-rank (time, params, acts)
    # totals, cuts); kept: the least by rank time then stage time (one stage per rank), the other way round (more)
    order = (lambda v: v) if stages_per_rank == 1 else (lambda v: v[::-1])
    states: dict[int, tuple[tuple[float, float], tuple, list[int]]] = {
        0: ((0.0, 0.0), ((0.0, 0, 0),) * num_ranks, [0])}
    for s in range(S):
        following: dict[int, tuple[tuple[float, float], tuple, list[int]]] = {}
        r = rank_of[s]
        for start, ((worst, longest), totals, cuts) in states.items():
            checkpoint(n - start)  # a hard stop of the call ends the DP here (one unit per split tried)
            for end in range(start + 1, n - (S - 1 - s) + 1):
                t, p, a = totals[r]
                stage = prefix[end] - prefix[start]
                t += stage
                p += sum(params[start:end])
                a += sum(held[start:end])
                if budget is not None and p + a > budget:
                    continue
                value = (max(worst, t), max(longest, stage))
                if end not in following or order(value) < order(following[end][0]):
                    new = list(totals)
                    new[r] = (t, p, a)
                    following[end] = (value, tuple(new), cuts + [end])
        states = following
    if n not in states:
        return None
    cuts = states[n][2]
    return [list(range(cuts[k], cuts[k + 1])) for k in range(S)]


def parameters_over_budget(model: LayerModel, config: Configuration) -> str | None:
    """Why no plan of ``config`` fits: a rank whose stages' parameters alone exceed the memory budget (what
    it holds for the whole step), or None when every rank's do fit.

    Examples
    --------
    >>> from schedsearch.plan.layers import Configuration, LayerModel, Recomputation
    >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    >>> model = LayerModel(global_batch=2, num_ranks=2, memory_budget_bytes="2 GiB", layers=[
    ...     {"name": "block", "repeat": 4, "parameter_bytes": "1 GiB", "measured": at1}])
    >>> def config(split):
    ...     return Configuration(split=split, num_ranks=2, microbatch_size=1, num_microbatches=2,
    ...                          recomputation=Recomputation(mode="none"))
    >>> parameters_over_budget(model, config([[0, 1], [2, 3]])) is None
    True
    >>> print(parameters_over_budget(model, config([[0], [1, 2, 3]])))
    rank 1 holds 3 GiB of parameters (stage 1), above the memory budget per rank of 2 GiB
    """
    budget = model.memory_budget_bytes
    if budget is None:
        return None
    params = [layer.parameter_bytes for layer in model.expanded]
    held = [0] * config.num_ranks
    stages: list[list[int]] = [[] for _ in range(config.num_ranks)]
    for s, (group, r) in enumerate(zip(config.split, _stage_ranks(config.num_stages, config.num_ranks,
                                                                    config.layout))):
        held[r] += sum(params[i] for i in group)
        stages[r].append(s)
    for r, amount in enumerate(held):
        if amount > budget:
            named = ", ".join(str(s) for s in stages[r])
            return (f"rank {r} holds {amount / 2**30:.3g} GiB of parameters (stage{'s' if len(stages[r]) > 1 else ''} "
                    f"{named}), above the memory budget per rank of {budget / 2**30:.3g} GiB")
    return None


def _most_blocks_per_rank(model: LayerModel, num_ranks: int, stages_per_rank: int) -> int:
    """The most transformer blocks a rank can hold (every other stage one layer)."""
    return model.kinds().count("layer") - (num_ranks * stages_per_rank - stages_per_rank)


def _all_splits(n: int, num_stages: int) -> list[list[list[int]]] | None:
    if math.comb(n - 1, num_stages - 1) > MAX_SPLITS:
        return None
    out = []
    for cuts in itertools.combinations(range(1, n), num_stages - 1):
        edges = (0, *cuts, n)
        out.append([list(range(edges[k], edges[k + 1])) for k in range(num_stages)])
    return out


def configurations(model: LayerModel, num_ranks: int, *, runtime: str = "torch",
                   families: Sequence[str] | None = None,
                   proposals: Sequence[tuple[str, Sequence[Sequence[int]]]] = (),
                   ) -> tuple[list[tuple[Configuration, tuple[str, ...]]], bool]:
    """The configurations :func:`~schedsearch.plan.planner.plan_layers` searches for ``num_ranks`` ranks, each with what proposed its split,
    and whether they are every configuration of the space (every split of every shape). For the ``"torch"``
    runtime the recomputations are those torchtitan runs (none and full); ``"any"`` adds every ``k``-th block.
    ``families`` (default: all) limits the shapes to those of these families; ``proposals`` are more splits
    (each named by its origin), proposed for every shape with their number of stages.

    Examples
    --------
    >>> from schedsearch.plan.layers import LayerModel
    >>> from schedsearch.plan.autoplan import configurations
    >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    >>> model = LayerModel(global_batch=2, num_ranks=2, layers=[{"name": "block", "repeat": 4, "measured": at1}])
    >>> found, whole = configurations(model, 2)
    >>> whole, len(found), found[0][0].label(), found[0][1]
    (True, 10, '[1/3] on 2 ranks (loop, v=1), 2 x 1, no recomputation', ('every split',))
    """
    found, whole, _ = proposed_configurations(model, num_ranks, runtime=runtime, families=families,
                                              proposals=proposals)
    return found, whole


def proposed_configurations(model: LayerModel, num_ranks: int, *, runtime: str = "torch",
                            families: Sequence[str] | None = None,
                            proposals: Sequence[tuple[str, Sequence[Sequence[int]]]] = (),
                            ) -> tuple[list[tuple[Configuration, tuple[str, ...]]], bool, int]:
    """:func:`configurations`, and how many proposals a hard stop (:func:`~schedsearch.deadline.stopping`)
    cut: each split proposal (the balanced DP, torchtitan's, ``auto_partition``'s, AdaPipe's) is work that
    may be long on a model of hundreds of layers; past the stop the rest are left out (the space is then
    smaller, never wrong: every split enumerated is still in it)."""
    from schedsearch.errors import DeadlineExceeded
    from schedsearch.plan.peers import adapipe, auto_partition, torchtitan_default

    stopped = 0

    def propose(origin: str, make: Any, peer: bool = True) -> tuple[str, Any] | None:
        """``(origin, make())``; None when the stop has passed, or when a ``peer`` has no split here."""
        nonlocal stopped
        try:
            return origin, make()
        except DeadlineExceeded:
            stopped += 1
        except SchedSearchError:
            if not peer:
                raise
        return None

    found: dict[Configuration, list[str]] = {}
    whole = True

    def add(config: Configuration, origin: str) -> None:
        found.setdefault(config, [])
        if origin not in found[config]:
            found[config].append(origin)

    kinds = model.kinds()
    titan_ok = kinds[0] == "embedding" and kinds[-1] == "head"
    for layout, v in _shapes(model, num_ranks, families):
        S = num_ranks * v
        every = _all_splits(model.num_layers, S)
        whole = whole and every is not None
        for size in model.sizes():
            m = model.global_batch // size
            for rec in _recomputations(runtime, model):
                if rec.mode == "selective" and not 1 < rec.every <= _most_blocks_per_rank(model, num_ranks, v):
                    continue  # recomputes nothing on any rank: configuration "none" runs more variants
                fields = dict(num_ranks=num_ranks, layout=layout, microbatch_size=size, num_microbatches=m,
                              recomputation=rec)
                for origin, split in proposals:
                    if len(split) == S:
                        add(Configuration(split=[list(g) for g in split], **fields), origin)
                if every is not None:
                    for split in every:
                        add(Configuration(split=split, **fields), "every split")
                    continue
                base = rec if rec.mode != "selective" else Recomputation(mode="none")
                with unstopped() if not found else contextlib.nullcontext():  # one split to search, at least
                    proposed = [propose("balanced DP", lambda: balanced_split(
                        model, num_ranks=num_ranks, layout=layout, stages_per_rank=v, microbatch_size=size,
                        recomputation=base), peer=False)]
                if titan_ok:
                    schedule = {("loop", 1): "1F1B", ("loop", 2): "Interleaved1F1B", ("v", 2): "ZBVZeroBubble"}
                    if (layout, v) in schedule:
                        proposed.append(propose(f"torchtitan {schedule[layout, v]}", lambda: torchtitan_default(
                            model, num_ranks=num_ranks, schedule=schedule[layout, v], microbatch_size=size).split))
                if layout == "loop":
                    types = ("1f1b",) if v == 1 else ("interleaved_1f1b", "interleaved_zero_bubble")
                    for kind in types:
                        proposed.append(propose(f"auto_partition {kind}", lambda: auto_partition(
                            model, num_ranks=num_ranks, schedule_type=kind, microbatch_size=size,
                            virtual_stages_per_rank=None if v == 1 else v, recomputation=base).split))
                if layout == "loop" and v == 1 and rec.mode == "none":
                    proposed.append(propose("adapipe", lambda: adapipe(model, num_ranks=num_ranks,
                                                                       microbatch_size=size).split))
                for origin, split in filter(None, proposed):
                    if split is not None:
                        add(Configuration(split=[list(g) for g in split], **fields), origin)
    # the adapipe split is proposed for every recomputation of its shape and size
    for config, origins in list(found.items()):
        if "adapipe" in origins and config.recomputation.mode == "none":
            for rec in _recomputations(runtime, model)[1:]:
                add(attrs.evolve(config, recomputation=rec), "adapipe")
    return [(c, tuple(o)) for c, o in found.items()], whole, stopped


def least_largest_share(weights: Sequence[Any], num_ranks: int) -> Any:
    """A lower bound on the largest total of any rank over every assignment of ``weights`` to ``num_ranks``
    ranks (contiguous or not): the larger of their mean and, for every ``k``, the ``k + 1`` least of the
    ``k p + 1`` largest (some rank holds ``k + 1`` of those ``k p + 1``, pigeonhole).

    Examples
    --------
    >>> from schedsearch.plan.autoplan import least_largest_share
    >>> least_largest_share([3] * 8 + [2], 4)  # some rank holds 3 of the 9: at best two 3s and the 2
    8
    """
    w = sorted(weights, reverse=True)
    best = sum(w) / num_ranks
    for k in range((len(w) - 1) // num_ranks + 1):
        best = max(best, sum(w[k * num_ranks + 1 - (k + 1):k * num_ranks + 1]))
    return best


def space_floor_ms(model: LayerModel, num_ranks: int, *, runtime: str = "torch") -> float | None:
    """A lower bound on the step time of every configuration of the whole space (every split of every shape,
    every micro-batch size and recomputation :func:`configurations` takes for ``runtime``), and every schedule
    of it; None when none can hold its memory.

    A rank runs its layers' forward and backward (and the forward again of each block it recomputes) for
    every micro-batch one at a time (a model in layers declares no overlapped pairs), and holds their
    parameters and one micro-batch's activations at once (the rule of the planner's memory check), whatever
    the split: so per micro-batch size and recomputation, the step is at least the micro-batches times
    :func:`least_largest_share` of the layers' times (a layer's backward counted as the least of its whole
    backward and its input plus weight gradients), where the same share of parameters and activations
    fits the budget (recomputing every ``k``-th block counts as no recomputation for the time and as
    recomputing every block for the memory, as which blocks it recomputes depends on the split; mode
    ``"op"`` counts its part of the forward and its bytes). Transfers and idle time count 0.
    """
    from schedsearch.plan.times import exact_ms

    kinds = model.kinds()
    params = [layer.parameter_bytes for layer in model.expanded]
    budget = model.memory_budget_bytes
    best: Fraction | None = None
    for size in model.sizes():
        figures = model.at(size)
        for rec in _recomputations(runtime, model):
            held = [m.held_when(rec.mode) if rec.recomputes and kinds[i] == "layer" else m.activation_bytes
                    for i, m in enumerate(figures)]
            if budget is not None and least_largest_share([a + b for a, b in zip(params, held)], num_ranks) > budget:
                continue
            again = [m.again_ms(rec.mode) if rec.every_block and kinds[i] == "layer" else 0.0
                     for i, m in enumerate(figures)]
            work = [_least_work_ms(m, a) for m, a in zip(figures, again)]
            value = model.global_batch // size * least_largest_share(work, num_ranks)
            best = value if best is None else min(best, value)
    return None if best is None else float(best)


def configuration_floor_ms(model: LayerModel, config: Configuration) -> Fraction:
    """A lower bound on the step time of every schedule of ``config`` the planner searches: each rank runs
    its stages' forward and backward (and the forward again of each block ``config`` recomputes) for every
    micro-batch one at a time, so the step is at least the micro-batches times the largest rank's sum of
    them (a backward counted as :func:`_least_backward_ms`). Transfers, overheads and idle time count 0;
    cheap (no schedule model is built): what a configuration not yet prepared for its search is bounded by.

    Examples
    --------
    >>> from schedsearch.plan.layers import Configuration, LayerModel
    >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    >>> model = LayerModel(global_batch=4, num_ranks=2, layers=[{"name": "block", "repeat": 4, "measured": at1}])
    >>> config = Configuration(split=[[0], [1, 2, 3]], num_ranks=2, layout="loop", microbatch_size=1,
    ...                        num_microbatches=4, recomputation={"mode": "none"})
    >>> float(configuration_floor_ms(model, config))  # 4 micro-batches x 3 blocks x (1 + 2) ms
    36.0
    """
    figures = model.at(config.microbatch_size)
    work = [_least_work_ms(m, again) for m, again in zip(figures, model.again_ms(config))]
    return config.num_microbatches * max(sum((work[i] for s in stages for i in config.split[s]), Fraction(0))
                                         for stages in config.stage_of_rank())


def _least_work_ms(figures: Any, again_ms: float) -> Fraction:
    """A layer's least work per micro-batch over the variants: its forward, its least backward
    (:func:`_least_backward_ms`) and ``again_ms`` of its forward run again (recomputed)."""
    from schedsearch.plan.times import exact_ms

    return exact_ms(figures.forward_ms) + exact_ms(again_ms) + _least_backward_ms(figures)


def _least_backward_ms(figures: Any) -> Fraction:
    """A layer's least backward time over the variants: the whole backward, or its input and weight gradients
    when given (a split-backward variant runs those, whose sum may be below the whole backward's)."""
    from schedsearch.plan.times import exact_ms

    whole = exact_ms(figures.backward_ms)
    if not figures.has_split:
        return whole
    return min(whole, exact_ms(figures.input_grad_ms) + exact_ms(figures.weight_grad_ms))


# ------------------------------------------------------------------ the result
class Decision(enum.Enum):
    """What the search did with a candidate (a configuration x family variant)."""

    #: searched: its row holds the plan (or why there is none)
    SEARCHED = "searched"
    #: not searched: its analytic bound was not below the best plan found before it, so no plan of it is better
    PRUNED = "pruned"
    #: not searched: it cannot run (its shape, or over the memory budget in any plan); the note says why
    SKIPPED = "skipped"
    #: not searched: the time limit ended before its turn; its analytic bound still counts in the result's bound
    NOT_REACHED = "not reached"


@attrs.frozen(kw_only=True)
class Breakdown:
    """What a plan's step time is made of, on its busiest rank (ms): its forward and backward work, the forwards it
    recomputes, what the pipeline runtime adds to its actions (``overhead_ms``: the model's
    ``action_overhead_ms`` once per action it runs), and the rest of the step it waits (``bubble_ms``, which
    holds the transfers on its critical path); the four add up to the plan's makespan. ``transfer_ms`` is one
    micro-batch's transfers there and back through the pipeline."""

    compute_ms: float
    recompute_ms: float
    bubble_ms: float
    transfer_ms: float
    overhead_ms: float = 0.0

    def label(self) -> str:
        overhead = f" + per-action overhead {self.overhead_ms:.1f}" if self.overhead_ms else ""
        return (f"compute {self.compute_ms:.1f} + recomputation {self.recompute_ms:.1f}{overhead} + bubble "
                f"{self.bubble_ms:.1f} ms (transfers per micro-batch {self.transfer_ms:.1f} ms)")


@attrs.frozen(kw_only=True)
class LayerCandidate:
    """One configuration x family variant: its pre-search bound, and its row when it was searched.

    ``outcome`` says what the search did with it (:class:`Decision`);
    ``bound_ms`` is its analytic lower bound before any search (none for a
    skipped candidate).
    """

    configuration: Configuration
    origins: tuple[str, ...]
    candidate: Candidate
    outcome: Decision
    bound_ms: float | None = None
    row: PlanRow | None = None
    breakdown: Breakdown | None = None
    note: str = ""

    @property
    def makespan_ms(self) -> float | None:
        return None if self.row is None else self.row.makespan_ms

    @property
    def lower_bound_ms(self) -> float | None:
        """A lower bound on every plan of it: the larger of its pre-search bound and its search's (None when
        skipped: it has no plan the runtime can run)."""
        if self.outcome is Decision.SKIPPED:
            return None
        own = None if self.row is None else self.row.bound_ms
        found = [x for x in (own, self.bound_ms) if x is not None]
        return max(found) if found else None

    def to_dict(self) -> dict[str, Any]:
        return {"configuration": self.configuration.label(), "origins": list(self.origins),
                "family": self.candidate.label, "outcome": self.outcome.value, "bound_ms": self.bound_ms,
                "makespan_ms": self.makespan_ms,
                "row_bound_ms": None if self.row is None else self.row.bound_ms,
                "peak_gib": [] if self.row is None else list(self.row.peak_gib),
                "breakdown": None if self.breakdown is None else attrs.asdict(self.breakdown), "note": self.note}


def least_bound_ms(candidates: Sequence[LayerCandidate]) -> float | None:
    """The least :attr:`LayerCandidate.lower_bound_ms` of the candidates not skipped: a lower bound on every plan
    of every one of them; None when all are skipped, or when one not skipped has no bound (none is claimed)."""
    bounds = [c.lower_bound_ms for c in candidates if c.outcome is not Decision.SKIPPED]
    if not bounds or any(b is None for b in bounds):
        return None
    return min(bounds)


@attrs.frozen(kw_only=True)
class ModeSummary:
    """What the search found for one recomputation mode (:meth:`LayerPlanResult.by_recomputation`).

    ``best`` is the mode's fastest candidate with a plan (None when none
    has one); ``bound_ms`` bounds every plan of every candidate of the mode
    that was not skipped (the least of their :attr:`LayerCandidate.lower_bound_ms`),
    over the configurations the search covered; ``without_plan`` counts its
    searched candidates whose search ended with no plan (not proven to have
    none: the bound still counts them).
    """

    mode: str
    label: str
    best: LayerCandidate | None
    bound_ms: float | None
    searched: int
    without_plan: int
    pruned: int
    skipped: int
    not_reached: int

    def line(self) -> str:
        """One line of :meth:`LayerPlanResult.table`."""
        best = ("no plan" if self.best is None
                else f"best {self.best.makespan_ms:.3f} ms ({self.best.candidate.label})")
        bound = "-" if self.bound_ms is None else f"{self.bound_ms:.3f} ms"
        counts = [f"{self.searched} searched" + (f" ({self.without_plan} without a plan)" if self.without_plan else ""),
                  f"{self.pruned} pruned", f"{self.skipped} skipped"]
        if self.not_reached:
            counts.append(f"{self.not_reached} not reached")
        return f"{self.label}: {best}, bound {bound}; {', '.join(counts)}"

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "best_ms": None if self.best is None else self.best.makespan_ms,
                "best": None if self.best is None else self.best.configuration.label(),
                "bound_ms": self.bound_ms, "searched": self.searched, "without_plan": self.without_plan,
                "pruned": self.pruned, "skipped": self.skipped, "not_reached": self.not_reached}


@attrs.frozen(kw_only=True)
class LayerPlanResult:
    """What :func:`~schedsearch.plan.planner.plan_layers` found: every candidate (ranked), the winner, and its configuration's plan.

    ``bound_ms`` is a lower bound on the step time of every plan of every
    configuration in the space (the least of the searched rows' bounds and
    the analytic bounds of the candidates pruned or not reached within the
    time limit); ``covered`` says whether those
    configurations are the whole space (every split of every shape, size and
    recomputation) or the proposed splits only. ``result`` is the
    :class:`~schedsearch.plan.table.PlanResult` of the winner's configuration
    (its files are written from it). ``runner_up`` is the second-best plan,
    or, when every other candidate was pruned, the pruned candidate with the
    least bound (it would cost at least that bound). ``notes`` say what was
    assumed to read the input as a model in layers (a per-stage description
    planned in layers: :func:`~schedsearch.plan.layers.entry_notes`).
    ``space_bound_ms`` bounds every configuration of the whole space (every
    split): ``bound_ms`` when ``covered``, else
    :func:`space_floor_ms` (the least largest rank load over every split),
    weaker but valid beyond the proposed splits.
    """

    model: LayerModel
    num_ranks: int
    candidates: tuple[LayerCandidate, ...]
    best: LayerCandidate | None
    runner_up: LayerCandidate | None
    result: PlanResult | None
    bound_ms: float | None
    covered: bool
    num_configurations: int
    executor: str = "local"
    wall_time_s: float = 0.0
    notes: tuple[str, ...] = ()
    space_bound_ms: float | None = None
    #: the runtime the plans are for (a key of :data:`~schedsearch.handcrafted.families.RUNTIMES`)
    runtime: str = "torch"

    def count(self, decision: Decision) -> int:
        """How many candidates the search decided so."""
        return sum(c.outcome is decision for c in self.candidates)

    @property
    def searched(self) -> int:
        return self.count(Decision.SEARCHED)

    @property
    def pruned(self) -> int:
        return self.count(Decision.PRUNED)

    @property
    def skipped(self) -> int:
        return self.count(Decision.SKIPPED)

    @property
    def not_reached(self) -> int:
        return self.count(Decision.NOT_REACHED)

    @property
    def configuration(self) -> Configuration | None:
        return None if self.best is None else self.best.configuration

    def by_recomputation(self) -> tuple[ModeSummary, ...]:
        """Per recomputation mode of the candidates (``"none"``, ``"full"``, ``"op"``, every ``k``-th block as
        ``"selective k"``), in order of first appearance: its best plan and the bound on every plan of it,
        so that what the winner's recomputation gains over the others is read off (a mode whose bound is
        above the winner's plan cannot win; one whose candidates were searched without a plan is not ruled
        out by its bound).

        Examples
        --------
        >>> from schedsearch.plan.layers import LayerModel
        >>> from schedsearch.plan.planner import plan_layers
        >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB",
        ...         "checkpoint_bytes": "0.1 GiB"}]
        >>> model = LayerModel(global_batch=4, num_ranks=2, memory_budget_bytes="2 GiB",
        ...                    layers=[{"name": "block", "repeat": 4, "measured": at1}])
        >>> result = plan_layers(model, num_ranks=2, time_limit_s=20, deterministic=True, parallel=1)
        >>> for mode in result.by_recomputation():
        ...     print(mode.line())
        full recomputation: best 36.000 ms (interleaved 1F1B v=2), bound 36.000 ms; 1 searched, 4 pruned, 0 skipped
        no recomputation: best 39.000 ms (V 1F1B), bound 39.000 ms; 3 searched, 0 pruned, 8 skipped
        """
        out: dict[str, list[LayerCandidate]] = {}
        for c in self.candidates:
            rec = c.configuration.recomputation
            key = (f"selective {rec.every}" if rec.mode == "selective"
                   else f"layers {','.join(map(str, rec.layers))}" if rec.mode == "layers" else rec.mode)
            out.setdefault(key, []).append(c)
        summaries = []
        for key, cands in out.items():
            planned = [c for c in cands if c.makespan_ms is not None
                       and not c.candidate.record.runtime_gap(self.runtime)]
            summaries.append(ModeSummary(
                mode=key, label=cands[0].configuration.recomputation.label(),
                best=min(planned, key=lambda c: c.makespan_ms, default=None),
                bound_ms=least_bound_ms(cands),
                searched=sum(c.outcome is Decision.SEARCHED for c in cands),
                without_plan=sum(c.outcome is Decision.SEARCHED and c.makespan_ms is None for c in cands),
                pruned=sum(c.outcome is Decision.PRUNED for c in cands),
                skipped=sum(c.outcome is Decision.SKIPPED for c in cands),
                not_reached=sum(c.outcome is Decision.NOT_REACHED for c in cands)))
        return tuple(summaries)

    @property
    def gap(self) -> float | None:
        if self.best is None or self.bound_ms is None or not self.best.makespan_ms:
            return None
        return max(0.0, (self.best.makespan_ms - self.bound_ms) / self.best.makespan_ms)

    def table(self, rows: int = 12) -> str:
        """The winner, the runner-up, what the search covered, and the best ``rows`` candidates with a plan."""
        proposed = "torchtitan, auto_partition, AdaPipe-style DP, balanced DP" + (
            f", {DESCRIPTION_SPLIT}" if any(DESCRIPTION_SPLIT in c.origins for c in self.candidates) else "")
        lines = [f"{self.model} — planned on {self.num_ranks} ranks",
                 f"configurations: {self.num_configurations} ({'every split: the whole space' if self.covered else 'proposed splits: ' + proposed}); "
                 f"candidates: {len(self.candidates)}: {self.searched} searched, {self.pruned} pruned by bound, "
                 f"{self.skipped} skipped"
                 + (f", {self.not_reached} not reached within the time limit (their bounds count)"
                    if self.not_reached else "")]
        lines += [f"note: {note}" for note in self.notes]
        if self.best is not None:
            b = self.best
            lines.append(f"best: {b.candidate.label} on {b.configuration.label()}: {b.makespan_ms:.3f} ms "
                         f"(proposed by {', '.join(b.origins)})")
            if b.breakdown is not None:
                lines.append(f"  {b.breakdown.label()}")
            bound = "-" if self.bound_ms is None else f"{self.bound_ms:.3f} ms"
            gap = "-" if self.gap is None else f"{100 * self.gap:.1f}%"
            over = "every configuration of the space" if self.covered else "every configuration of the proposed splits"
            lines.append(f"  bound over {over}: {bound} (gap {gap})")
            if not self.covered and self.space_bound_ms is not None:
                lines.append(f"  bound over every configuration of the space (any split; the least largest rank load): "
                             f"{self.space_bound_ms:.3f} ms")
        modes = self.by_recomputation()
        if len(modes) > 1:
            lines.append("by recomputation (its best plan; the bound on every plan of it):")
            lines += [f"  {m.line()}" for m in modes]
        r = self.runner_up
        if r is not None and r.makespan_ms is None:
            lines.append(f"runner-up: {r.candidate.label} on {r.configuration.label()}: at least {r.bound_ms:.3f} ms "
                         f"(pruned by its bound)")
        elif r is not None:
            extra = "" if self.best is None else f", +{r.makespan_ms - self.best.makespan_ms:.3f} ms"
            lines.append(f"runner-up: {r.candidate.label} on {r.configuration.label()}: {r.makespan_ms:.3f} ms{extra}")
            if r.breakdown is not None:
                lines.append(f"  {r.breakdown.label()}")
        lines.append("")
        lines.append(f"{'#':>3} {'family':<22} {'step ms':>10} {'bound ms':>10} {'peak GiB':>8}  configuration")
        shown = [c for c in self.candidates if c.makespan_ms is not None][:rows]
        for i, c in enumerate(shown, 1):
            peak = max(c.row.peak_gib) if c.row.peak_gib else float("nan")
            bound = c.row.bound_ms if c.row.bound_ms is not None else c.bound_ms
            lines.append(f"{i:>3} {c.candidate.label:<22} {c.makespan_ms:>10.3f} "
                         f"{'-' if bound is None else format(bound, '.3f'):>10} {peak:>8.2f}  "
                         f"{c.configuration.label()}")
        lines.append(f"wall time {self.wall_time_s:.1f} s on the {self.executor} executor")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def write(self, out_dir: str | Path, *, torchtitan_config: str | None = None,
              torchtitan_module: str = "llama3") -> dict[str, Path]:
        """Write the winner's plan as :meth:`PlanResult.write <schedsearch.plan.table.PlanResult.write>` does, with
        its configuration's split (each stage named after the torchtitan modules it holds,
        :meth:`Configuration.module_names <schedsearch.plan.layers.Configuration.module_names>`; the first stage
        also holds the embedding and the last the norm and the output when the model has no such layer),
        micro-batch size and recomputation (torchtitan's activation checkpointing); ``torchtitan_config`` and
        ``torchtitan_module`` name the torchtitan model the split is checked against."""
        if self.result is None or self.best is None:
            raise SchedSearchError(f"{self.model}: no plan to write (no candidate of any configuration has one)")
        config = self.best.configuration
        stages = [list(modules) for modules in config.module_names(self.model)]
        kinds = self.model.kinds()
        if "embedding" not in kinds:  # as in a pipeline description: the first stage also holds the embedding
            stages[0][:0] = EMBEDDING_MODULES
        if "head" not in kinds:  # and the last the norm and the output
            stages[-1] += HEAD_MODULES
        pipeline = self.result.pipeline
        named = attrs.evolve(pipeline, stages=[attrs.evolve(stage, name="+".join(modules))
                                               for stage, modules in zip(pipeline.stages, stages)])
        return attrs.evolve(self.result, pipeline=named).write(
            out_dir, microbatch_size=config.microbatch_size, torchtitan_config=torchtitan_config,
            torchtitan_module=torchtitan_module, recomputation=config.recomputation)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model.name, "num_ranks": self.num_ranks, "bound_ms": self.bound_ms, "gap": self.gap,
                "covered": self.covered, "space_bound_ms": self.space_bound_ms,
                "num_configurations": self.num_configurations,
                "searched": self.searched, "pruned": self.pruned, "skipped": self.skipped,
                "not_reached": self.not_reached,
                "best": None if self.best is None else self.best.to_dict(),
                "runner_up": None if self.runner_up is None else self.runner_up.to_dict(),
                "by_recomputation": [m.to_dict() for m in self.by_recomputation()],
                "wall_time_s": self.wall_time_s, **({"notes": list(self.notes)} if self.notes else {})}


# ------------------------------------------------------------------ the search
def _pre_bound(times: Any) -> Fraction:
    """A candidate's lower bound in real ms before any search: the larger of its integer problem's analytic
    bound (:func:`~schedsearch.bounds.analytic_lower_bound`) and its memory-area bound
    (:func:`~schedsearch.bounds.memory_area_bounds`: a rank whose memory holds few micro-batches' activations
    at once waits for them), each valid for every plan of it."""
    from schedsearch.bounds import analytic_lower_bound, memory_area_bounds
    from schedsearch.plan.times import real_bound_ms

    problem = _bounded_problem(times)
    return real_bound_ms(times, max([analytic_lower_bound(problem).value, *memory_area_bounds(problem).values()]))


def _bounded_problem(times: Any) -> Any:
    """The integer problem whose bounds hold for a candidate's bytes (its own, or the relaxed one)."""
    return times.problem if times.memory_exact else times.relaxed_problem()


def _refined_bound(times: Any, bound: Fraction) -> Fraction:
    """``bound`` raised by :func:`~schedsearch.bounds.memory_bounds` (costlier than :func:`_pre_bound`'s parts:
    asked only of a candidate about to be searched, whose pre-search bound did not prune it)."""
    from schedsearch.bounds import memory_bounds
    from schedsearch.plan.times import real_bound_ms

    found = memory_bounds(_bounded_problem(times))
    return max(bound, real_bound_ms(times, max(found.values()))) if found else bound


def _breakdown(model: LayerModel, config: Configuration, row: PlanRow) -> Breakdown:
    """:class:`Breakdown` of ``row``'s plan of ``config``, on the rank with the most work."""
    again_of = model.again_ms(config)
    figures = model.at(config.microbatch_size)
    m = config.num_microbatches
    ranks = config.stage_of_rank()
    # a stage runs a forward and a backward per micro-batch (a forward, an input and a weight gradient when the
    # backward is split), each carrying the runtime's overhead once
    per_stage = (3 if row.candidate.split_backward else 2) * model.action_overhead_ms
    best = (-1.0, 0.0, 0.0)
    for stages in ranks:
        layers = [i for s in stages for i in config.split[s]]
        work = math.fsum(figures[i].forward_ms + figures[i].backward_ms for i in layers)
        again = math.fsum(again_of[i] for i in layers)
        if work + again + len(stages) * per_stage > sum(best):
            best = (work, again, len(stages) * per_stage)
    compute, again, overhead = m * best[0], m * best[1], m * best[2]
    sends = [float(model.p2p.transfer_ms(figures[g[-1]].p2p_bytes)) for g in config.split[:-1]]
    rank_of = _stage_ranks(config.num_stages, config.num_ranks, config.layout)
    transfer = 2 * math.fsum(t for k, t in enumerate(sends) if rank_of[k] != rank_of[k + 1])
    return Breakdown(compute_ms=round(compute, 3), recompute_ms=round(again, 3), overhead_ms=round(overhead, 3),
                     bubble_ms=round(max(0.0, row.makespan_ms - compute - again - overhead), 3),
                     transfer_ms=round(transfer, 3))


def _pipeline(model: LayerModel, config: Configuration) -> Any:
    """``model.pipeline(config)`` with each stage named after its torchtitan modules joined with ``+``
    (``tok_embeddings+layers.0``) when the model has torchtitan's shape (an embedding first, a head last): the
    files written for the plan split the model by those names."""
    pipeline = model.pipeline(config)
    kinds = model.kinds()
    if kinds[0] != "embedding" or kinds[-1] != "head":
        return pipeline
    names = config.module_names(model)
    return attrs.evolve(pipeline, stages=[attrs.evolve(s, name="+".join(n)) for s, n in zip(pipeline.stages, names)])
