"""List scheduling: fast valid plans without a solver, under named rules.

A list scheduler places task instances one at a time, in the order a *rule*
ranks them, each as early as its devices, its data, its release and the
memory allow. A rule is one of two families, each with its own placement
policy; :func:`list_plan` and :func:`list_schedule` take either.

HEFT rules (:data:`HEFT_RULES`, by name; any problem of the model)
-------------------------------------------------------------------

Task instances are ranked by a priority (higher first; ties by block
order, then micro-batch), then placed one at a time: at each step the ready
task (all predecessors placed) of highest priority that can be placed is
put on the placement option where it **finishes earliest** (HEFT's rule), at
the earliest time its devices are free for its whole duration, its data
have arrived and its release has passed.

* Data arrival: for an edge ``u -> v`` of size > 0 whose two ends run on
  disjoint device sets, a transfer of the channel's transfer time is booked
  on the channel serving ``lead(u) -> lead(v)`` where it ends earliest, no
  earlier than ``u`` ends; ``v`` starts after it. Other edges (and fixed
  orders) only require ``v`` to start after ``u`` ends.
* Insertion: on a device without a memory capacity, and on channels, a task
  may go into an idle gap before already placed work (HEFT's insertion
  policy). On a device with a capacity it is appended after the last task
  placed there, so the device runs its tasks in placement order and the
  memory level at each start is ``initial + sum of deltas placed so far +
  delta + workspace``; a task is only placed when that stays within the
  capacity. When no ready task fits anywhere the scheduler gives up
  (no plan): list scheduling is not complete under memory limits.

The priorities (:func:`priorities`):

* ``"upward_rank"`` (HEFT): ``rank(t) = mean duration + max over
  successors s of (mean transfer time + rank(s))``; the mean transfer time
  is the mean channel time times the share of option pairs that need a
  transfer;
* ``"longest_path"``: the same with minimal durations and no transfers
  (the remaining critical path);
* ``"work_remaining"``: mean duration plus the sum of the mean durations of
  every descendant (most work remaining first);
* ``"upward_downward"`` (CPOP): upward rank plus the longest path into the
  task (its earliest start with minimal durations).

Pipeline rules (:class:`PipelineRule`; fixed placements, no fixed orders)
-------------------------------------------------------------------------

A *non-delay* scheduler simulates the devices in time. Whenever a device is
free it starts, among the task instances that are ready there (every
predecessor ended and its transfer arrived, release reached, every device
of the task free) and that fit in memory (level + delta + workspace <=
capacity on each of the task's devices), the one the rule ranks first; a
device only idles when nothing ready fits. A transfer is booked when its
source ends, in the first gap of the channel (serving the two lead
devices) where it ends soonest. When no task can ever start (every device
waits for memory that only a task which cannot start would free), there is
no plan.

A pipeline rule ranks tasks by a tuple: the rank of the block's ``kind`` in
``kind_order`` (``B`` ranks with ``I``; other kinds after the listed
ones), then the micro-batch and the stage (ascending, descending or not at
all), micro-batch first or stage first. For pipelines with a split backward
the rule ``F > I > W``, oldest micro-batch first, reaches the per-device
lower bound on DualPipe's placement with ``PP`` activations per device (see
the project's benchmarks); :data:`PIPELINE_RULES` is a portfolio of rules
:func:`best_list_schedule` tries in turn.

Declared overlapped groups are formed only on request (``form_groups``) and
only when they save time (a group lasting less than its members together,
such as DualPipe's ``F&B`` pair with ``F&B < F + B``); otherwise every task
runs alone, which the model always allows. (Greedy pairing is often worse
than no pairing: a pair makes its backward end later, which delays the
backward chain.)

Shared by both
--------------

The free gaps of devices and channels are kept by
:class:`~schedsearch.timeline.Timeline` (a transfer picks its channel with
:func:`~schedsearch.timeline.earliest_finish`). Every plan returned has
passed the independent validator.

Results. :func:`list_schedule`, :func:`heft` and :func:`best_list_schedule`
return a :class:`~schedsearch.result.SearchResult` like every strategy
(FEASIBLE with the plan and the analytic lower bound, OPTIMAL when the plan
meets it; UNKNOWN when memory blocks every rule; INFEASIBLE when fixed
orders contradict the edges); :func:`list_plan` gives the bare schedule (or
None) to callers that build on it.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Union

import attrs

from schedsearch._union_find import UnionFind
from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch.deadline import checkpoint, counted
from schedsearch.errors import InvalidOptionsError, InvalidProblemError, UnsupportedFeatureError
from schedsearch.options import Deadline
from schedsearch.problem import Edge, Problem, TaskKey
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, TaskInstance, Transfer, objective_value
from schedsearch.timeline import Timeline, earliest_common, earliest_finish
from schedsearch.validate import assert_valid

__all__ = [
    "HEFT_RULES",
    "PipelineRule",
    "PIPELINE_RULES",
    "Rule",
    "priorities",
    "list_plan",
    "list_schedule",
    "heft",
    "best_list_schedule",
    "heuristic_result",
]

#: The HEFT priority rules, by name (see the module docstring).
HEFT_RULES = ("upward_rank", "longest_path", "work_remaining", "upward_downward")

_STAGE_ORDERS = ("ascending", "descending", "none")

#: Explicit HEFT priorities: per task key, or a function of it (higher first).
Priorities = Union[Mapping[TaskKey, float], Callable[[TaskKey], float]]


def _check_kind_order(inst: PipelineRule, attribute: attrs.Attribute, value: str) -> None:
    if not isinstance(value, str) or len(set(value)) != len(value):
        raise InvalidOptionsError(f"PipelineRule: 'kind_order' must be a string of distinct kind letters, got {value!r}")


def _check_stage_order(inst: PipelineRule, attribute: attrs.Attribute, value: str) -> None:
    if value not in _STAGE_ORDERS:
        raise InvalidOptionsError(f"PipelineRule: 'stage_order' must be one of {_STAGE_ORDERS}, got {value!r}")


@attrs.frozen(kw_only=True)
class PipelineRule:
    """How the non-delay list scheduler ranks the ready tasks of a device (lowest key first).

    Parameters
    ----------
    kind_order:
        Block kinds, most urgent first (``"FIW"``: forwards, then input
        gradients (and full backwards), then weight gradients).
    stage_order:
        Tie-break on the block's ``stage``: ``"ascending"``,
        ``"descending"`` or ``"none"``.
    microbatch_first:
        Compare micro-batches before stages (oldest micro-batch first).

    Examples
    --------
    >>> rule = PipelineRule(kind_order="FIW", stage_order="descending")
    >>> print(rule)
    F > I > W, micro-batch first, stages descending
    >>> rule.key("B", 2, 0) < rule.key("W", 3, 0)   # a full backward ranks with I
    True
    """

    kind_order: str = attrs.field(default="FIW", validator=_check_kind_order)
    stage_order: str = attrs.field(default="none", validator=_check_stage_order)
    microbatch_first: bool = True

    def key(self, kind: str, stage: int | None, microbatch: int) -> tuple[int, int, int]:
        """The rank of a task of block kind ``kind``, ``stage`` and ``microbatch`` (lowest first)."""
        order = self.kind_order
        k = kind if kind in order or kind != "B" else "I"
        rank = order.index(k) if k in order else len(order)
        s = stage or 0
        s = s if self.stage_order == "ascending" else -s if self.stage_order == "descending" else 0
        return (rank, microbatch, s) if self.microbatch_first else (rank, s, microbatch)

    def __str__(self) -> str:
        first = "micro-batch" if self.microbatch_first else "stage"
        return f"{' > '.join(self.kind_order)}, {first} first, stages {self.stage_order}"


#: A portfolio of pipeline rules: forward-first rules first (they reach the
#: bound on the bidirectional placements), then the other kind orders.
PIPELINE_RULES: tuple[PipelineRule, ...] = tuple(
    PipelineRule(kind_order="".join(order), stage_order=stage, microbatch_first=first)
    for order in ("FIW", "IFW", "FWI", "IWF", "WFI", "WIF")
    for stage in ("none", "descending", "ascending")
    for first in (True, False)
    if not (stage == "none" and not first)
)

#: A list-scheduling rule: the name of a HEFT rule, or a pipeline rule.
Rule = Union[str, PipelineRule]


# --------------------------------------------------------------------------
# The front: one plan, one result, the portfolios
# --------------------------------------------------------------------------


def list_plan(
    problem: Problem,
    rule: Rule = "upward_rank",
    *,
    priority: Priorities | None = None,
    insertion: bool = True,
    form_groups: bool = False,
    name: str = "",
    deadline: Deadline | None = None,
) -> Schedule | None:
    """One list schedule of ``problem`` under ``rule`` (validated), or None when memory blocks it.

    The bare plan, for callers that build on it; :func:`list_schedule` gives
    the same plan as a search result.

    Parameters
    ----------
    problem:
        A problem of the model; a pipeline rule needs fixed placements and
        no fixed orders (else :class:`~schedsearch.errors.UnsupportedFeatureError`).
    rule:
        A HEFT rule's name (:data:`HEFT_RULES`) or a :class:`PipelineRule`.
    priority:
        HEFT rules only: explicit priorities (higher first), as a mapping
        or a function of the task key, instead of ``rule``'s.
    insertion:
        HEFT rules only: allow placing a task into an idle gap on devices
        without a memory capacity (and on channels).
    form_groups:
        Pipeline rules only: when the task the rule would start belongs to
        a declared overlapped group that lasts less than its members
        together, and an instance of that group holding it is ready and
        fits in memory, the group starts instead: each other linked part
        of the group takes, among its ready micro-batches, the one the rule
        ranks first; members wait only for dependencies outside the group.
    name:
        The plan's name (pipeline rules name it after the rule by default).
    deadline:
        Pipeline rules only: the caller's clock; the simulation stops and
        returns None once it has expired (checked every few hundred
        events, so a large problem does not outrun its caller's limit).

    Raises :class:`~schedsearch.errors.InvalidOptionsError` for an unknown
    rule or a knob of the other family, and for HEFT rules an
    :class:`~schedsearch.errors.InvalidProblemError` when fixed orders and edges form a
    cycle (no plan exists; :func:`list_schedule` reports INFEASIBLE).

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> p = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    >>> list_plan(p).makespan  # the optimum: m1 runs j1.o0 [0, 4) then j0.o1
    6
    >>> from schedsearch.placements import vshape
    >>> list_plan(vshape(2, 2), PipelineRule(kind_order="FIW")).makespan  # both forwards first
    9
    """
    if isinstance(rule, PipelineRule):
        _check_pipeline_knobs(rule, priority, insertion)
        return _pipeline_plan(problem, rule, form_groups=form_groups, name=name, deadline=deadline)
    if deadline is not None:
        raise InvalidOptionsError(f"list_plan: 'deadline' applies to pipeline rules only, got {deadline!r} "
                                  f"with HEFT rule {rule!r}")
    _check_heft_knobs(rule, priority, form_groups)
    graph = _TaskGraph(problem)
    schedule = _heft_plan(graph, _given_priorities(graph, rule, priority), insertion)
    return schedule if schedule is None or not name else attrs.evolve(schedule, name=name)


def list_schedule(
    problem: Problem,
    rule: Rule = "upward_rank",
    *,
    priority: Priorities | None = None,
    insertion: bool = True,
    form_groups: bool = False,
    name: str = "",
) -> SearchResult:
    """One list schedule of ``problem`` under ``rule`` as a search result (parameters: :func:`list_plan`).

    FEASIBLE with the validated plan and the analytic lower bound (OPTIMAL
    when the plan meets it), UNKNOWN when memory blocks the list scheduler,
    INFEASIBLE when fixed orders and edges form a cycle; ``engine`` names
    the rule.

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> p = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    >>> list_schedule(p).objective
    6
    >>> from schedsearch.placements import vshape
    >>> result = list_schedule(vshape(2, 2), PipelineRule())
    >>> result.objective, result.engine
    (9, 'list scheduling (F > I > W, micro-batch first, stages none)')
    """
    t0 = time.perf_counter()
    if isinstance(rule, PipelineRule):
        schedule = list_plan(problem, rule, priority=priority, insertion=insertion, form_groups=form_groups,
                             name=name)
        return heuristic_result(problem, schedule, strategy="list_schedule",
                                engine=f"list scheduling ({rule}{', pairs formed' if form_groups else ''})",
                                stats={"rule": str(rule)}, wall_time_s=time.perf_counter() - t0)
    _check_heft_knobs(rule, priority, form_groups)
    engine = "list scheduling (HEFT, " + (rule if priority is None else "given priorities") + ")"
    try:
        schedule = list_plan(problem, rule, priority=priority, insertion=insertion, form_groups=form_groups,
                             name=name)
    except _PrecedenceCycle as exc:
        return heuristic_result(problem, None, strategy="list_schedule", engine=engine, stats={"reason": str(exc)},
                                wall_time_s=time.perf_counter() - t0, infeasible=True)
    return heuristic_result(problem, schedule, strategy="list_schedule", engine=engine, stats={"rule": rule},
                            wall_time_s=time.perf_counter() - t0)


def heft(
    problem: Problem,
    *,
    rules: Sequence[str] = HEFT_RULES,
    insertion: bool = True,
    bound: tuple[int, str] | None = None,
) -> SearchResult:
    """The best list schedule over several HEFT rules, as a search result.

    Returns a FEASIBLE result (OPTIMAL when it meets the analytic lower
    bound) with the validated schedule, UNKNOWN when every rule was
    blocked by memory, or INFEASIBLE when fixed orders and edges form a
    cycle. ``engine`` names the winning rule, ``stats["makespans"]`` gives
    each rule's makespan (None when blocked) and ``stats["rule"]`` the
    winner. ``bound``: a lower bound of the problem's objective the caller
    has already proved, and what proved it, in place of the analytic one.

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> result = heft(jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem)
    >>> result.status.value, result.objective, result.engine, result.bound_engine
    ('OPTIMAL', 6, 'list scheduling (HEFT, upward_rank)', 'analytic')
    """
    t0 = time.perf_counter()
    if not rules:
        raise InvalidOptionsError(f"heft: 'rules' must name at least one priority rule of {HEFT_RULES}, got {rules!r}")
    try:
        graph = _TaskGraph(problem)
    except _PrecedenceCycle as exc:
        return heuristic_result(problem, None, strategy="heft", engine="", stats={"reason": str(exc)},
                                wall_time_s=time.perf_counter() - t0, infeasible=True)
    best: tuple[Schedule, str] | None = None
    makespans: dict[str, int | None] = {}
    for rule in rules:
        schedule = _heft_plan(graph, _priorities(graph, rule), insertion)
        makespans[rule] = schedule.makespan if schedule is not None else None
        if schedule is not None and (best is None or schedule.makespan < best[0].makespan):
            best = (schedule, rule)
    return heuristic_result(
        problem, best[0] if best else None, strategy="heft",
        engine=f"list scheduling (HEFT, {best[1]})" if best else "",
        stats={"makespans": makespans, "rule": best[1] if best else None}, wall_time_s=time.perf_counter() - t0,
        bound=bound,
    )


def best_list_schedule(
    problem: Problem,
    rules: Iterable[Rule] = PIPELINE_RULES,
    *,
    objective: str | None = None,
    target: int | None = None,
) -> SearchResult:
    """The best list schedule over ``rules`` (objective: the problem's, by default), as a search result.

    Stops at the first schedule whose objective is at most ``target``.
    FEASIBLE (OPTIMAL when the plan meets the analytic bound) or UNKNOWN
    when every rule is blocked; ``engine`` names the winning rule,
    ``stats["rules_tried"]`` counts the rules run.

    Examples
    --------
    1F1B's placement on two devices with room for two activations: the
    five forward-first rules give 16; the sixth rule (backward first)
    reaches 1F1B's makespan ``(4 + 2 - 1) x 3 = 15``, the target, and the
    portfolio stops there.

    >>> from schedsearch.placements import vshape
    >>> result = best_list_schedule(vshape(2, 4, memory=2), target=15)
    >>> result.objective, result.stats["rules_tried"], result.stats["rule"]
    (15, 6, 'I > F > W, micro-batch first, stages none')
    """
    t0 = time.perf_counter()
    objective = objective or problem.objective
    best: tuple[int, Schedule, Rule] | None = None
    tried = 0
    for rule in rules:
        tried += 1
        schedule = list_plan(problem, rule)
        if schedule is None:
            continue
        value = objective_value(schedule, objective)
        if best is None or value < best[0]:
            best = (value, schedule, rule)
        if target is not None and value <= target:
            break
    stats = {"rules_tried": tried, "rule": None if best is None else str(best[2])}
    return heuristic_result(problem, None if best is None else best[1], strategy="list_schedule",
                            engine="" if best is None else f"list scheduling ({best[2]})", stats=stats,
                            wall_time_s=time.perf_counter() - t0)


def heuristic_result(
    problem: Problem,
    schedule: Schedule | None,
    *,
    strategy: str,
    engine: str,
    stats: Mapping[str, object],
    wall_time_s: float,
    infeasible: bool = False,
    bound: tuple[int, str] | None = None,
) -> SearchResult:
    """A heuristic's plan as a :class:`~schedsearch.result.SearchResult`.

    With a (validated) ``schedule``: FEASIBLE, its objective and the
    analytic lower bound of the problem's objective (or ``bound``, a
    proved bound and what proved it, when the caller has one), OPTIMAL
    when the plan meets the bound. Without: UNKNOWN (a heuristic proves
    nothing), or INFEASIBLE when the caller proved that no plan exists
    (``infeasible``).
    """
    name = "max_span" if problem.objective == "max_span" else "makespan"
    stats = dict(stats)
    if infeasible:
        return SearchResult(status=Status.INFEASIBLE, wall_time_s=wall_time_s, stats=stats, strategy=strategy,
                            objective_name=name, bound_engine="precedence check", problem=problem)
    if bound is None:
        bound = (objective_lower_bound(problem).value, "analytic")
        stats["analytic_bound"] = bound[0]
    bound, bound_engine = bound
    if schedule is None:
        return SearchResult(status=Status.UNKNOWN, lower_bound=bound, wall_time_s=wall_time_s, stats=stats,
                            strategy=strategy, objective_name=name, bound_engine=bound_engine, problem=problem)
    value = objective_value(schedule, problem.objective)
    return SearchResult(
        status=Status.FEASIBLE,  # OPTIMAL when the bound meets it (SearchResult's rule)
        schedule=schedule,
        objective=value,
        lower_bound=min(bound, value),
        wall_time_s=wall_time_s,
        stats=stats,
        strategy=strategy,
        objective_name=name,
        engine=engine,
        bound_engine=bound_engine,
        problem=problem,
    )


def _check_pipeline_knobs(rule: PipelineRule, priority: Priorities | None, insertion: bool) -> None:
    """Refuse the HEFT-only knobs with a pipeline rule."""
    if priority is not None:
        raise InvalidOptionsError(f"list scheduling: 'priority' applies to the HEFT rules, not to pipeline rule '{rule}'")
    if not insertion:
        raise InvalidOptionsError(f"list scheduling: 'insertion' applies to the HEFT rules, not to pipeline rule '{rule}' "
                         f"(it starts work only when a device is free)")


def _check_heft_knobs(rule: object, priority: Priorities | None, form_groups: bool) -> None:
    """Refuse a rule of neither family, and the pipeline-only knob with a HEFT rule."""
    if priority is None and rule not in HEFT_RULES:
        raise InvalidOptionsError(f"list scheduling: 'rule' must be one of {HEFT_RULES} or a PipelineRule, got {rule!r}")
    if form_groups:
        raise InvalidOptionsError(f"list scheduling: 'form_groups' applies to pipeline rules, not to HEFT rule {rule!r}")


# --------------------------------------------------------------------------
# HEFT rules: priorities, then each task where it finishes earliest
# --------------------------------------------------------------------------


class _PrecedenceCycle(InvalidProblemError):
    """Fixed orders and edges form a cycle: no schedule exists."""


@attrs.frozen(kw_only=True)
class _Pred:
    task: int
    size: int  # transfer size (0: precedence only)


class _TaskGraph:
    """Task instances of a problem with their predecessors and successors."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.keys: list[TaskKey] = list(problem.tasks)
        self.index = {k: i for i, k in enumerate(self.keys)}
        blocks = problem.graph.by_name()
        self.options = [blocks[b].options for b, _ in self.keys]
        self.durations = [problem.durations(b, m) for b, m in self.keys]
        self.memory = [blocks[b].memory for b, _ in self.keys]
        self.workspace = [blocks[b].workspace for b, _ in self.keys]
        self.release = [problem.release_of(b, m) for b, m in self.keys]
        n = len(self.keys)
        preds: list[dict[int, int]] = [{} for _ in range(n)]
        for m in range(problem.num_microbatches):
            checkpoint(len(problem.graph.edges))
            for e in problem.graph.edges:
                u, v = self.index[(e.src, m)], self.index[(e.dst, m)]

                preds[v][u] = max(preds[v].get(u, 0), e.size)
        for order in problem.fixed_orders:
            for a, b in zip(order, order[1:]):
                u, v = self.index[a], self.index[b]
                preds[v].setdefault(u, 0)
        self.preds = [[_Pred(task=u, size=s) for u, s in sorted(p.items())] for p in preds]
        self.succs: list[list[_Pred]] = [[] for _ in range(n)]
        for v, plist in enumerate(self.preds):
            for p in plist:
                self.succs[p.task].append(_Pred(task=v, size=p.size))
        self.topo = self._topological()

    def _topological(self) -> list[int]:
        indeg = [len(p) for p in self.preds]
        ready = [i for i, d in enumerate(indeg) if d == 0]
        out: list[int] = []
        while ready:
            t = ready.pop()
            out.append(t)
            for s in self.succs[t]:
                indeg[s.task] -= 1
                if indeg[s.task] == 0:
                    ready.append(s.task)
        if len(out) != len(self.keys):
            # the graph is acyclic, but fixed orders may contradict its edges
            raise _PrecedenceCycle("list scheduling: fixed orders and edges form a cycle (the problem is infeasible)")
        return out

    def mean_transfer(self, u: int, v: int, size: int) -> float:
        if size <= 0:
            return 0.0
        cluster = self.problem.cluster
        total, count = 0.0, 0
        for ou in self.options[u]:
            for ov in self.options[v]:
                count += 1
                if set(ou.devices) & set(ov.devices):
                    continue
                times = [c.transfer_time(size) for c in cluster.channels_between(ou.devices[0], ov.devices[0])]
                if times:
                    total += sum(times) / len(times)
        return total / count if count else 0.0


def priorities(problem: Problem, rule: str = "upward_rank") -> dict[TaskKey, float]:
    """Priority of every task instance under the HEFT rule ``rule`` (see the module notes).

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> p = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    >>> priorities(p, "longest_path")[("j0.o0", 0)]  # 3 + 2: the rest of job 0
    5.0
    """
    return _priorities(_TaskGraph(problem), rule)


def _priorities(g: _TaskGraph, rule: str) -> dict[TaskKey, float]:
    n = len(g.keys)
    mean = [sum(d) / len(d) for d in g.durations]
    least = [min(d) for d in g.durations]
    rank = [0.0] * n
    if rule in ("upward_rank", "upward_downward"):
        for t in reversed(g.topo):
            rank[t] = mean[t] + max((g.mean_transfer(t, s.task, s.size) + rank[s.task] for s in g.succs[t]), default=0.0)
        if rule == "upward_downward":
            down = [0.0] * n
            for t in g.topo:
                down[t] = max([float(g.release[t])] + [down[p.task] + least[p.task] for p in g.preds[t]])
            rank = [r + d for r, d in zip(rank, down)]
    elif rule == "longest_path":
        for t in reversed(g.topo):
            rank[t] = least[t] + max((rank[s.task] for s in g.succs[t]), default=0.0)
    elif rule == "work_remaining":
        # descendants as bit sets: exact "work of every descendant", not a path sum
        desc = [0] * n
        for t in reversed(g.topo):
            acc = 0
            for s in g.succs[t]:
                acc |= desc[s.task] | (1 << s.task)
            desc[t] = acc
        for t in range(n):
            bits, total, i = desc[t], mean[t], 0
            while bits:
                if bits & 1:
                    total += mean[i]
                bits >>= 1
                i += 1
            rank[t] = total
    else:
        raise InvalidOptionsError(f"list scheduling: 'rule' must be one of {HEFT_RULES}, got {rule!r}")
    return {k: rank[i] for i, k in enumerate(g.keys)}


def _given_priorities(g: _TaskGraph, rule: str, priority: Priorities | None) -> dict[TaskKey, float]:
    """The priorities of ``rule``, or the explicit ones (every task must have one)."""
    if priority is None:
        return _priorities(g, rule)
    if isinstance(priority, Mapping):
        missing = [k for k in g.keys if k not in priority]
        if missing:
            raise InvalidOptionsError(f"list scheduling: 'priority' lacks task {missing[0]!r}")
        return dict(priority)
    return {k: float(priority(k)) for k in g.keys}


@attrs.define
class _HeftState:
    """What the HEFT scheduler has placed so far."""

    devices: dict[str, Timeline]
    channels: dict[str, Timeline]
    capacity: dict[str, int | None]
    level: dict[str, int]
    chosen: dict[int, int] = attrs.field(factory=dict)
    start: dict[int, int] = attrs.field(factory=dict)
    end: dict[int, int] = attrs.field(factory=dict)
    transfers: list[Transfer] = attrs.field(factory=list)


#: A transfer to book before a task: (channel, start, duration, source task).
_Booking = tuple[str, int, int, int]


def _heft_plan(g: _TaskGraph, prio: Mapping[TaskKey, float], insertion: bool) -> Schedule | None:
    """Place the ready task of highest priority that fits, where it finishes earliest, until all are placed."""
    problem = g.problem
    cluster = problem.cluster
    state = _HeftState(
        devices={d.name: Timeline() for d in cluster.devices},
        channels={c.name: Timeline() for c in cluster.channels},
        capacity={d.name: d.memory for d in cluster.devices},
        level={d.name: problem.initial_memory_of(d.name) for d in cluster.devices},
    )
    block_pos = {b.name: i for i, b in enumerate(problem.graph.blocks)}
    order_key = {t: (-prio[k], block_pos[k[0]], k[1]) for t, k in enumerate(g.keys)}
    remaining = [len(p) for p in g.preds]
    ready = sorted((t for t, r in enumerate(remaining) if r == 0), key=order_key.__getitem__)
    while ready:
        placed = next(((pos, t, best) for pos, t in enumerate(ready)
                       if (best := _best_option(g, t, state, insertion)) is not None), None)
        if placed is None:
            return None
        pos, t, (option, start, bookings) = placed
        _place(g, t, option, start, bookings, state)
        ready.pop(pos)
        checkpoint()

        for succ in g.succs[t]:
            remaining[succ.task] -= 1
            if remaining[succ.task] == 0:
                bisect.insort(ready, succ.task, key=order_key.__getitem__)
    tasks = [
        TaskInstance(
            block=g.keys[t][0], microbatch=g.keys[t][1], devices=g.options[t][state.chosen[t]].devices,
            start=state.start[t], end=state.end[t],
        )
        for t in range(len(g.keys))
    ]
    return assert_valid(problem, Schedule(tasks=tasks, transfers=state.transfers), "list schedule")


def _place(g: _TaskGraph, t: int, option: int, start: int, bookings: list[_Booking], state: _HeftState) -> None:
    """Book task ``t`` on its option's devices from ``start``, and its incoming transfers."""
    for name, b_start, b_dur, u in bookings:
        state.channels[name].book(b_start, b_dur)
        ku, kt = g.keys[u], g.keys[t]
        state.transfers.append(
            Transfer(src=ku[0], dst=kt[0], microbatch=kt[1], channel=name, start=b_start, end=b_start + b_dur)
        )
    dur = g.durations[t][option]
    for d in g.options[t][option].devices:
        state.devices[d].book(start, dur)
        state.level[d] += g.memory[t]
    state.chosen[t], state.start[t], state.end[t] = option, start, start + dur


def _best_option(g: _TaskGraph, t: int, state: _HeftState, insertion: bool) -> tuple[int, int, list[_Booking]] | None:
    """(option, start, transfer bookings) with the earliest finish, or None
    when no option of ``t`` fits in memory and reaches its data."""
    best: tuple[int, int, int, list[_Booking]] | None = None
    for i, option in enumerate(g.options[t]):
        devs = option.devices
        if any(state.capacity[d] is not None and state.level[d] + g.memory[t] + g.workspace[t] > state.capacity[d]
               for d in devs):
            continue
        arrival = _data_arrival(g, t, devs, state)
        if arrival is None:
            continue
        ready_at, bookings = arrival
        dur = g.durations[t][i]
        timelines = [state.devices[d] for d in devs]
        if not insertion or any(state.capacity[d] is not None for d in devs):
            ready_at = max([ready_at] + [tl.last_end for tl in timelines])
        s = earliest_common(timelines, ready_at, dur)
        if best is None or s + dur < best[1] + g.durations[t][best[0]]:
            best = (i, s, s + dur, bookings)
    if best is None:
        return None
    return best[0], best[1], best[3]


def _data_arrival(g: _TaskGraph, t: int, devs: tuple[str, ...], state: _HeftState) -> tuple[int, list[_Booking]] | None:
    """When ``t``'s release has passed and its data are on ``devs``, with the
    transfers that bring them (each on the channel where it ends first,
    after the transfers booked before it), or None when a transfer has no
    channel."""
    ready_at = g.release[t]
    bookings: list[_Booking] = []
    tentative: dict[str, Timeline] = {}
    for p in sorted(g.preds[t], key=lambda p: state.end[p.task]):
        u_end = state.end[p.task]
        u_devs = g.options[p.task][state.chosen[p.task]].devices
        if p.size <= 0 or set(u_devs) & set(devs):
            ready_at = max(ready_at, u_end)
            continue
        candidates = [(ch.name, ch.transfer_time(p.size),
                       (state.channels[ch.name], tentative.setdefault(ch.name, Timeline())))
                      for ch in g.problem.cluster.channels_between(u_devs[0], devs[0])]
        found = earliest_finish(candidates, u_end)
        if found is None:
            return None
        name, s, dur = found
        tentative[name].book(s, dur)
        bookings.append((name, s, dur, p.task))
        ready_at = max(ready_at, s + dur)
    return ready_at, bookings


# --------------------------------------------------------------------------
# Pipeline rules: a non-delay simulation of the devices
# --------------------------------------------------------------------------


def _check_pipeline(problem: Problem) -> None:
    """Refuse what the non-delay scheduler cannot follow, naming what can."""
    flexible = [b.name for b in problem.graph.blocks if not b.is_fixed]
    if flexible:
        raise UnsupportedFeatureError(
            f"list scheduling needs a fixed placement, but blocks {flexible[:3]} have several options; "
            f"search them with schedsearch.search.optimal"
        )
    if problem.fixed_orders:
        raise UnsupportedFeatureError(
            "list scheduling does not follow fixed orders; search the problem with schedsearch.search.optimal"
        )


@attrs.frozen(kw_only=True)
class _GroupTemplate:
    """A declared overlap that saves time, as the non-delay scheduler forms it.

    Members linked by an edge form one component and share the micro-batch;
    ``internal`` counts, per member, its predecessors inside the group.
    """

    tag: str
    duration: int
    components: tuple[tuple[str, ...], ...]
    internal: Mapping[str, int]
    blocks: tuple[str, ...]


def _group_templates(problem: Problem) -> dict[str, list[_GroupTemplate]]:
    """Per device: the declared overlaps that save time there (lasting less than their members together).

    The list scheduler forms a group only from members of one micro-batch
    per component, where a component joins the members linked by an edge
    and those the overlap's ``same_microbatch`` sets join (a restriction of
    what the model allows, never more). An overlap with an edge between two
    members against its block order cannot run (the model's rule) and is
    never formed.
    """
    graph = problem.graph
    edges = {(e.src, e.dst) for e in graph.edges}
    out: dict[str, list[_GroupTemplate]] = {}
    for ov in problem.overlaps:
        least = sum(graph.block(b).min_duration for b in ov.blocks)
        if ov.duration >= least:
            continue  # the group saves nothing: run the members alone
        order = {b: i for i, b in enumerate(ov.blocks)}
        if any((a, b) in edges and order[a] > order[b] for a in ov.blocks for b in ov.blocks):
            continue  # a group against an edge cannot run
        joined = UnionFind(ov.blocks)
        for a in ov.blocks:
            for b in ov.blocks:
                if (a, b) in edges:
                    joined.union(a, b)
        for members in ov.same_microbatch:
            joined.union(*members)
        comps: dict[str, list[str]] = {}
        for b in ov.blocks:
            comps.setdefault(joined[b], []).append(b)
        template = _GroupTemplate(
            tag=ov.name or "+".join(ov.blocks), duration=ov.duration,
            components=tuple(tuple(c) for c in comps.values()),
            internal={b: sum((a, b) in edges for a in ov.blocks) for b in ov.blocks}, blocks=tuple(ov.blocks),
        )
        for d in graph.block(ov.blocks[0]).options[0].devices:
            out.setdefault(d, []).append(template)
    return out


def _pipeline_plan(problem: Problem, rule: PipelineRule, *, form_groups: bool, name: str,
                   deadline: Deadline | None = None) -> Schedule | None:
    """The non-delay list schedule under ``rule`` (validated), or None when memory deadlocks
    or ``deadline`` expires."""
    _check_pipeline(problem)
    if deadline is not None and deadline.expired():
        return None
    run = _NonDelayRun(problem, rule, _group_templates(problem) if form_groups else {})
    for events in itertools.count():
        if not run.remaining:
            break
        if deadline is not None and events % _CLOCK_EVERY == _CLOCK_EVERY - 1 and deadline.expired():
            return None
        checkpoint()
        run.start_what_fits()
        if not run.remaining:
            break
        if not run.advance():
            return None  # nothing runs and nothing will become ready: memory deadlock
        run.finish_ended()
    schedule = Schedule(tasks=run.placed, transfers=run.transfers, name=name or f"list schedule ({rule})")
    assert_valid(problem, schedule, "list schedule")
    return schedule


#: Events of a list simulation between two looks at the caller's clock.
_CLOCK_EVERY = 256


class _NonDelayRun:
    """The state of one non-delay simulation: the clock, the devices, memory and the ready pools."""

    def __init__(self, problem: Problem, rule: PipelineRule, templates: Mapping[str, list[_GroupTemplate]]) -> None:
        graph = problem.graph
        self.problem = problem
        self.templates = templates
        self.blocks = graph.by_name()
        self.succs = graph.successors()
        preds = graph.predecessors()
        self.n = problem.num_microbatches
        self.devices = problem.cluster.device_names
        self.cap = {d: problem.capacity(d) for d in self.devices}
        self.level = {d: problem.initial_memory_of(d) for d in self.devices}
        self.free = {d: 0 for d in self.devices}
        self.devs_of = {b.name: b.options[0].devices for b in graph.blocks}
        self.routes: dict[tuple[str, str], tuple[int, tuple]] = {}
        for e in graph.edges:
            a, b = self.devs_of[e.src], self.devs_of[e.dst]
            if e.size > 0 and not set(a) & set(b):
                self.routes[(e.src, e.dst)] = (e.size, problem.cluster.channels_between(a[0], b[0]))
        # (each task instance counted as work: at 400,000 of them these take a second on a loaded machine)
        self.key_of = {(b.name, m): rule.key(b.kind, b.stage, m) for b in graph.blocks
                       for m in counted(range(self.n))}
        self.waiting = {(b.name, m): len(preds[b.name]) for b in graph.blocks for m in counted(range(self.n))}
        self.ready_at: dict[TaskKey, int] = {task: problem.release_of(*task) for task in counted(self.waiting)}
        # each device's ready tasks, one heap per block (the tasks of a block share their devices and
        # memory, so they can start or not alike), ranked by (rule key, order of arrival in the pool);
        # tasks whose data or release is still to come wait in ``later`` by the time they become ready
        self.pool: dict[str, dict[str, list[tuple[tuple[int, int, int], int, TaskKey]]]] = {d: {} for d in self.devices}
        self.later: list[tuple[int, int, str, TaskKey]] = []
        self.arrivals = itertools.count()
        self.t = 0
        for task, count in counted(self.waiting.items()):
            if count == 0:
                for d in self.devs_of[task[0]]:
                    self._join_pool(d, task)
        self.scheduled: set[TaskKey] = set()
        self.placed: list[TaskInstance] = []
        self.transfers: list[Transfer] = []
        self.channels: dict[str, Timeline] = {c.name: Timeline() for c in problem.cluster.channels}
        self.running: list[tuple[int, int, TaskKey]] = []  # (end, tiebreak, task)
        self.counter = itertools.count()
        self.remaining = len(self.waiting)

    def _join_pool(self, d: str, task: TaskKey, arrival: int | None = None) -> None:
        """``task`` (its predecessors done) joins ``d``'s pool: ready now, or waiting in ``later``."""
        arrival = next(self.arrivals) if arrival is None else arrival
        if self.ready_at[task] > self.t:
            heapq.heappush(self.later, (self.ready_at[task], arrival, d, task))
        else:
            heapq.heappush(self.pool[d].setdefault(task[0], []), (self.key_of[task], arrival, task))

    def start_what_fits(self) -> None:
        """Start work on every free device, best-ranked first, until nothing more can start now."""
        started = True
        while started:
            started = False
            for d in self.devices:
                if self.free[d] > self.t:
                    continue
                best = self._best_ready(d)
                if self.templates:
                    group = self._group_at(d, best)
                    if group is not None:
                        self._start(*group)
                        started = True
                        continue
                if best is None:
                    continue
                self._start([best], self.problem.durations(*best)[0], None)
                started = True

    def advance(self) -> bool:
        """Move the clock to the next end or release; False when none is to come (a deadlock)."""
        upcoming = [self.running[0][0]] if self.running else []
        if self.later:
            upcoming.append(self.later[0][0])
        if not upcoming:
            return False
        self.t = min(upcoming)  # every event still to come lies after t
        while self.later and self.later[0][0] <= self.t:
            _, arrival, d, task = heapq.heappop(self.later)
            self._join_pool(d, task, arrival)
        return True

    def finish_ended(self) -> None:
        """End the tasks that are done by now: their workspace returns, their data leave for their successors."""
        while self.running and self.running[0][0] <= self.t:
            end, _, task = heapq.heappop(self.running)
            b = self.blocks[task[0]]
            for d in self.devs_of[task[0]]:
                self.level[d] -= b.workspace
            for e in self.succs[task[0]]:
                self._hand_over(e, task[1], end)

    def _hand_over(self, e: Edge, microbatch: int, end: int) -> None:
        """Edge ``e`` of ``microbatch`` whose source ended at ``end``: the
        transfer if it needs one, and the successor joins its devices'
        pools once its last predecessor is done."""
        nxt = (e.dst, microbatch)
        self.waiting[nxt] -= 1
        if nxt in self.scheduled:
            return  # ran in the same group: the edge was the group's internal order
        arrive = end
        route = self.routes.get((e.src, e.dst))
        if route is not None:
            size, options = route
            channel, begin, length = earliest_finish(
                ((ch.name, ch.transfer_time(size), (self.channels[ch.name],)) for ch in options), end)
            self.channels[channel].book(begin, length)
            self.transfers.append(Transfer(src=e.src, dst=e.dst, microbatch=microbatch, channel=channel,
                                           start=begin, end=begin + length))
            arrive = begin + length
        self.ready_at[nxt] = max(self.ready_at[nxt], arrive)
        if self.waiting[nxt] == 0:
            for d in self.devs_of[e.dst]:
                self._join_pool(d, nxt)

    def _best_ready(self, d: str) -> TaskKey | None:
        """The best-ranked task of ``d``'s pool that can start now (ready, devices free, fits in memory)."""
        best = None
        for block, heap in self.pool[d].items():
            while heap and heap[0][2] in self.scheduled:
                heapq.heappop(heap)  # started already (from another of its devices' pools)
            if not heap or any(self.free[e] > self.t for e in self.devs_of[block]) or not self._fits([heap[0][2]]):
                continue
            if best is None or heap[0] < best:
                best = heap[0]
        return None if best is None else best[2]

    def _fits(self, members: list[TaskKey]) -> bool:
        """Whether ``members`` (on one device set) start within every capacity."""
        need = sum(self.blocks[b].memory + self.blocks[b].workspace for b, _ in members)
        return all(self.cap[d] is None or self.level[d] + need <= self.cap[d] for d in self.devs_of[members[0][0]])

    def _group_at(self, d: str, lead: TaskKey | None) -> tuple[list[TaskKey], int, str] | None:
        """The best-ranked group instance that can start on ``d`` now and holds
        ``lead`` (the single task the rule would start): its members, duration and tag."""
        if lead is None:
            return None
        best = None
        for template in self.templates.get(d, ()):
            if lead[0] not in template.blocks or any(self.free[e] > self.t for e in self.devs_of[template.blocks[0]]):
                continue
            chosen = self._group_members(template, lead)
            if chosen is None or not self._fits(chosen):
                continue
            key = min(self.key_of[task] for task in chosen)
            if best is None or key < best[0]:
                members = sorted(chosen, key=lambda task: template.blocks.index(task[0]))
                # the model's rule: a group lasts its declared duration, or its
                # longest member instance's own duration when that is longer
                longest = max(self.problem.durations(b, m)[0] for b, m in members)
                best = (key, members, max(template.duration, longest), template.tag)
        return None if best is None else best[1:]

    def _group_members(self, template: _GroupTemplate, lead: TaskKey) -> list[TaskKey] | None:
        """Per component of ``template``, the best-ranked micro-batch whose
        members are all ready now (the lead's own for its component), or None."""
        chosen: list[TaskKey] = []
        for comp in template.components:
            pick = None
            for m in ([lead[1]] if lead[0] in comp else range(self.n)):
                tasks = [(b, m) for b in comp]
                if all(task not in self.scheduled and self.waiting[task] == template.internal[task[0]]
                       and self.ready_at[task] <= self.t for task in tasks):
                    key = min(self.key_of[task] for task in tasks)
                    if pick is None or key < pick[0]:
                        pick = (key, tasks)
            if pick is None:
                return None
            chosen.extend(pick[1])
        return chosen

    def _start(self, members: list[TaskKey], duration: int, tag: str | None) -> None:
        """Start ``members`` (one task, or a group tagged ``tag``) now for ``duration``."""
        t = self.t
        for task in members:
            b = self.blocks[task[0]]
            for e in self.devs_of[task[0]]:
                self.level[e] += b.memory + b.workspace  # it leaves the pools when next seen there (scheduled)
            self.scheduled.add(task)
            self.placed.append(TaskInstance(block=task[0], microbatch=task[1], devices=self.devs_of[task[0]],
                                            start=t, end=t + duration, overlap=tag))
            heapq.heappush(self.running, (t + duration, next(self.counter), task))
            self.remaining -= 1
        for e in self.devs_of[members[0][0]]:
            self.free[e] = t + duration
