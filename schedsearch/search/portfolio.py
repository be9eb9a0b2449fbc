"""One front door: :func:`solve` picks the engines, proves what it can.

A user describes a problem; :func:`solve` runs a portfolio within one time
limit and returns one :class:`~schedsearch.result.SearchResult` that says
which engine found the plan and which proved the bound.

The time level (makespan, or the longest device span):

1. **Warm starts**: the user's plans, each checked by the validator.
2. **Handcrafted plans**: every published schedule whose placement matches
   the problem, at every size (they are linear in the task instances),
   kept only when the validator accepts it (memory limits included).
   Nothing needs naming: the placement is read off the problem, and the
   constructions of its own family run first (one stage per device: the
   zero-bubble greedy where backwards are split, then ZB-H1, 1F1B, GPipe;
   the V mapping: the V stable pattern of V-Half or V-Min that fits the
   memory, then ZB-V, V-Half, V-Min; the loop mapping: interleaved 1F1B
   or ZB; two pipelines: Chimera, DualPipe; DualPipe and DualPipeV first
   where forwards pair with backwards), then every other one (each
   refuses a placement not its own at once). The first runs whatever the
   clock says; each later one only when half the time left covers it at
   the slowest rate seen.
3. **Bound**: the analytic lower bound (critical path, per-device work and
   forced idle, memory), with the assignment LP where blocks choose among
   options and the model is small. It is computed right after the first
   plan is offered (after the warm starts when one is given, else after
   the first construction that gives a plan, else after the
   constructions), so the first plan is reported at a construction's cost.
   A plan that meets it ends the time level at once: a construction's
   later variants and the later constructions do not run (when a memory
   level follows, they still run: they are its candidates, e.g. 1F1B's
   peak among plans of GPipe's makespan).
4. **List schedules**: the pipeline priority rules
   (:mod:`~schedsearch.search.list_scheduling`, on the problem with its
   redundant overlap declarations dropped; each simulation checks the
   clock) and, where those do not apply, HEFT's rules.
5. **Repetend**: where the problem is periodic (fixed placements, no
   transfers, identical micro-batches) and has enough micro-batches for a
   steady state to pay off, :func:`~schedsearch.search.repetend` with half
   the time left.
6. **Exact search**, warm-started from the best plan so far: a single
   instance of a graph (job shops, operator graphs) through
   :func:`~schedsearch.search.jobshop`'s exact phase, pipelines through
   :func:`~schedsearch.search.scale_search`'s (periodic ties, and mirror
   ties between mirrored directions, on models too large to search whole:
   they restrict the search, so a plan found under them is proven only by
   the bound); the solver's bound joins the analytic one.

It stops as soon as a plan meets the proven bound. Every phase checks the
clock; the exact search is skipped (the result's ``notes`` say so) when the
problem has more task instances than it can model in the time left. With
a plan at hand, the list phase starts only when the time left covers one
list schedule (:data:`LIST_S_PER_TASK` per task instance) and the
repetend phase only when its one-second floor is left; the capped V
greedy of the list phase only when its share covers one candidate and
the run of its orders. The per-task-instance estimates count a member of
an overlapped group :data:`GROUPED_TASK_WEIGHT` times
(:func:`estimated_tasks`). Each skip is a note.

In deterministic mode (``deterministic=True``) every limit is reproducible:
the solver searches run under deterministic-time limits (CP-SAT's
``max_deterministic_time``, the time limit read as deterministic time),
the phases share the budget by the deterministic time those searches used
(:class:`~schedsearch.options.Deadline`), the list rules all run (no
wall-clock cut), and the repetend phase, whose inner searches are cut by
wall-clock slices, is left out. The same problem, options and seed then
give the same result on any machine, engine or load.

The memory level (the worst device's peak, among plans of the least time),
once the time level is proven: the least peak among the plans of that
time, then a downward walk of capacities, each step answered by a list
schedule or (on models small enough to build whole) an exact feasibility
search with the time at most the first level's value; a step proven
infeasible proves the level, and so does a capacity no order fits
(:meth:`~schedsearch.problem.Problem.memory_refusal`).
``objective=("peak_memory", "makespan")`` walks the capacity first and then
minimises the time under it.

Every plan returned has passed the validator against the user's problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import attrs

from schedsearch.deadline import set_aside, stopping, unstopped
from schedsearch.errors import DeadlineExceeded, InvalidOptionsError, InvalidProblemError, SchedSearchError
from schedsearch.heap import survivors_frozen
from schedsearch.options import Rule, SearchOptions
from schedsearch.problem import Problem
from schedsearch.result import Level, SearchResult, Status
from schedsearch.rewrite import resolved_capacities, with_capacities
from schedsearch.schedule import Schedule, objective_value, peak_memory
from schedsearch.search.run import Provenance, Run, RunView, Source
from schedsearch.validate import validate

# what every call's first plan and bound need, loaded with ``solve`` rather than inside its first call (an
# import cannot be stopped: on a loaded machine these took a third of a one-second limit)
import schedsearch.bounds.analytic  # noqa: E402,F401
import schedsearch.bounds.schedule_bounds  # noqa: E402,F401
import schedsearch.handcrafted.zb_greedy  # noqa: E402,F401

__all__ = ["solve", "SOLVE_OBJECTIVES", "ENGINES", "default_objective"]

#: Objective names :func:`solve` accepts, alone or as a lexicographic tuple.
SOLVE_OBJECTIVES = ("makespan", "max_span", "peak_memory")

#: Engines of the portfolio, in the order they run.
ENGINES = ("list", "handcrafted", "repetend", "exact")

#: The assignment LP joins the bound below this many task instances (it is
#: cheap there and only matters for flexible placements).
LP_BOUND_TASKS = 2000

#: Seconds per task instance a handcrafted construction is assumed to take before one has run (a
#: construction, its simulation and its validation at 50,000-100,000 task instances take 9-12 us each on
#: one core, DualPipeV's 16): at 400,000 task instances about 4 s.
HANDCRAFTED_S_PER_TASK = 1e-5

#: Seconds per task instance assumed for the list phase's first list schedule with the analytic bound
#: of the problem it searches and its validation (16 us at 288,000 task instances on 4 ranks, one core).
LIST_S_PER_TASK = 2e-5

#: What a task instance of a block in a declared overlapped group counts in the per-task-instance
#: estimates of a construction, its validation and a plan's figures (:func:`estimated_tasks`): drawing the
#: groups, running them and checking them costs more per instance (at 288,000 task instances on 4 ranks,
#: one core: DualPipeV's F&B groups 11.4 us per task instance for the construction and its validation
#: against 1F1B's 8.8 us, figures 1.0 against 0.6 us; the analytic bound costs no more with groups).
GROUPED_TASK_WEIGHT = 1.3

#: The repetend search runs from this many micro-batches up (below it the
#: exact search settles the problem faster than a steady state pays off).
REPETEND_MIN_MICROBATCHES = 12


def default_objective(problem: Problem) -> tuple[str, ...]:
    """The problem's time objective, then the peak memory when the problem tracks memory.

    >>> from schedsearch.placements import vshape
    >>> default_objective(vshape(2, 4))
    ('makespan', 'peak_memory')
    """
    first = "max_span" if problem.objective == "max_span" else "makespan"
    tracks_memory = any(b.memory or b.workspace for b in problem.graph.blocks)
    return (first, "peak_memory") if tracks_memory else (first,)


def _objectives(problem: Problem, objective: str | Sequence[str] | None) -> tuple[str, ...]:
    """The levels of ``objective`` (checked at the door: :func:`solve`'s rules), the default when None."""
    if objective is None:
        return default_objective(problem)
    names = (objective,) if isinstance(objective, str) else tuple(objective)
    if "makespan" in names and "max_span" in names:
        raise InvalidOptionsError(f"solve: 'objective' may hold one time objective (makespan or max_span), got {names}")
    return names


def _peak(problem: Problem, schedule: Schedule) -> int:
    return max(peak_memory(problem, schedule).values(), default=0)


@attrs.define
class _Portfolio(RunView):
    """What one call of :func:`solve` adds to its run: the engines asked for, whether a memory level
    follows, and the phases' times. The run holds the problem, options, budget, pool and bound."""

    run: Run
    engines: frozenset[str]
    #: whether a memory level follows the time level (then every construction runs: one that meets the
    #: time bound may still hold more memory than another, e.g. GPipe and 1F1B)
    memory_level: bool = False
    #: a level inside the call (the time level under the capacity the memory walk chose): the user's warm
    #: starts were checked at the call's door, here only those that fit the level's capacities are offered
    inner: bool = False
    phases: dict[str, float] = attrs.field(factory=dict)
    #: whether the time level's bound has been computed (:func:`_bound`, right after the first plan)
    bounded: bool = False
    #: how the exact search ended (None: it did not run) and the ties that restricted it
    exact_status: Status | None = None
    ties: int = 0


    def offer(self, schedule: Schedule | None, provenance: Provenance, validated: bool = False) -> None:
        """Keep ``schedule`` when it is a valid plan of the problem (reported when it improves the best).

        ``validated``: the engine has already passed it through the
        validator against this very problem (it is validated once).
        """
        before = self.run.best
        plan = self.run.offer(schedule, provenance, validated=validated, report=False)
        if plan is not None and (before is None or plan.value < before.value):
            self.report(provenance.engine, plan.value)

    def report(self, phase: str, incumbent: int | None = None) -> None:
        """Send the phase, the best plan's value and engine (its source) and the bound so far."""
        best = self.best
        inc = incumbent if incumbent is not None else (best.value if best else None)
        self.options.report(phase, inc, self.bound or None, self.deadline.t0, source=best.engine if best else None)

    def note(self, text: str) -> None:
        """Say in the result's ``notes`` what the call left out and why."""
        self.run.note(text)

    def timed(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds


def estimated_tasks(problem: Problem) -> float:
    """The task instances as the per-task-instance time estimates count them: each instance of a block that
    is a member of a declared overlapped group counts :data:`GROUPED_TASK_WEIGHT`, the others 1.

    Examples
    --------
    >>> from schedsearch.placements import dualpipev, vshape
    >>> from schedsearch.search.portfolio import estimated_tasks
    >>> estimated_tasks(vshape(4, 8)), round(estimated_tasks(dualpipev(4, 8)), 6)  # 64 plain; 192 all grouped
    (64.0, 249.6)
    """
    grouped = {b for ov in problem.overlaps for b in ov.blocks}
    per_microbatch = len(problem.graph.blocks) + (GROUPED_TASK_WEIGHT - 1.0) * len(grouped)
    return float(problem.num_microbatches * per_microbatch)


def _small(problem: Problem) -> bool:
    """Small enough to build a whole exact model (or every handcrafted plan) within a fraction of a second or so."""
    from schedsearch.search.scale.driver import TIES_AUTO_TASKS

    return problem.num_tasks <= TIES_AUTO_TASKS


def _lp_applies(problem: Problem) -> bool:
    return problem.objective == "makespan" and problem.num_tasks <= LP_BOUND_TASKS \
        and any(len(b.options) > 1 for b in problem.graph.blocks)


def _time_bound(run: Run) -> tuple[int, str]:
    """The best cheap lower bound of the run's time objective, and what gave it."""
    problem = run.problem
    analytic = run.analytic
    value, engine = analytic.value, "analytic"
    if _lp_applies(problem):
        full = run.facts.lower_bound(problem)
        if full.value > value:
            value, engine = full.value, "analytic (assignment LP)"
    return value, engine


def _handcrafted(problem: Problem, left: Callable[[], float | None] = lambda: None,
                 work: Callable[[], int | None] = lambda: None
                 ) -> Iterator[tuple[Callable[[], Iterable[tuple[Schedule, str]]], str]]:
    """Every handcrafted construction that may match ``problem``: those of its placement's own family
    first (:func:`_own_constructions`), then the others in the library's order.

    Yields (build, name): ``build()`` gives its schedules (each validated
    against ``problem`` by the construction, as every handcrafted
    construction does; possibly lazily, each built when the iteration
    reaches it) with the engine names they are offered under, or raises
    :class:`~schedsearch.errors.SchedSearchError` when the placement is
    not the construction's. ``left()``: the seconds left (None: no
    limit), read by the constructions that try variants (the zero-bubble
    greedy's are tried while they fit in it); ``work()``: the work the
    constructions that try candidates (V-Half, V-Min) may spend, in task
    instances (None: their own default).
    """
    from schedsearch.handcrafted.families import SCHEDULES
    from schedsearch.handcrafted.zb_greedy import zb_greedy_plans

    def greedy() -> Iterable[tuple[Schedule, str]]:
        # the variant best for the problem's own objective comes first
        objective = "max_span" if problem.objective == "max_span" else "makespan"
        plans = zb_greedy_plans(problem, objective=objective, time_limit_s=left())
        return ((schedule, f"handcrafted zero-bubble greedy ({variant})") for variant, schedule in plans)

    def build(spec: Any) -> Schedule:
        if spec.generate_within is not None:
            return spec.generate_within(problem, dict(spec.defaults), work())
        return spec.generate(problem, dict(spec.defaults))

    every: dict[str, tuple[Callable[[], Iterable[tuple[Schedule, str]]], str]] = {
        ZB_GREEDY: (greedy, "zero-bubble greedy"),
        V_PATTERN: ((lambda: _v_pattern(problem)), "V stable pattern"),
    }
    for key, spec in SCHEDULES.items():
        every[key] = (lambda spec=spec: [(build(spec), f"handcrafted {spec.title}")]), spec.title
    for key in dict.fromkeys((*_own_constructions(problem), *every)):
        yield every[key]


#: The keys of the two constructions outside :data:`~schedsearch.handcrafted.families.SCHEDULES`.
ZB_GREEDY, V_PATTERN = "zero-bubble greedy", "V stable pattern"


def _own_constructions(problem: Problem) -> tuple[str, ...]:
    """The constructions written for ``problem``'s placement, in the order to try them (keys of
    :data:`~schedsearch.handcrafted.families.SCHEDULES`, :data:`ZB_GREEDY`, :data:`V_PATTERN`).

    The placement is read off the problem (one pass over its blocks): its
    layout (one pipeline or two opposite ones; one stage per device, the
    ``"loop"`` mapping with several, or the ``"v"`` mapping) and whether
    backwards are split. The families of that layout give their published
    schedules, the one of the problem's backward style first; before them
    the greedy constructions of the public heuristics of that placement:
    the zero-bubble greedy (one stage per device, split backwards) and the
    V stable pattern (the V mapping, split backwards). Where the problem
    pairs a forward with a backward (an ``F&B`` overlap) the families that
    do come first (DualPipe, DualPipeV). Empty for a problem
    that is no pipeline or has another mapping (every construction then
    runs in the library's order, each refusing it at once).

    >>> from schedsearch.placements import vshape, vshape_chunks, zero_bubble
    >>> _own_constructions(vshape(4, 8))
    ('1f1b', 'zb-h1', 'gpipe')
    >>> _own_constructions(zero_bubble(4, 8))
    ('zero-bubble greedy', 'zb-h1', '1f1b', 'gpipe')
    >>> _own_constructions(vshape_chunks(4, 8))[:3]
    ('V stable pattern', 'zb-v', 'v-half')
    """
    from schedsearch.handcrafted.actions import pipeline_view
    from schedsearch.handcrafted.families import ALL_FAMILIES
    from schedsearch.placements.stages import stage_mapping

    try:
        view = pipeline_view(problem)
    except InvalidProblemError:
        return ()
    p = len(problem.cluster.devices)
    if list(view.pipelines) != [""]:
        layout, chunks = "bidirectional", 1
    else:
        mapping = view.mapping()
        S = len(mapping)
        if len(set(mapping)) == S:  # every stage on its own device (not necessarily every device used)
            layout, chunks = "loop", 1
        elif S == 2 * p and mapping == stage_mapping("v", p, S):
            layout, chunks = "v", 2
        elif S % p == 0 and mapping == stage_mapping("loop", p, S):
            layout, chunks = "loop", S // p
        else:
            return ()
    kinds = {b.name: b.kind for b in problem.graph.blocks}
    pairs = any(len({kinds[b] == "F" for b in ov.blocks}) == 2 for ov in problem.overlaps)  # an F&B overlap
    families = sorted((fam for fam in ALL_FAMILIES.values() if fam.layout == layout and chunks in fam.chunks),
                      key=lambda fam: fam.overlap != pairs)
    own = []
    if not pairs and view.split and (layout, chunks) == ("loop", 1):
        own.append(ZB_GREEDY)
    if not pairs and view.split and layout == "v":
        own.append(V_PATTERN)
    for fam in families:  # the family's schedule of the problem's backward style first
        own += [v.schedule for v in fam.variants if v.split_backward == view.split and v.schedule]
        own += fam.schedules
    return tuple(dict.fromkeys(own))


def _v_pattern(problem: Problem) -> Iterable[tuple[Schedule, str]]:
    """The paper's V-Half or V-Min stable pattern that fits the capacities: a V placement's quick first plan
    under a memory cap (the public greedy's cost and quality; V-Half and V-Min then try every construction).
    Nothing without a capacity (ZB-V is the plan there)."""
    from schedsearch.handcrafted.v_capped import v_pattern_fit

    if all(d.memory is None for d in problem.cluster.devices):
        return []
    return [(v_pattern_fit(problem), "handcrafted V stable pattern")]


def _warm_starts(pf: _Portfolio) -> None:
    if pf.inner:
        for i, schedule in enumerate(pf.options.warm_starts):
            if not validate(pf.problem, schedule):  # a warm start over this level's capacities is left out
                pf.offer(schedule, Provenance.warm_start(i), validated=True)  # checked just now
        return
    for i, schedule in enumerate(pf.options.checked_warm_starts(pf.problem, "solve")):
        pf.offer(schedule, Provenance.warm_start(i), validated=True)  # checked just now


def _handcrafted_plans(pf: _Portfolio, first_plan: Callable[[_Portfolio], None] | None = None) -> None:
    """Every construction whose placement matches, until one meets the bound (all of them when a memory
    level follows).

    They are linear in the task instances, so they run at every size; each
    starts only when the time left covers it at the slowest rate (seconds
    per task instance) seen so far (before any has run,
    :data:`HANDCRAFTED_S_PER_TASK`): all the time left while the call has
    no plan, half of it once it has one (the rest is the list schedules'
    and the search's). In deterministic mode every construction runs.

    ``first_plan(pf)`` runs once, right after the call's first plan is
    offered when the call had none (the time level's bound: a plan that
    meets it ends the constructions at once, a construction's later
    variants included); its time counts neither as a construction's nor in
    the ``"handcrafted"`` phase.
    """
    t = pf.deadline.elapsed
    tasks = max(1.0, estimated_tasks(pf.problem))  # the rates below are per task instance so counted
    rate = 0.0  # seconds per task instance of the slowest construction so far
    wall = not pf.options.deterministic
    skipped = False
    hook = 0.0  # the time first_plan took
    from schedsearch.handcrafted.v_capped import V_TASKS_PER_S

    def work() -> int | None:
        # the candidates' work (task instances at V_TASKS_PER_S) within the time left (all of it while the call
        # has no plan, half once it has one); the budget's time left, so deterministic in deterministic mode
        left = pf.deadline.left()
        return None if left is None else int(max(0.0, left if pf.best is None else left / 2) * V_TASKS_PER_S)

    for build, name in _handcrafted(pf.problem, lambda: pf.deadline.left() if wall else None, work):
        if pf.closed and not pf.memory_level:
            break
        left = pf.deadline.left()
        need = (rate or HANDCRAFTED_S_PER_TASK) * tasks  # a wall-clock estimate: not in deterministic mode
        if left is not None and wall and need > (left if pf.best is None else left / 2):
            if not skipped:
                pf.note(f"handcrafted constructions skipped from {name} on: each would need about {need:.1f} s, "
                        f"{max(left, 0):.1f} s were left")
            skipped = True
            continue
        start = pf.deadline.elapsed
        spent = 0.0  # on first_plan during this construction
        try:
            plans = iter(build())
        except DeadlineExceeded:
            raise
        except SchedSearchError:
            continue  # the placement is not this construction's
        while True:
            try:
                schedule, engine = next(plans)  # a lazy construction builds its next plan here
            except StopIteration:
                break
            except DeadlineExceeded:
                raise
            except SchedSearchError:  # pragma: no cover - a lazy construction checks its placement at the call
                break  # a later plan it cannot build: the ones it gave are kept
            had_plan = pf.best is not None
            # every construction validates its plan (run_actions, or the validator on the builder's own times)
            pf.offer(schedule, Provenance(source=Source.HANDCRAFTED, engine=engine), validated=True)
            if first_plan is not None and not had_plan and pf.best is not None:
                at = pf.deadline.elapsed
                first_plan(pf)
                spent += pf.deadline.elapsed - at
            if pf.closed and not pf.memory_level:
                break  # its later plans (the greedy's other variant) are not built
        hook += spent
        rate = max(rate, (pf.deadline.elapsed - start - spent) / tasks)
    pf.timed("handcrafted", pf.deadline.elapsed - t - hook)


def _known_plans(pf: _Portfolio) -> None:
    _warm_starts(pf)
    if "handcrafted" in pf.engines:
        _handcrafted_plans(pf)


def _list_plans(problem: Problem, pf: _Portfolio, share: float) -> list[tuple[Schedule, Provenance]]:
    """List schedules of ``problem``: the pipeline rules where they apply, and HEFT's rules.

    Every plan returned has passed the validator against ``problem``.
    """
    from schedsearch.errors import UnsupportedFeatureError
    from schedsearch.search.list_scheduling import heft
    from schedsearch.search.scale.driver import search_at_scale

    out: list[tuple[Schedule, Provenance]] = []
    try:
        child = pf.run.child(problem, time_limit_s=pf.deadline.slice(share, floor_s=0.2), silent=True)
        result = search_at_scale(child, exact=False)
        for text in result.notes:  # what the list phase left out (the capped V greedy)
            if text not in pf.run.notes:
                pf.note(text)
        if result.schedule is not None and child.best is not None:
            out.append((result.schedule, child.best.provenance))
        if problem is pf.problem and result.lower_bound is not None and result.lower_bound > pf.bound:
            # the analytic bound it computed on the problem (its redundant overlaps dropped)
            pf.run.raise_bound(result.lower_bound, "analytic")
    except UnsupportedFeatureError:
        pass  # flexible placements or fixed orders: HEFT's rules handle them
    if not out and (_small(problem) or not all(b.is_fixed for b in problem.graph.blocks)) \
            or problem.num_microbatches == 1:
        listed = heft(problem)
        if listed.schedule is not None:
            out.append((listed.schedule, Provenance(source=Source.LIST, engine=listed.engine)))
    return out


def _list_schedules(pf: _Portfolio) -> None:
    """The list phase (:func:`_list_plans`); with a plan at hand on the wall clock, only when the time left
    covers one list schedule with its bound and validation (:data:`LIST_S_PER_TASK`), else a note says so."""
    left = pf.deadline.left()
    if pf.best is not None and left is not None and not pf.options.deterministic:
        tasks = pf.problem.num_tasks
        need = LIST_S_PER_TASK * tasks
        if need > left:
            pf.note(f"list schedules skipped: at {tasks} task instances one needs about {need:.1f} s with its "
                    f"bound and validation, {max(left, 0.0):.1f} s were left")
            return
    t = pf.deadline.elapsed
    for schedule, provenance in _list_plans(pf.problem, pf, 1.0):
        pf.offer(schedule, provenance, validated=True)
    pf.timed("list", pf.deadline.elapsed - t)


def _repetend_applies(run: Run) -> bool:
    from schedsearch.encode.repetend import repetend_support_error

    problem = run.problem
    if problem.objective != "makespan" or problem.num_microbatches < REPETEND_MIN_MICROBATCHES:
        return False
    return repetend_support_error(run.reduced) is None


#: The least time the repetend search is given: with a plan at hand it does not start with less left.
_REPETEND_FLOOR_S = 1.0


def _repetend(pf: _Portfolio, share: float) -> None:
    from schedsearch.search.repetend_search import _check_supported, repetend_search

    t = pf.deadline.elapsed
    limit = pf.deadline.slice(share, floor_s=_REPETEND_FLOOR_S)
    # on the wall clock with the backend's default parameters, reporting nothing (as it always ran here)
    child = pf.run.child(pf.run.reduced, time_limit_s=limit, silent=True, deterministic=False, log=False,
                         backend_params={})
    _check_supported(child.problem)
    result = repetend_search(child)
    # INFEASIBLE here only says no repetend completes: not a proof about the problem
    if result.schedule is not None:
        pf.offer(result.schedule, Provenance(source=Source.REPETEND, engine=result.engine))
    pf.timed("repetend", pf.deadline.elapsed - t)


def _exact(pf: _Portfolio) -> Status | None:
    """The exact search from the best plan; returns INFEASIBLE when it proved that no plan exists.

    One instance of a graph (a job shop, an operator graph) goes to
    :func:`~schedsearch.search.jobshop`'s exact phase (CP-SAT's stronger
    no-overlap propagation where every placement is fixed); pipelines go to
    :func:`~schedsearch.search.scale_search`'s (periodic and mirror ties
    on large ones).
    """
    from schedsearch.search.jobshop_search import jobshop_search
    from schedsearch.search.scale.driver import _EXACT_TASKS_PER_S, search_at_scale

    t = pf.deadline.elapsed
    best = pf.best
    allotted = pf.deadline.left()
    tasks = pf.problem.num_tasks
    if best is not None and allotted is not None and tasks > _EXACT_TASKS_PER_S * allotted:
        # the same rule as the scale search's, decided before it would build and check anything
        pf.note(f"exact search skipped: {tasks} task instances need about {tasks / _EXACT_TASKS_PER_S:.0f} s "
                f"to model and search, {allotted:.1f} s were left")
        return None
    # the sub-search's backend searches are charged to this run's budget as they go (one of a backend that
    # reports no deterministic time: its whole limit); a sub-search that runs none is charged nothing
    child = pf.run.child(time_limit_s=allotted, warm_starts=(best.schedule,) if best else (), silent=True)
    if pf.problem.num_microbatches == 1 and pf.problem.objective == "makespan":
        result = jobshop_search(child, list_baseline=False)
    else:
        result = search_at_scale(child, rules=(), extra_ties=_mirror_ties(pf.run))
    pf.timed("exact", pf.deadline.elapsed - t)
    pf.exact_status = result.exact_status if result.exact_status is not None else result.status
    pf.ties = result.ties
    if result.status is Status.INFEASIBLE:
        return Status.INFEASIBLE
    found = child.best
    if found is not None and found.provenance.source is not Source.WARM_START:
        # the sub-search's pool holds valid plans of this very problem (its result asserted the best)
        pf.offer(found.schedule, found.provenance, validated=True)
    if result.lower_bound is not None and result.lower_bound > pf.bound:
        pf.run.raise_bound(result.lower_bound, f"exact search ({pf.options.backend_name})")
    return None


def _mirror_ties(run: Run) -> tuple:
    """Mirror ties (down and up pipelines start together) on problems large enough for periodic ties.

    Like the periodic ties of :func:`~schedsearch.search.scale_search`, they
    restrict the exact search to a family of plans (a result under them is
    OPTIMAL only when it meets the analytic bound), so they are used only
    where the whole model is too large to search (more than
    :data:`~schedsearch.search.scale.driver.TIES_AUTO_TASKS` task instances)
    and the two directions are mirror images of each other.
    """
    from schedsearch.search.dualpipe import mirror_pairs
    from schedsearch.search.scale import mirror_ties
    from schedsearch.search.scale.driver import TIES_AUTO_TASKS

    reduced = run.reduced
    if reduced.num_tasks <= TIES_AUTO_TASKS or not any(b.name.endswith(".down") for b in reduced.graph.blocks):
        return ()
    try:
        return mirror_ties(reduced, mirror_pairs(reduced))
    except InvalidProblemError:
        return ()  # the directions are not mirror images


def _bound(pf: _Portfolio) -> None:
    """The cheap lower bound of the time objective, unless the list phase computed it (and no LP applies)."""
    pf.bounded = True
    if not pf.bound_engine or _lp_applies(pf.problem):
        t = pf.deadline.elapsed
        bound, engine = _time_bound(pf.run)
        if bound > pf.bound:
            pf.run.raise_bound(bound, engine)
        pf.timed("bound", pf.deadline.elapsed - t)
    pf.report("bound")


def _time_level(pf: _Portfolio) -> Status | None:
    """Run the time level's phases; returns INFEASIBLE when that was proven."""
    _warm_starts(pf)
    # the handcrafted plans at every size (linear in the task instances; they
    # often meet the bound, and they are candidates for the memory level too:
    # 1F1B's peak among plans of the same makespan), then the list schedules.
    # The bound comes right after the first plan (a warm start's, else the first
    # construction's), so that plan is reported at a construction's cost and a
    # plan that meets the bound still ends the level at once; when no plan
    # came, after the constructions
    if pf.best is not None:
        _bound(pf)
    if "handcrafted" in pf.engines:
        _handcrafted_plans(pf, first_plan=_bound)
    if not pf.bounded:
        _bound(pf)
    if "list" in pf.engines and not pf.closed and not pf.deadline.expired():
        _list_schedules(pf)
    if pf.closed or pf.deadline.expired():
        return None
    # the repetend search cuts its inner searches by wall-clock slices: not in deterministic mode
    if "repetend" in pf.engines and not pf.options.deterministic and _repetend_applies(pf.run):
        left = pf.deadline.left()
        if pf.best is not None and left is not None and left < _REPETEND_FLOOR_S:
            pf.note(f"repetend search skipped: it needs at least {_REPETEND_FLOOR_S:.1f} s, {left:.1f} s were left")
        else:
            _repetend(pf, share=0.5 if "exact" in pf.engines else 1.0)
    if pf.closed or pf.deadline.expired(0.5):
        return None
    if "exact" in pf.engines:
        return _exact(pf)
    return None


def _walk_memory(pf: _Portfolio, time_cap: int | None, start: tuple[int, Schedule, Provenance] | None
                 ) -> tuple[tuple[int, Schedule, Provenance] | None, int | None, str]:
    """Least worst-device peak among plans whose time objective is at most ``time_cap``.

    Returns the best (peak, schedule, where it came from), the proven lower bound of
    the peak (None when no step was proven) and what proved it: an exact
    search that found no plan within ``time_cap`` under the next capacity,
    or :meth:`~schedsearch.problem.Problem.memory_refusal` (no order fits
    it), never a constructor's error.
    """
    from schedsearch.search.exact import exact_search

    problem = pf.problem
    t0 = pf.deadline.elapsed
    best = start
    bound: int | None = None
    engine = ""
    while best is not None and not pf.deadline.expired(0.2):
        cap = best[0] - 1
        if cap < 0:
            bound, engine = 0, "capacity check"  # capacities are >= 0
            break
        if problem.memory_refusal(resolved_capacities(problem, cap, cap_existing=True)) is not None:
            bound, engine = cap + 1, "capacity check"  # no order fits (Problem.memory_refusal's proof)
            break
        sub = with_capacities(problem, cap, cap_existing=True)
        pf.report(f"peak memory {cap}")
        found: Schedule | None = None
        how: Provenance | None = None
        if "list" in pf.engines:
            for schedule, provenance in _list_plans(sub, pf, 0.2):  # each validated against sub
                if time_cap is None or objective_value(schedule, problem.objective) <= time_cap:
                    found, how = schedule, provenance
                    break
        if found is None and "exact" in pf.engines and _small(sub) and not pf.deadline.expired(0.2):
            target = pf.run.facts.reduced(sub)
            target = target.with_(objective="feasibility") if target.objective == "makespan" else target
            allotted = pf.deadline.left()
            # the search's time is charged to this run's budget as it goes (a backend that reports no
            # deterministic time: its whole limit)
            child = pf.run.child(target, time_limit_s=allotted, silent=True, log=False)
            result = exact_search(child, upper_bound=time_cap)
            exact = Provenance(source=Source.EXACT, engine=f"exact search ({pf.options.backend_name})")
            if result.status is Status.INFEASIBLE:
                bound, engine = cap + 1, exact.engine  # none within the time cap
                break
            if result.schedule is None:
                break  # timed out: the level stays unproven
            if validate(sub, result.schedule):
                break  # pragma: no cover - a plan of the reduced problem is one of sub; kept as a guard on the claim
            found, how = result.schedule, exact
        if found is None or how is None:
            break
        if time_cap is not None and objective_value(found, problem.objective) > time_cap:
            break  # pragma: no cover - every engine keeps the cap; kept as a guard on the claim
        best = (_peak(problem, found), found, how)
    pf.timed("peak memory", pf.deadline.elapsed - t0)
    return best, bound, engine


def _result(pf: _Portfolio, names: tuple[str, ...], status: Status | None, levels: list[Level],
            chosen: tuple[int, Schedule, Provenance] | None) -> SearchResult:
    stats = dict(pf.stats)
    stats["phases_s"] = {k: round(v, 4) for k, v in pf.phases.items()}
    stats["plans_seen"] = len(pf.plans)
    wall = pf.deadline.elapsed
    facts = {"notes": pf.run.notes, "wall_guard_hit": pf.run.budget.wall_guard_hit, "exact_status": pf.exact_status,
             "ties": pf.ties}
    if status is Status.INFEASIBLE:
        return SearchResult(status=Status.INFEASIBLE, wall_time_s=wall, stats=stats, strategy="solve",
                            objective_name=names[0], problem=pf.problem, backend=pf.options.backend_name,
                            bound_engine=pf.bound_engine, **facts)
    if chosen is None:
        return SearchResult(status=Status.TIMEOUT if pf.options.time_limit_s is not None else Status.UNKNOWN,
                            lower_bound=levels[0].bound if levels else None, wall_time_s=wall, stats=stats,
                            strategy="solve", objective_name=names[0], problem=pf.problem,
                            backend=pf.options.backend_name, bound_engine=pf.bound_engine, **facts)
    first = levels[0]
    all_proven = all(lv.proven for lv in levels)
    return SearchResult(
        status=Status.OPTIMAL if all_proven else Status.FEASIBLE,
        schedule=chosen[1],
        objective=first.value,
        lower_bound=first.bound,
        wall_time_s=wall,
        backend=pf.options.backend_name,
        stats=stats,
        strategy="solve",
        objective_name=names[0],
        engine=chosen[2].engine,
        bound_engine=first.engine,
        levels=tuple(levels) if len(levels) > 1 else (),
        problem=pf.problem,
        **facts,
    )


@survivors_frozen()
def solve(
    problem: Problem,
    *,
    objective: str | Sequence[str] | None = None,
    engines: Sequence[str] = ENGINES,
    options: SearchOptions | None = None,
    **common: Any,
) -> SearchResult:
    """The best plan of ``problem`` the portfolio finds within the time limit, with its proof.

    Parameters
    ----------
    problem:
        Any problem of the model.
    objective:
        ``"makespan"``, ``"max_span"``, ``"peak_memory"`` or a tuple of them
        read lexicographically. Default: the problem's time objective, then
        (when blocks hold memory) the peak memory of the worst device among
        plans of that time (:func:`default_objective`).
    engines:
        The portfolio's engines to use (default all, see :data:`ENGINES`).
    options, common:
        A :class:`~schedsearch.options.SearchOptions` and/or its fields as
        keywords (``time_limit_s`` covers the whole call).

    Returns
    -------
    SearchResult
        ``strategy="solve"``; ``engine`` says what found the plan and
        ``bound_engine`` what proved the bound; with a lexicographic
        objective ``levels`` gives each level's value and bound, and OPTIMAL
        means every level is proven. INFEASIBLE only when the exact search
        proved that no plan exists; TIMEOUT when no plan was found in time.

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> result = solve(vshape(4, 8), time_limit_s=30)
    >>> result.status.value, result.objective, result.levels[1].value
    ('OPTIMAL', 33, 4)
    """
    run = Run.open(problem, options, common, "solve", own={
        "objective": (objective, Rule.choices(SOLVE_OBJECTIVES, none=True)),
        "engines": (engines, attrs.evolve(Rule.choices(ENGINES, lone=False),
                                          allowed=f"a non-empty subset of {ENGINES} (a list or tuple)")),
    })
    names = _objectives(problem, objective)
    time_name = next((n for n in names if n != "peak_memory"), "makespan")
    work = problem if problem.objective == time_name else problem.with_(objective=time_name)
    pf = _Portfolio(run=attrs.evolve(run, problem=work), engines=frozenset(engines),
                    memory_level="peak_memory" in names)
    if names[0] == "peak_memory":
        return _memory_first(pf, names)
    status = _within_limit(pf, _time_level)
    best = pf.best
    if status is Status.INFEASIBLE or best is None:
        return _result(pf, names, status, [Level(name=time_name, value=None, bound=pf.bound, engine=pf.bound_engine)],
                       None)
    first = Level(name=time_name, value=best.value, bound=min(pf.bound, best.value), engine=pf.bound_engine)
    if len(names) == 1:
        return _result(pf, names, None, [first], (best.value, best.schedule, best.provenance))
    # the memory level, among plans of the first level's value
    with unstopped():  # the plans found are measured whatever the clock says
        ties = [(_peak(work, p.schedule), p.schedule, p.provenance) for p in pf.plans if p.value <= best.value]
    start = min(ties, key=lambda x: x[0])
    walked = _within_limit(pf, _walk_memory, best.value, start) if first.proven else None
    chosen, peak_bound, peak_engine = walked if walked is not None else (start, None, "")
    assert chosen is not None
    second = Level(name="peak_memory", value=chosen[0], bound=peak_bound, engine=peak_engine)
    return _result(pf, names, None, [first, second], (best.value, chosen[1], chosen[2]))


def _within_limit(pf: _Portfolio, phase: Callable[..., Any], *args: Any) -> Any:
    """``phase(pf, *args)`` under the call's hard stop (:func:`~schedsearch.deadline.stopping`); past it the
    phase ends where it is, a note says so, the bound is at least the cheap one (when the phase ran before
    it) and None is returned: the call goes on with the plans and the bound it has."""
    try:
        with stopping(pf.deadline):
            return phase(pf, *args)
    except DeadlineExceeded as stop:
        set_aside(stop)
        pf.note(f"stopped at the time limit ({pf.options.time_limit_s:g} s): the phase running ended there, "
                f"{pf.deadline.elapsed:.2f} s into the call")
        from schedsearch.bounds.analytic import _average_load

        with unstopped():  # linear in the blocks: a bound for a call stopped before its own bound ended
            bound = _average_load(pf.problem) if pf.problem.objective == "makespan" else 0
        if bound > pf.bound:
            pf.run.raise_bound(bound, "analytic (average load)")

        return None


def _memory_first(pf: _Portfolio, names: tuple[str, ...]) -> SearchResult:
    """``("peak_memory", time)``: the least worst-device peak, then the least time under it."""
    status = _within_limit(pf, _plans_to_start_from)
    if status is Status.INFEASIBLE or pf.best is None:
        return _result(pf, names, status, [Level(name="peak_memory", value=None)], None)
    with unstopped():  # the plans found are measured whatever the clock says
        start = min(((_peak(pf.problem, p.schedule), p.schedule, p.provenance) for p in pf.plans),
                    key=lambda x: x[0])
    walked = _within_limit(pf, _walk_memory, None, start)
    chosen, peak_bound, peak_engine = walked if walked is not None else (start, None, "")
    assert chosen is not None
    peak_level = Level(name="peak_memory", value=chosen[0], bound=peak_bound, engine=peak_engine)
    # the time level under the least peak found
    inner = _Portfolio(run=pf.run.on(with_capacities(pf.problem, chosen[0], cap_existing=True)), engines=pf.engines,
                       inner=True)
    inner.offer(chosen[1], chosen[2])
    _within_limit(inner, _time_level)  # cannot prove infeasibility: the chosen plan is one

    best = inner.best
    assert best is not None
    pf.phases.update({f"time {k}": v for k, v in inner.phases.items()})
    time_level = Level(name=names[1] if len(names) > 1 else "makespan", value=best.value,
                       bound=min(inner.bound, best.value), engine=inner.bound_engine)
    levels = [peak_level, time_level] if len(names) > 1 else [peak_level]
    result = _result(pf, names, None, levels, (chosen[0], best.schedule, best.provenance))
    return attrs.evolve(result, objective=chosen[0], lower_bound=peak_bound, bound_engine=peak_level.engine)


def _plans_to_start_from(pf: _Portfolio) -> Status | None:
    """Plans to start the memory walk from: known plans and list schedules (no exact search)."""
    _known_plans(pf)
    if "list" in pf.engines and not pf.plans:
        _list_schedules(pf)
    if not pf.plans and "exact" in pf.engines:
        return _exact(pf)
    return None
