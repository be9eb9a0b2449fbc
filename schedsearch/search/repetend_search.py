"""Repetend search and schedule completion (Tessel's construction, done exactly).

The search finds a small periodic pattern, the repetend, then completes the
warmup before it and the cooldown after it, so its cost does not grow with
the number of micro-batches: :meth:`PeriodicSchedule.unroll` then gives a
schedule for any number of micro-batches in linear time.

Formulation
-----------
We use a **modulo-scheduling encoding** that decides every offset vector of
one period in one solver call, rather than Tessel's enumeration of offset
vectors with one solver call each. For a period ``P`` each block gets a
phase ``t_b in [0, P)`` and an integer micro-batch offset ``o_b in [0,
N_R - 1]`` (see :mod:`schedsearch.periodic` for the meaning and
:mod:`schedsearch.encode.cpsat.repetend` for the constraints). Why:

* exactness at the same or lower cost: Tessel's pruning (Property 4.1,
  same block in micro-batch order; Property 4.2, offsets non-increasing
  along dependencies) still leaves a number of offset vectors that grows
  exponentially with the number of blocks; in the repetend encoding the
  offsets are variables, Property 4.2 is implied by the dependency
  constraint ``t_v + P (o_u - o_v) >= t_u + p_u`` and Property 4.1 by
  periodicity, and the solver prunes offset vectors by propagation;
* compaction is exact: ``P`` is the distance between the starts of
  consecutive instances, which may overlap (a task may run past the end of
  the period), so Tessel's ``E_R + W_R`` adjustment is not an
  after-the-fact correction but the model itself;
* memory is exact: the entry level ``initial + sum_b o_b m_b`` follows
  from the offsets and the steady state must stay within capacity from it.

Periods are tried upward from the larger of two lower bounds: the
per-device work ``max_d sum_{b on d} p_b``, and a memory bound (on a device
whose deltas pair up into allocations and the frees that depend on them,
the time-average level ``initial + sum amount x lifetime / P`` cannot
exceed the capacity, and a lifetime is at least the longest path from the
allocation's start to the free's start). Feasibility is not monotone in the
period for modulo schedules, so each period is decided in turn: first
within a short slice (least latency, the "events" memory encoding), which
settles easy feasible periods and easy refutations; a period the slice
cannot settle is postponed, and decided fully (feasibility, the
"cumulative" encoding, which refutes faster) only if nothing found later
beats it. The least period found is the least over the claimed space
(periods up to ``max_period``, offsets below ``N_R``), proven when every
smaller one was refuted. When the first period tried succeeds the search
stops there: it equals the lower bound.

Folds. A repetend may also hold ``k`` micro-batches per period (a
*fold*-``k`` repetend: every block ``k`` times, see
:mod:`schedsearch.periodic`), searched as the fold-1 repetend of a
super-graph of ``k`` copies of the graph, with the copies of one block in
a cyclic order to break their symmetry. A fold-``k`` period ``P`` gives
``P / k`` per micro-batch; under memory limits this can beat every fold-1
period (two micro-batches share what one cannot use alone: the interleaved
pipeline with memory 4 runs at 10 per micro-batch with fold 2, 11 with
fold 1). Refuting a fold-2 period is much harder for the solver than
finding one, so folds are explored *downward*: when the least fold-1 period
misses the lower bound, fold ``k`` tries ``P = k rate - 1, k rate - 2, ...``
(``rate`` the best so far) with a per-period budget, and stops at the first
period it cannot solve. The result is claimed least (``period_optimal``)
only when every smaller rate was refuted.

Completion (lazy)
-----------------
For a candidate repetend the warmup and cooldown task sets follow from the
offsets (Tessel, Eq. 5 and 6). While candidates are compared only
feasibility is established: the *truncated* completion (the steady state's
own times, see :mod:`schedsearch.search.repetend_completion`) is built
without a solver and validated; only if it fails are the parts checked for
feasibility by a backend. At the period finally chosen, up to
``candidates`` distinct offset vectors (the first with the least micro-batch
latency, the others no worse) are completed this way and scored by their
tightened unrolled makespans (one size per cooldown residue). For the best
alone, the warmup and the cooldowns are then solved time-optimally (the
cooldown starting from the memory the warmup and one instance leave; each
solve warm-started from the truncated part and given a budget), every
combination of truncated and solved parts is concatenated and tightened,
and the best valid one is kept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import attrs

from schedsearch.bounds.analytic import analytic_lower_bound
from schedsearch.encode import Backend, SolveOptions
from schedsearch.encode.repetend import (
    REPETEND_BACKENDS,
    REPETEND_MEMORY_ENCODINGS,
    RepetendOptions,
    repetend_support_error,
    solve_repetend,
)
from schedsearch.errors import UnsupportedFeatureError, ValidationFailedError
from schedsearch.options import Reporter, Rule, SearchOptions
from schedsearch.periodic import (
    PeriodicSchedule,
    Repetend,
    RepetendTask,
    check_repetend,
    cooldown_keys,
    warmup_keys,
)
from schedsearch.problem import Edge, Graph, Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule
from schedsearch.search.repetend_completion import assemble, levels_after, solve_part
from schedsearch.search.run import Provenance, Run, Source
from schedsearch.validate import assert_valid, validate

__all__ = [
    "repetend",
    "repetend_search",
    "RepetendResult",
    "period_lower_bound",
    "memory_rate_bound",
    "fold_problem",
    "COMPLETIONS",
]

#: How warmup and cooldown are built: compare truncated and solved parts
#: ("best"), solve them ("solved"), or keep the steady state's times ("truncated").
COMPLETIONS = ("best", "solved", "truncated")


@attrs.frozen(kw_only=True)
class RepetendResult(SearchResult):
    """A :class:`~schedsearch.result.SearchResult` with the periodic schedule.

    ``schedule`` is the periodic schedule unrolled to the problem's number of
    micro-batches (validated); ``objective`` its makespan; ``lower_bound``
    the analytic lower bound on the problem's makespan. ``period`` and
    ``fold`` describe the repetend (``period / fold`` per micro-batch);
    ``rate_lower_bound`` is the larger of the per-device work and memory
    bounds; ``period_optimal`` says whether every smaller rate was proven
    infeasible.

    Examples
    --------
    1F1B's steady state on two devices with room for two activations: one
    forward and one backward per device every 3 units, proven the best
    rate; the periodic schedule unrolls to any number of micro-batches:

    >>> from schedsearch.placements import vshape
    >>> from schedsearch.search import repetend
    >>> result = repetend(vshape(2, 4, memory=2), time_limit_s=10)
    >>> result.period, result.fold, result.period_optimal, result.objective
    (3, 1, True, 15)
    >>> result.periodic.unroll(8).makespan
    27
    """

    periodic: PeriodicSchedule | None = None
    period: int | None = None
    fold: int = 1
    rate_lower_bound: float | None = None
    period_optimal: bool = False

    @property
    def rate(self) -> float | None:
        return None if self.period is None else self.period / self.fold

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["period"] = self.period
        d["fold"] = self.fold
        d["rate_lower_bound"] = self.rate_lower_bound
        d["period_optimal"] = self.period_optimal
        d["periodic"] = self.periodic.to_dict() if self.periodic is not None else None
        return d

    def __str__(self) -> str:
        base = super().__str__()
        if self.period is None:
            return base
        proof = "least" if self.period_optimal else "not proven least"
        fold = f" for {self.fold} micro-batches" if self.fold > 1 else ""
        return f"{base}, period {self.period}{fold} ({proof}; bound {self.rate_lower_bound:g} per micro-batch)"


def period_lower_bound(problem: Problem) -> dict[str, int]:
    """Work per micro-batch on each device: a lower bound on the period of a fold-1 repetend."""
    out = {d: 0 for d in problem.cluster.device_names}
    for b in problem.graph.blocks:
        for d in b.options[0].devices:
            out[d] += b.options[0].duration
    return out


def memory_rate_bound(problem: Problem) -> Fraction:
    """A lower bound on the period per micro-batch from memory capacities.

    On a device whose nonzero deltas pair up (each free ``-a`` depends on an
    allocation ``+a`` on the device), the time-average level of a steady
    state is ``initial + sum_pairs a x lifetime / rate``, where a lifetime
    is at least the longest path from the allocation's start to the free's
    start; it cannot exceed the capacity. Devices whose deltas do not pair
    up contribute nothing. Returns 0 when no device binds.
    """
    graph = problem.graph
    order = graph.topological_order()
    succ = graph.successors()
    duration = {b.name: b.options[0].duration for b in graph.blocks}
    best = Fraction(0)
    for dev in problem.cluster.devices:
        if dev.memory is None:
            continue
        room = dev.memory - problem.initial_memory_of(dev.name)
        on = [b for b in graph.blocks if b.memory and dev.name in b.options[0].devices]
        allocs = [b for b in on if b.memory > 0]
        frees = [b for b in on if b.memory < 0]
        if not allocs or room <= 0:
            continue
        held = 0
        used: set[str] = set()
        paired = len(allocs) == len(frees)
        position = {name: i for i, name in enumerate(order)}
        for f in sorted(frees, key=lambda b: position[b.name]):
            # latest unmatched allocation of the same amount the free depends on
            dist = _distances_to(f.name, order, succ, duration)
            options = [a for a in allocs if a.name not in used and a.memory == -f.memory and a.name in dist]
            if not options:
                paired = False
                break
            a = max(options, key=lambda a: position[a.name])
            used.add(a.name)
            held += a.memory * dist[a.name]
        if paired:
            best = max(best, Fraction(held, room))
    return best


def _distances_to(target: str, order: tuple[str, ...], succ: Mapping[str, tuple[Edge, ...]],
                  duration: Mapping[str, int]) -> dict[str, int]:
    """Longest start-to-start path length from each ancestor of ``target`` to it."""
    dist: dict[str, int] = {target: 0}
    for name in reversed(order):
        if name == target:
            continue
        reach = [dist[e.dst] for e in succ[name] if e.dst in dist]
        if reach:
            dist[name] = duration[name] + max(reach)
    dist.pop(target)
    return dist


def fold_problem(problem: Problem, fold: int) -> tuple[Problem, dict[str, tuple[str, int]]]:
    """The super-graph of ``fold`` copies of the graph (copy ``i`` of block
    ``b`` named ``b~i``), and the map from copy names to ``(b, i)``."""
    if fold == 1:
        return problem, {b.name: (b.name, 0) for b in problem.graph.blocks}
    names = {(b.name, i): f"{b.name}~{i}" for i in range(fold) for b in problem.graph.blocks}
    if len(set(names.values())) != len(names):  # pragma: no cover - '~' inside names
        names = {(b, i): f"{b}~{i}~{n}" for n, (b, i) in enumerate(names)}
    blocks = [attrs.evolve(b, name=names[(b.name, i)]) for i in range(fold) for b in problem.graph.blocks]
    edges = [
        Edge(src=names[(e.src, i)], dst=names[(e.dst, i)], size=e.size) for i in range(fold) for e in problem.graph.edges
    ]
    folded = problem.with_(graph=Graph(blocks=blocks, edges=edges), num_microbatches=1,
                           name=f"{problem.name or 'problem'} x{fold}")
    return folded, {v: k for k, v in names.items()}


def _check_supported(problem: Problem) -> None:
    why = repetend_support_error(problem)
    if why is not None:
        raise UnsupportedFeatureError(f"repetend search cannot handle problem {problem.name!r}: {why}; use optimal()")
    for dev in problem.cluster.devices:
        if dev.memory is None:
            continue
        net = sum(b.memory for b in problem.graph.blocks if dev.name in b.options[0].devices)
        if net > 0:
            raise UnsupportedFeatureError(
                f"repetend search: device {dev.name!r} keeps {net} more memory unit(s) after every "
                f"micro-batch (its blocks' deltas sum to {net}) under capacity {dev.memory}, so no "
                f"schedule repeats for every number of micro-batches; free the memory in the graph, "
                f"drop the capacity (e.g. inference without activations kept), or use optimal()"
            )


def _valid_for(periodic: PeriodicSchedule, sizes: list[int]) -> bool:
    for n in sorted(set(sizes)):
        if validate(periodic.problem_for(n), periodic.unroll(n)):
            return False
    return True


def _check_sizes(periodic: PeriodicSchedule, n: int) -> list[int]:
    """Sizes validated before a periodic schedule is accepted: every cooldown
    residue with one and two instances, and the comparison size."""
    low = periodic.min_microbatches
    return [low + x for x in range(2 * periodic.fold)] + [_eval_size(periodic, n)]


def _eval_size(periodic: PeriodicSchedule, n: int) -> int:
    """Micro-batches at which candidates and completions are compared: the
    problem's, capped where warmup and cooldown no longer interact."""
    low = periodic.min_microbatches
    return max(low, min(n, 2 * low + 4 * periodic.fold))


@attrs.define
class _Search:
    """What one repetend search adds to its run (internal): the repetend encoding, the completion's limit, the
    prover and the periods tried. The run holds the problem, the options, the clock and the reporter; the
    repetend's searches are cut by wall-clock slices of the run's limit."""

    run: Run
    memory_encoding: str = "auto"
    completion_time_limit_s: float | None = None
    prover: str | Backend = ""
    tried: list[dict[str, Any]] = attrs.field(factory=list)

    @property
    def problem(self) -> Problem:
        return self.run.problem

    @property
    def backend(self) -> str | Backend:
        return self.run.options.solver_backend

    @property
    def deadline(self) -> float | None:
        """The wall-clock end of the whole call (a ``perf_counter`` time), or None."""
        limit = self.run.options.time_limit_s
        return None if limit is None else self.run.budget.t0 + limit

    @property
    def reporter(self) -> Reporter:
        return self.run.reporter

    @property
    def backend_name(self) -> str:
        return _name(self.backend)

    @property
    def prover_is_backend(self) -> bool:
        return _name(self.prover) == self.backend_name

    def encoding(self, fold: int) -> str:
        if self.memory_encoding != "auto":
            return self.memory_encoding
        return "cumulative" if fold == 1 else "events"

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def solve_options(self, floor_s: float = 0.05, cap_s: float | None = None) -> SolveOptions:
        """Settings of one part's solve: the time left, at most ``cap_s``, at least
        ``floor_s`` but never past the deadline of the whole call."""
        left = self.left()
        limit = cap_s if left is None else left if cap_s is None else min(left, cap_s)
        if limit is not None:
            limit = max(floor_s, limit)
            if left is not None:
                limit = min(limit, max(left, 0.01))
        return self.run.solve_options(time_limit_s=limit)

    def repetend_options(self, **fields: Any) -> RepetendOptions:
        """A repetend sub-problem with the search's solver settings."""
        return self.run.repetend_options(**fields)


def _name(backend: str | Backend) -> str:
    return backend if isinstance(backend, str) else str(backend.name)


def repetend(
    problem: Problem,
    *,
    repetend_size: int | None = None,
    max_fold: int = 2,
    max_period: int | None = None,
    fold_time_limit_s: float = 5.0,
    completion_time_limit_s: float = 10.0,
    memory_encoding: str = "auto",
    prover: str | Backend | None = None,
    candidates: int = 3,
    completion: str = "best",
    options: SearchOptions | None = None,
    **common: Any,
) -> RepetendResult:
    """Search a repetend of least period per micro-batch and complete it.

    Parameters
    ----------
    problem:
        Fixed placements, no transfers, identical micro-batches; on every
        device with a capacity the memory deltas of one micro-batch must not
        sum to more than 0. Its ``num_microbatches`` is the size the result's
        schedule is unrolled to (the periodic schedule unrolls to any size
        from its minimum).
    repetend_size:
        Largest number of micro-batches instance 0 may reach (Tessel's
        ``N_R``: offsets lie in ``0 .. N_R - 1``); default the number of
        blocks times the fold, never more than ``num_microbatches``.
    max_fold:
        Largest number of micro-batches per period (1 = Tessel's
        repetends only). Folds above 1 are tried only when the least fold-1
        period misses the lower bound, downward from it.
    max_period:
        Largest fold-1 period tried (default: the total work of one
        micro-batch).
    fold_time_limit_s:
        Budget of each fold > 1 period tried (within the whole call's limit).
    completion_time_limit_s:
        Budget of each time-optimal warmup or cooldown solve (warm-started
        from the truncated part when it is valid on its own; within the
        whole call's limit).
    memory_encoding:
        Memory encoding of the repetend models (see
        :class:`~schedsearch.encode.repetend.RepetendOptions`); ``"auto"`` uses
        ``"cumulative"`` for fold 1, where it refutes periods faster, and
        ``"events"`` for larger folds, where it finds repetends faster.
    prover:
        Backend (a name or an object) that settles the periods the quick
        slice leaves open, and decides every fold > 1 period (default: the
        search backend). Every answer is checked by the independent
        repetend checker whichever backend gives it.
    candidates:
        Distinct offset vectors compared at the period finally chosen (the
        first found has the least micro-batch latency, the others no larger
        latency); each is completed lazily and scored by its unrolled
        makespans (see ``_score``).
    completion:
        ``"best"``, ``"solved"`` or ``"truncated"`` (see :data:`COMPLETIONS`).
    options, common:
        The common settings (:class:`~schedsearch.options.SearchOptions` or
        keywords of its field names); ``time_limit_s`` covers the whole
        search; ``backend`` (a name or an object) solves every modulo
        sub-problem and every part. ``warm_starts`` do not apply (a repetend
        is built from its period up, not from a plan): they are left aside,
        and the result's ``notes`` say so. Progress phases:
        ``"bound"``, ``"repetend period P"`` (``"repetend period P (fold
        k)"``), ``"completion"``.

    Returns
    -------
    RepetendResult
        FEASIBLE (OPTIMAL when the unrolled makespan meets the analytic
        bound) with the periodic schedule; INFEASIBLE when every fold-1
        period up to ``max_period`` was refuted; TIMEOUT otherwise.
        ``engine`` is ``"repetend period P (<backend>)"``.

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> result = repetend(vshape(4, 8, memory=4), time_limit_s=20)
    >>> result.period, result.objective
    (3, 33)
    """
    run = Run.open(problem, options, common, "repetend", own={
        "repetend_size": (repetend_size, Rule.integer(1, none=True)), "max_fold": (max_fold, Rule.integer(1)),
        "max_period": (max_period, Rule.integer(1, none=True)),
        "fold_time_limit_s": (fold_time_limit_s, Rule.number(above=0)),
        "completion_time_limit_s": (completion_time_limit_s, Rule.number(above=0, none=True)),
        "memory_encoding": (memory_encoding, Rule.choice(("auto", *REPETEND_MEMORY_ENCODINGS))),
        "prover": (prover, Rule(f"one of {', '.join(map(repr, REPETEND_BACKENDS))}, a backend object or None",
                                lambda v: v is None or v in REPETEND_BACKENDS if isinstance(v, (str, type(None)))
                                else hasattr(v, "name"), tuple(REPETEND_BACKENDS))),
        "candidates": (candidates, Rule.integer(1)), "completion": (completion, Rule.choice(COMPLETIONS)),
    })
    given = len(run.options.warm_starts)
    _check_supported(problem)
    result = repetend_search(run, repetend_size=repetend_size, max_fold=max_fold, max_period=max_period,
                             fold_time_limit_s=fold_time_limit_s, completion_time_limit_s=completion_time_limit_s,
                             memory_encoding=memory_encoding, prover=prover, candidates=candidates,
                             completion=completion)
    if not given:
        return result
    note = (f"the warm starts ({given} given) were left aside: a repetend is built from its period up, not from a "
            f"plan (scale_search and solve start from them)")
    return attrs.evolve(result, notes=(*result.notes, note))


def repetend_search(run: Run, *, repetend_size: int | None = None, max_fold: int = 2, max_period: int | None = None,
                    fold_time_limit_s: float = 5.0, completion_time_limit_s: float | None = 10.0,
                    memory_encoding: str = "auto", prover: str | Backend | None = None, candidates: int = 3,
                    completion: str = "best") -> RepetendResult:
    """:func:`repetend` inside ``run`` (its options checked, its problem supported)."""
    problem, t0 = run.problem, run.budget.t0
    search = _Search(run=run, memory_encoding=memory_encoding, completion_time_limit_s=completion_time_limit_s,
                     prover=run.options.solver_backend if prover is None else prover)
    rates = _rates(problem, max_period)
    # the run's analytic bound (computed once) is the makespan's; a "max_span" problem's time is its makespan here
    bound = (analytic_lower_bound(problem) if problem.objective == "max_span" else run.analytic).value
    run.raise_bound(bound, "analytic")
    search.reporter.report("bound", bound=bound)
    walk = _Walk(rates=rates, repetend_size=repetend_size)
    _walk_fold_one(search, walk)
    _walk_larger_folds(search, walk, max_fold, fold_time_limit_s)
    _decide_postponed(search, walk)
    chosen = walk.chosen
    if chosen is not None and chosen.fold > 1:
        chosen = _improve_latency(search, chosen, walk.size(chosen.fold))
    if chosen is not None and candidates > 1:
        chosen = _refine(search, chosen, walk.size(chosen.fold), candidates)
    stats: dict[str, Any] = {
        "periods": search.tried,
        "period_work": rates.work,
        "memory_rate_bound": float(rates.memory_bound),
    }
    if chosen is None:
        return _without_repetend(search, walk, bound, stats, t0)
    return _with_repetend(search, walk, chosen, completion, bound, stats, t0, proven=walk.proven(max_fold))


@attrs.frozen(kw_only=True)
class _Rates:
    """The bounds on the time per micro-batch the period walk starts from.

    ``work`` is each device's work per micro-batch (:func:`period_lower_bound`),
    ``memory_bound`` the memory rate bound (:func:`memory_rate_bound`),
    ``rate_bound`` the larger of the two, and ``hi`` the largest fold-1
    period tried.
    """

    problem: Problem
    work: dict[str, int]
    memory_bound: Fraction
    hi: int

    @property
    def work_bound(self) -> int:
        return max(self.work.values())

    @property
    def rate_bound(self) -> Fraction:
        return max(Fraction(self.work_bound), self.memory_bound)

    @property
    def fold_one_periods(self) -> range:
        """The fold-1 periods that may hold a repetend, upward."""
        return range(max(self.work_bound, math.ceil(self.rate_bound)), self.hi + 1)


def _rates(problem: Problem, max_period: int | None) -> _Rates:
    """The work and memory rate bounds of ``problem``, and the largest fold-1
    period (default: the total work of one micro-batch)."""
    hi = sum(b.options[0].duration for b in problem.graph.blocks) if max_period is None else max_period
    return _Rates(problem=problem, work=period_lower_bound(problem), memory_bound=memory_rate_bound(problem), hi=hi)


@attrs.define
class _Walk:
    """What the walk over periods has found: the best periodic schedule and its
    rate, the (fold, period) pairs refuted, the fold-1 periods postponed."""

    rates: _Rates
    repetend_size: int | None
    chosen: PeriodicSchedule | None = None
    best_rate: Fraction | None = None
    refuted: set[tuple[int, int]] = attrs.field(factory=set)  # proven to hold no completable repetend
    postponed: list[int] = attrs.field(factory=list)
    timed_out: bool = False

    def size(self, fold: int) -> int:
        """How many micro-batches instance 0 of a fold-``fold`` repetend may reach."""
        problem = self.rates.problem
        n, blocks = problem.num_microbatches, problem.graph.blocks
        return min(n, fold * len(blocks) if self.repetend_size is None else self.repetend_size)

    def take(self, found: list[tuple[PeriodicSchedule, Any]], rate: Fraction) -> None:
        """Keep the best of the candidates ``found`` at ``rate``."""
        self.chosen, self.best_rate = min(found, key=lambda c: c[1])[0], rate

    def proven(self, max_fold: int) -> bool:
        """Whether every (fold, period) of a lower rate than the best was refuted.

        The pairs are those with ``k`` in ``1..max_fold``, ``P`` in
        ``k * work_bound .. k * hi`` and ``rate_bound <= P / k < best_rate``;
        per fold they are one range of ``P``, counted before it is walked
        (a fine time unit makes the ranges long, and a range longer than
        the refuted pairs cannot be covered).
        """
        if self.best_rate is None:
            return False
        rates = self.rates
        work, rate, refuted = rates.work_bound, rates.rate_bound, self.refuted
        for k in range(1, max_fold + 1):
            lo = max(k * work, math.ceil(k * rate))
            hi = min(k * rates.hi, math.ceil(k * self.best_rate) - 1)
            if hi < lo:
                continue
            if hi - lo + 1 > len(refuted) or any((k, P) not in refuted for P in range(lo, hi + 1)):
                return False
        return True


def _out_of_time(search: _Search) -> bool:
    """Whether the whole call's time is (all but) used up."""
    left = search.left()
    return left is not None and left <= 0.01


def _walk_fold_one(search: _Search, walk: _Walk) -> None:
    """Fold-1 periods upward, each given the quick slice only: the first with
    a repetend is taken; one the slice cannot settle is postponed."""
    for P in walk.rates.fold_one_periods:
        if _out_of_time(search):
            walk.timed_out = True
            return
        found, status = _candidates_at(search, P, 1, walk.size(1), 1, search.deadline, quick_only=True)
        if found:
            walk.take(found, Fraction(P))
            return
        if status is Status.INFEASIBLE:
            walk.refuted.add((1, P))
        else:
            walk.postponed.append(P)


def _walk_larger_folds(search: _Search, walk: _Walk, max_fold: int, fold_time_limit_s: float) -> None:
    """Folds 2 .. ``max_fold``, periods downward from the best rate found,
    each within ``fold_time_limit_s``; a fold stops at its first period left open."""
    if walk.best_rate is None or walk.best_rate <= walk.rates.rate_bound:
        return
    for k in range(2, max_fold + 1):
        P = math.ceil(k * walk.best_rate) - 1
        while Fraction(P, k) >= walk.rates.rate_bound:
            left = search.left()
            if left is not None and left <= 0.01:
                break
            budget = fold_time_limit_s if left is None else min(fold_time_limit_s, left)
            found, status = _candidates_at(search, P, k, walk.size(k), 1, time.perf_counter() + budget)
            if found:
                walk.take(found, Fraction(P, k))
            elif status is Status.INFEASIBLE:
                walk.refuted.add((k, P))
            else:
                break
            P -= 1


def _decide_postponed(search: _Search, walk: _Walk) -> None:
    """The postponed fold-1 periods that could still beat the best rate, decided fully, upward."""
    for P in walk.postponed:
        if walk.best_rate is not None and P >= walk.best_rate:
            return
        if _out_of_time(search):
            walk.timed_out = True
            return
        found, status = _candidates_at(search, P, 1, walk.size(1), 1, search.deadline)
        if found:
            walk.take(found, Fraction(P))
            return
        if status is Status.INFEASIBLE:
            walk.refuted.add((1, P))
        elif status is Status.TIMEOUT:
            walk.timed_out = True
            return


def _without_repetend(search: _Search, walk: _Walk, bound: int, stats: dict[str, Any], t0: float) -> RepetendResult:
    """INFEASIBLE when every fold-1 period was refuted in time, else TIMEOUT."""
    every = all((1, P) in walk.refuted for P in walk.rates.fold_one_periods)
    status = Status.INFEASIBLE if every and not walk.timed_out else Status.TIMEOUT
    name = search.backend_name
    return RepetendResult(
        status=status,
        lower_bound=bound,
        wall_time_s=time.perf_counter() - t0,
        backend=name,
        stats=stats,
        strategy="repetend",
        bound_engine=name if status is Status.INFEASIBLE else "analytic",
        problem=search.problem,
        rate_lower_bound=float(walk.rates.rate_bound),
    )


def _with_repetend(search: _Search, walk: _Walk, chosen: PeriodicSchedule, completion: str, bound: int,
                   stats: dict[str, Any], t0: float, *, proven: bool) -> RepetendResult:
    """The chosen repetend completed, unrolled to the problem's size and
    validated: OPTIMAL when it meets the analytic bound, else FEASIBLE."""
    problem, name = search.problem, search.backend_name
    periodic = _finish(search, chosen, completion, stats)
    schedule = periodic.unroll(problem.num_microbatches)
    assert_valid(problem, schedule, "unrolled periodic schedule")
    engine = f"{_phase(periodic.period, periodic.fold)} ({name})"
    search.run.offer(schedule, Provenance(source=Source.REPETEND, engine=engine), validated=True, report=False,
                     value=schedule.makespan)
    status = Status.OPTIMAL if schedule.makespan <= bound else Status.FEASIBLE
    search.reporter.report(incumbent=schedule.makespan)
    stats["offsets"] = {b: list(o) for b, o in periodic.offsets.items()}
    stats["latency"] = periodic.repetend.latency()
    return RepetendResult(
        status=status,
        schedule=schedule,
        objective=schedule.makespan,
        lower_bound=min(bound, schedule.makespan),
        wall_time_s=time.perf_counter() - t0,
        backend=name,
        stats=stats,
        strategy="repetend",
        engine=engine,
        bound_engine="analytic",
        problem=problem,
        periodic=periodic,
        period=periodic.period,
        fold=periodic.fold,
        rate_lower_bound=float(walk.rates.rate_bound),
        period_optimal=proven,
    )


def _phase(period: int, fold: int) -> str:
    """The progress phase (and engine name) of one period of one fold."""
    return f"repetend period {period}" + (f" (fold {fold})" if fold > 1 else "")


def _unfold(folded: Repetend, fold: int, copies: Mapping[str, tuple[str, int]]) -> Repetend:
    """A fold-``k`` repetend of the original graph from a fold-1 repetend of
    its super-graph: copy ``i`` at super offset ``O`` has offset ``k O + i``."""
    tasks = []
    for t in folded.tasks:
        block, i = copies[t.block]
        tasks.append(
            RepetendTask(block=block, offset=fold * t.offset + i, phase=t.phase, devices=t.devices, duration=t.duration)
        )
    return Repetend(period=folded.period, tasks=tasks, fold=fold)


#: Time slice of the first, quick attempt at each period (least latency, events encoding).
QUICK_SLICE_S = 2.0


def _decide(search: _Search, folded: Problem, fold: int, deadline: float | None, quick_only: bool = False,
            **fields: Any) -> Any:
    """One repetend decision, time-sliced.

    Fold 1: a quick attempt (least latency, events encoding, a short slice)
    settles most periods, easy feasible ones and easy refutations; otherwise
    the prover decides feasibility in the remaining time (cumulative
    encoding) and the latency of what it finds is improved within one more
    slice. Larger folds: feasibility only, in one call when the prover is
    the search backend, else a quick slice of the search backend first.
    """

    def call(objective: str, encoding: str, limit: float | None, backend: str | Backend | None = None,
             **extra: Any) -> Any:
        options = search.repetend_options(objective=objective, memory_encoding=encoding, time_limit_s=limit,
                                        **{**fields, **extra})
        answer = solve_repetend(folded, backend or search.backend, options)
        search.tried.append(
            {"period": options.period, "fold": fold, "objective": objective, "encoding": encoding,
             "backend": _name(backend or search.backend),
             "status": answer.status.value, "latency": answer.latency, "seconds": answer.wall_time_s,
             "capped": options.max_latency is not None}
        )
        return answer

    def left() -> float | None:
        return None if deadline is None else max(0.01, deadline - time.perf_counter())

    def slice_() -> float:
        remaining = left()
        return QUICK_SLICE_S if remaining is None else min(QUICK_SLICE_S, remaining)

    quick_encoding = "events" if search.memory_encoding == "auto" else search.memory_encoding
    objective = "latency" if fields.get("max_latency") is None else "feasibility"
    if fold > 1:
        # the latency objective is slow on a super-graph: feasibility only here;
        # the latency of the repetend finally chosen is improved once (_improve_latency)
        if search.prover_is_backend:
            return call("feasibility", search.encoding(fold), left())
        quick = call("feasibility", search.encoding(fold), slice_())
        if quick.repetend is not None or quick.status is Status.INFEASIBLE:
            return quick
        remaining = left()
        if remaining is not None and remaining <= 0.02:
            return quick
        return call("feasibility", search.encoding(fold), remaining, backend=search.prover)
    quick = call(objective, quick_encoding, slice_())
    if quick.repetend is not None or quick.status is Status.INFEASIBLE or quick_only:
        return quick
    remaining = left()
    if remaining is not None and remaining <= 0.02:
        return quick
    full = call("feasibility", search.encoding(fold), remaining, backend=search.prover)
    if full.repetend is None or objective == "feasibility":
        return full
    better = call("latency", quick_encoding, slice_(), hint=full.repetend)
    return better if better.repetend is not None and better.latency <= full.latency else full


def _score(periodic: PeriodicSchedule, n: int) -> int:
    """Sum of the unrolled makespans at the comparison size and the next
    ``fold - 1`` sizes (one per cooldown residue)."""
    e = _eval_size(periodic, n)
    return sum(periodic.unroll(e + r).makespan for r in range(periodic.fold))


def _refine(search: _Search, chosen: PeriodicSchedule, size: int, wanted: int) -> PeriodicSchedule:
    """Compare up to ``wanted`` offset vectors of the chosen period whose
    latency is no larger than the chosen one's (feasibility calls of one
    slice each); keep the best scored."""
    problem, rep = search.problem, chosen.repetend
    k = rep.fold
    folded, copies = fold_problem(problem, k)
    cyclic = tuple(tuple(f"{b.name}~{i}" for i in range(k)) for b in problem.graph.blocks) if k > 1 else ()
    seed_rep = _fold_hint(rep, copies)
    forbidden = [{t.block: t.offset for t in seed_rep.tasks}]
    best, best_score = chosen, _score(chosen, problem.num_microbatches)
    for _ in range(wanted - 1):
        left = search.left()
        if left is not None and left <= 0.05:
            break
        options = search.repetend_options(
            period=rep.period, max_offset=(size - k) // k, objective="feasibility", max_latency=seed_rep.latency(),
            forbidden_offsets=forbidden, cyclic_orders=cyclic, memory_encoding=search.encoding(k) if k == 1 else "events",
            time_limit_s=QUICK_SLICE_S if left is None else min(QUICK_SLICE_S, left),
        )
        answer = solve_repetend(folded, search.backend, options)
        search.tried.append({"period": rep.period, "fold": k, "objective": "candidate", "encoding": options.memory_encoding,
                             "status": answer.status.value, "latency": answer.latency, "seconds": answer.wall_time_s,
                             "capped": True})
        if answer.repetend is None:
            break
        forbidden.append({t.block: t.offset for t in answer.repetend.tasks})
        candidate = _complete_lazily(search, _unfold(answer.repetend, k, copies))
        if candidate is not None:
            score = _score(candidate, problem.num_microbatches)
            if score < best_score:
                best, best_score = candidate, score
    return best


def _fold_hint(rep: Repetend, copies: Mapping[str, tuple[str, int]]) -> Repetend:
    """The super-graph repetend a fold-``k`` repetend came from (inverse of :func:`_unfold`)."""
    name = {pair: copy for copy, pair in copies.items()}
    k = rep.fold
    tasks = [
        RepetendTask(block=name[(t.block, t.offset % k)], offset=t.offset // k, phase=t.phase, devices=t.devices,
                     duration=t.duration)
        for t in rep.tasks
    ]
    return Repetend(period=rep.period, tasks=tasks)


def _improve_latency(search: _Search, chosen: PeriodicSchedule, size: int) -> PeriodicSchedule:
    """One slice spent lowering the latency of a fold > 1 repetend (kept when it unrolls shorter)."""
    problem, rep = search.problem, chosen.repetend
    folded, copies = fold_problem(problem, rep.fold)
    cyclic = tuple(tuple(f"{b.name}~{i}" for i in range(rep.fold)) for b in problem.graph.blocks)
    left = search.left()
    limit = QUICK_SLICE_S if left is None else min(QUICK_SLICE_S, left)
    if limit <= 0.05:
        return chosen
    options = search.repetend_options(
        period=rep.period, max_offset=(size - rep.fold) // rep.fold,
        objective="latency", cyclic_orders=cyclic,
        memory_encoding="events" if search.memory_encoding == "auto" else search.memory_encoding,
        time_limit_s=limit, hint=_fold_hint(rep, copies),
    )
    answer = solve_repetend(folded, search.backend, options)
    search.tried.append({"period": rep.period, "fold": rep.fold, "objective": "latency", "encoding": options.memory_encoding,
                         "status": answer.status.value, "latency": answer.latency, "seconds": answer.wall_time_s,
                         "capped": True})
    if answer.repetend is None or answer.latency >= rep.latency():
        return chosen
    candidate = _complete_lazily(search, _unfold(answer.repetend, rep.fold, copies))
    if candidate is None:
        return chosen
    if _score(candidate, problem.num_microbatches) <= _score(chosen, problem.num_microbatches):
        return candidate
    return chosen


def _candidates_at(
    search: _Search, period: int, fold: int, size: int, wanted: int, deadline: float | None,
    quick_only: bool = False,
) -> tuple[list[tuple[PeriodicSchedule, int]], Status]:
    """Completable candidates of one (period, fold) (lazy: feasibility only).

    Returns the candidates with their unrolled makespan at the comparison
    size, and the status of the last repetend call (INFEASIBLE when no further
    candidate exists). Folds above 1 keep every block's copies in
    micro-batch order (Tessel's Property 4.1, the assumption
    :func:`~schedsearch.search.optimal` makes by default).
    """
    problem = search.problem
    search.reporter.report(_phase(period, fold))
    folded, copies = fold_problem(problem, fold)
    cyclic: tuple[tuple[str, ...], ...] = ()
    if fold > 1:
        cyclic = tuple(tuple(f"{b.name}~{i}" for i in range(fold)) for b in problem.graph.blocks)
    # copy i of a block has offset k O + i <= k O + k - 1: keep it below N_R
    max_offset = (size - fold) // fold
    if max_offset < 0:
        return [], Status.INFEASIBLE
    found: list[tuple[PeriodicSchedule, int]] = []
    forbidden: list[dict[str, int]] = []
    latency_cap: int | None = None
    status = Status.UNKNOWN
    while len(found) < wanted:
        if deadline is not None and deadline - time.perf_counter() <= 0.01:
            return found, Status.TIMEOUT
        answer = _decide(
            search, folded, fold, deadline, quick_only and not found, period=period, max_offset=max_offset,
            max_latency=latency_cap, forbidden_offsets=forbidden, cyclic_orders=cyclic,
        )
        status = answer.status
        if answer.repetend is None:
            if status is Status.INFEASIBLE and latency_cap is not None and not found:
                latency_cap = None  # every capped candidate failed: look beyond the cap
                continue
            break
        forbidden.append({t.block: t.offset for t in answer.repetend.tasks})
        if latency_cap is None:
            latency_cap = answer.repetend.latency()
        rep = _unfold(answer.repetend, fold, copies)
        violations = check_repetend(problem, rep)
        if violations:  # pragma: no cover - an unfolding bug
            raise ValidationFailedError(f"unfolded repetend breaks {len(violations)} rule(s): {violations[0]}", violations)
        candidate = _complete_lazily(search, rep)
        if candidate is not None:
            n_eval = _eval_size(candidate, problem.num_microbatches)
            found.append((candidate, candidate.unroll(n_eval).makespan))
    return found, status


def _initial(problem: Problem) -> dict[str, int]:
    return {d: problem.initial_memory_of(d) for d in problem.cluster.device_names}


def _complete_lazily(search: _Search, rep: Repetend) -> PeriodicSchedule | None:
    """A completion of ``rep`` established by feasibility only (or None)."""
    problem = search.problem
    truncated = assemble(problem, rep, None, None)
    if _valid_for(truncated, _check_sizes(truncated, problem.num_microbatches)):
        return truncated
    options = search.solve_options(cap_s=search.completion_time_limit_s)
    _, warm, _ = solve_part(problem, warmup_keys(rep), _initial(problem), objective="feasibility", name="warmup",
                            backend=search.backend, options=options)
    if warm is None:
        return None
    cools = []
    for rho in range(rep.fold):
        _, cool, _ = solve_part(problem, cooldown_keys(rep, rho), levels_after(problem, rep, 1),
                                objective="feasibility", name=f"cooldown {rho}", backend=search.backend,
                                options=options)
        if cool is None:
            return None
        cools.append(cool)
    candidate = assemble(problem, rep, warm, cools)
    return candidate if _valid_for(candidate, _check_sizes(candidate, problem.num_microbatches)) else None


def _finish(search: _Search, chosen: PeriodicSchedule, completion: str, stats: dict[str, Any]) -> PeriodicSchedule:
    """The one optimisation at the end: time-optimal warmup and cooldowns,
    then the best valid combination with the truncated parts."""
    problem = search.problem
    search.reporter.report("completion")
    rep = chosen.repetend
    sizes = _check_sizes(chosen, problem.num_microbatches)
    truncated = assemble(problem, rep, None, None)
    truncated_ok = _valid_for(truncated, sizes)
    warm_choices: list[Schedule | None] = []
    cool_choices: list[list[Schedule | None] | None] = []
    if truncated_ok and completion in ("best", "truncated"):
        warm_choices.append(None)
        cool_choices.append(None)
    left = search.left()
    if (completion in ("best", "solved") or not truncated_ok) and (left is None or left > 0.05):
        t0 = time.perf_counter()
        cap = search.completion_time_limit_s
        _, warm, rw = solve_part(problem, warmup_keys(rep), _initial(problem), objective="makespan", name="warmup",
                                 backend=search.backend, options=search.solve_options(0.5, cap),
                                 hint=truncated.warmup)
        cools: list[Schedule | None] = []
        statuses = []
        for rho in range(rep.fold):
            _, cool, rc = solve_part(problem, cooldown_keys(rep, rho), levels_after(problem, rep, 1),
                                     objective="makespan", name=f"cooldown {rho}", backend=search.backend,
                                     options=search.solve_options(0.5, cap), hint=truncated.cooldowns[rho])
            cools.append(cool)
            statuses.append(rc.status.value if rc is not None else "EMPTY")
        stats["completion_s"] = time.perf_counter() - t0
        stats["warmup_status"] = rw.status.value if rw is not None else "EMPTY"
        stats["cooldown_status"] = statuses
        if warm is not None:
            warm_choices.append(warm)
        if all(c is not None for c in cools):
            cool_choices.append(cools)
    scored: list[tuple[int, str, PeriodicSchedule]] = []
    for w in warm_choices:
        for c in cool_choices:
            candidate = assemble(problem, rep, w, c, name=problem.name)
            if not _valid_for(candidate, sizes):
                continue
            label = f"{'truncated' if w is None else 'solved'} warmup, {'truncated' if c is None else 'solved'} cooldown"
            scored.append((_score(candidate, problem.num_microbatches), label, candidate))
    if not scored:
        # the completion established while comparing candidates stands
        scored.append((_score(chosen, problem.num_microbatches), "feasible parts", chosen))
    scored.sort(key=lambda s: s[0])
    stats["completions"] = {label: makespan for makespan, label, _ in scored}
    stats["completion"] = scored[0][1]
    return scored[0][2]
