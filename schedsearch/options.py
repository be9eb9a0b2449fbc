"""One options type and one progress event for every search strategy.

Every strategy (:func:`~schedsearch.solve`, :func:`~schedsearch.search.optimal`,
:func:`~schedsearch.search.repetend`, :func:`~schedsearch.search.scale_search`,
:func:`~schedsearch.search.pareto`, :func:`~schedsearch.search.jobshop`)
accepts the same common settings, either as one :class:`SearchOptions`
(``options=``) or as keywords of the same names; keywords override the
object's fields. A strategy's own knobs (``ties`` of ``scale_search``,
``completion`` of ``repetend``, ...) stay keywords of that strategy.

Every strategy reports progress with the same :class:`ProgressEvent`: the
phase running, the incumbent, the best proven bound and the elapsed time.

This module is solver-free.

Examples
--------
>>> opts = SearchOptions(time_limit_s=5, seed=1)
>>> resolve_options(opts, {"workers": 1}, "optimal").workers
1
>>> resolve_options(None, {"time_limt_s": 5}, "optimal")
Traceback (most recent call last):
...
schedsearch.errors.InvalidOptionsError: optimal: unknown option 'time_limt_s'; the common options are backend, backend_params, deterministic, gap, log, progress, seed, time_limit_s, warm_start, warm_starts, workers
"""

from __future__ import annotations

import difflib
import math
import numbers
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from schedsearch.errors import InvalidOptionsError
from schedsearch.registry import available_backends
from schedsearch.schedule import Schedule

if TYPE_CHECKING:  # pragma: no cover
    from schedsearch.problem import Problem

__all__ = [
    "ProgressEvent",
    "BaseSolverOptions",
    "SolverSettings",
    "SearchOptions",
    "resolve_options",
    "Rule",
    "check_option",
    "check_options",
    "PARTITION_RULES",
    "check_partition_options",
    "check_keywords",
    "backend_names",
    "did_you_mean",
    "Deadline",
    "Reporter",
    "MAX_SEED",
    "MAX_WORKERS",
    "DETERMINISTIC_UNITS_PER_S",
    "DETERMINISTIC_WALL_GUARD",
    "DETERMINISTIC_WALL_GUARD_S",
]

#: Seeds every backend accepts: CP-SAT's ``random_seed`` is an int32 and Z3's
#: ``random_seed`` an unsigned 32-bit integer, so the common range is
#: ``0 .. 2**31 - 1``.
MAX_SEED = 2**31 - 1

#: CP-SAT deterministic time per second of budget in deterministic mode. CP-SAT's
#: deterministic time counts only part of its work on the scheduling models
#: (on the planner's pipelines with memory, about 0.03 to 0.05 units per
#: second of one core), so a budget of ``s`` seconds is
#: ``s * DETERMINISTIC_UNITS_PER_S`` units: a search its limit stops then
#: takes about ``s`` seconds there, and the same point on every machine.
DETERMINISTIC_UNITS_PER_S = 0.05

#: In deterministic mode a solver search also stops after
#: ``DETERMINISTIC_WALL_GUARD * s + DETERMINISTIC_WALL_GUARD_S`` wall-clock
#: seconds for a budget of ``s``: a guard against a model whose work CP-SAT's
#: deterministic time under-counts, or a machine far slower than one core.
#: A search the guard stops is not reproducible; its result says so
#: (its ``wall_guard_hit``).
DETERMINISTIC_WALL_GUARD = 10.0
DETERMINISTIC_WALL_GUARD_S = 60.0

#: Most parallel workers: CP-SAT starts one thread per worker (its parameter
#: is an int32, but thousands of threads only exhaust the machine).
MAX_WORKERS = 1024


@attrs.frozen(kw_only=True)
class ProgressEvent:
    """What a strategy reports as it goes.

    ``phase`` names what is running (``"bound"``, ``"list scheduling"``,
    ``"exact search"``, ``"repetend"``, ``"peak memory"``, ...);
    ``incumbent`` is the objective of the best plan so far and ``bound`` the
    best proven lower bound (either None when not known yet); ``source``
    names what found the incumbent (the engine, e.g. ``"handcrafted
    V-Half"``; None when not known); ``elapsed_s`` is measured from the
    start of the call that reports.

    Examples
    --------
    >>> from schedsearch import ProgressEvent
    >>> print(ProgressEvent(phase="exact search", incumbent=12, bound=10, elapsed_s=1.5))
    [    1.5 s] exact search: incumbent 12, bound 10
    >>> print(ProgressEvent(phase="bound", incumbent=12, bound=10, elapsed_s=0.2, source="handcrafted 1F1B"))
    [    0.2 s] bound: incumbent 12 (handcrafted 1F1B), bound 10
    """

    phase: str = "search"
    incumbent: int | None = None
    bound: int | None = None
    elapsed_s: float = 0.0
    source: str | None = None

    def __str__(self) -> str:
        inc = "-" if self.incumbent is None else str(self.incumbent)
        if self.source is not None and self.incumbent is not None:
            inc += f" ({self.source})"
        bnd = "-" if self.bound is None else str(self.bound)
        return f"[{self.elapsed_s:7.1f} s] {self.phase}: incumbent {inc}, bound {bnd}"


def options_error(inst: Any, name: str, allowed: str, value: Any) -> InvalidOptionsError:
    """The error of one option out of range: ``Type: 'name' must be <allowed>, got <value>`` (value cut at 80)."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return InvalidOptionsError(f"{type(inst).__name__}: {name!r} must be {allowed}, got {text}")


def check_time_limit(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    """A time limit: None (no limit) or a finite number of seconds > 0."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise options_error(inst, attribute.name, "a finite number of seconds > 0, or None for no limit", value)


def check_gap(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    """A relative gap: a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise options_error(inst, attribute.name, "a finite number >= 0 (0.01: stop within 1 % of the bound)", value)


def check_workers(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise options_error(inst, attribute.name, f"an integer in 1..{MAX_WORKERS}", value)


def check_seed(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise options_error(
            inst, attribute.name,
            f"an integer in 0..{MAX_SEED} (CP-SAT takes an int32 seed, Z3 an unsigned 32-bit one)", value,
        )


def check_boolean(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, bool):
        raise options_error(inst, attribute.name, "True or False", value)


def check_params(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise options_error(inst, attribute.name, "a mapping from parameter names (strings) to values", value)


def check_callable(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not callable(value):
        raise options_error(inst, attribute.name, "a callable or None", value)


def backend_names() -> tuple[str, ...]:
    """The backend names every strategy accepts: ``"auto"`` and the registry's
    (:data:`schedsearch.registry.BACKENDS`).

    Examples
    --------
    >>> from schedsearch.options import backend_names
    >>> backend_names()
    ('auto', 'cpsat', 'z3')
    """
    return ("auto", *available_backends())


def did_you_mean(value: Any, names: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the names closest to a misspelt ``value``, or ``""``.

    Examples
    --------
    >>> did_you_mean("cpsatt", ["cpsat", "z3"]), did_you_mean("gurobi", ["cpsat", "z3"])
    (" (did you mean 'cpsat'?)", '')
    """
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, list(names), n=2, cutoff=0.5)
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)"


def _check_backend(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, str):
        names = backend_names()
        if value not in names:
            raise options_error(inst, attribute.name,
                                f"one of {', '.join(repr(n) for n in names)} or a backend object"
                                f"{did_you_mean(value, names)}", value)
        return
    if not (hasattr(value, "name") and hasattr(value, "solve")):
        raise options_error(inst, attribute.name,
                            f"a backend name ({', '.join(repr(n) for n in backend_names())}) or a backend object", value)


def _schedules(value: Any) -> tuple[Schedule, ...]:
    """Warm starts: None, one schedule, an iterable of them, or a mapping whose values are schedules."""
    if value is None:
        return ()
    if isinstance(value, Schedule):
        return (value,)
    if isinstance(value, Mapping):
        value = value.values()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidOptionsError(f"SearchOptions: 'warm_starts' must be schedules, got {value!r:.80}")
    out = tuple(value)
    for s in out:
        if not isinstance(s, Schedule):
            raise InvalidOptionsError(f"SearchOptions: every warm start must be a Schedule, got {s!r:.80}")
    return out


@attrs.frozen(kw_only=True)
class BaseSolverOptions:
    """What every solver call takes, declared and checked here once: a time limit, a seed, and whether the
    solver prints its log. The root of the options: the scheduling solvers' settings
    (:class:`SolverSettings`) and the MIP layer's (:class:`~schedsearch.bounds.mip.MipOptions`) add their own.

    Examples
    --------
    >>> from schedsearch.options import BaseSolverOptions
    >>> BaseSolverOptions(seed=-1)
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOptionsError: BaseSolverOptions: 'seed' must be an integer in 0..2147483647 (CP-SAT takes an int32 seed, Z3 an unsigned 32-bit one), got -1
    """

    time_limit_s: float | None = attrs.field(default=60.0, validator=check_time_limit)
    seed: int = attrs.field(default=0, validator=check_seed)
    log: bool = attrs.field(default=False, validator=check_boolean)


@attrs.frozen(kw_only=True)
class SolverSettings(BaseSolverOptions):
    """The solver settings shared by the strategies' options (:class:`SearchOptions`) and the backends' own
    (:class:`~schedsearch.encode.SolveOptions`, :class:`~schedsearch.encode.repetend.RepetendOptions`): declared
    and checked here once; each subclass adds what is its own. A search run derives the backends' options
    from its :class:`SearchOptions` in one place (:meth:`schedsearch.search.run.Run.solve_options`).

    Examples
    --------
    >>> from schedsearch.encode import SolveOptions
    >>> from schedsearch.options import SearchOptions, SolverSettings
    >>> issubclass(SearchOptions, SolverSettings) and issubclass(SolveOptions, SolverSettings)
    True
    """

    workers: int = attrs.field(default=2, validator=check_workers)
    deterministic: bool = attrs.field(default=False, validator=check_boolean)
    backend_params: Mapping[str, Any] = attrs.field(factory=dict, validator=check_params)


@attrs.frozen(kw_only=True)
class SearchOptions(SolverSettings):
    """Settings every strategy accepts.

    Parameters
    ----------
    time_limit_s:
        Wall-clock limit of the whole call, every phase included (None: no
        limit). When it is reached the result is FEASIBLE (a plan, not
        proven) or TIMEOUT (no plan).
    seed:
        Random seed handed to the solvers.
    workers:
        Parallel search workers (CP-SAT); Z3 is single-threaded.
    deterministic:
        Ask for a reproducible search: the same answer for the same input
        and seed, whatever the machine and its load. CP-SAT then runs its
        interleaved search and reads ``time_limit_s`` as deterministic time
        (its work count, :data:`DETERMINISTIC_UNITS_PER_S` units per second)
        instead of wall-clock seconds; the phases of a call share that budget by the
        deterministic time their searches used, and no phase is cut by the
        wall clock (:class:`Deadline`).
    backend:
        ``"auto"`` (CP-SAT where it can express the problem), ``"cpsat"``,
        ``"z3"``, or a backend object (honoured as given).
    warm_starts:
        Valid plans of the problem to start from (handcrafted ones, say);
        the result is never worse than the best of them. One schedule, a
        sequence, or a mapping whose values are schedules.
    progress:
        Called with a :class:`ProgressEvent` whenever the phase, the
        incumbent or the bound changes.
    log:
        Let the solver print its own log.
    backend_params:
        Extra backend-specific parameters (CP-SAT ``SatParameters`` fields,
        or Z3 ``set_param`` names).
    gap:
        Stop as soon as the best plan is within this fraction of the proven
        bound (``0.01``: at most 1 % above it; default 0: only a plan that
        meets the bound ends the search early). The plan is then FEASIBLE,
        its gap said by its bound; a backend search gets it as its
        ``relative_gap_limit`` where the backend has that parameter (CP-SAT;
        unless ``backend_params`` sets one).

    Examples
    --------
    >>> from schedsearch import SearchOptions
    >>> options = SearchOptions(time_limit_s=5, workers=1, seed=1)
    >>> options.backend_name, options.replace(seed=3).seed
    ('cpsat', 3)
    >>> SearchOptions(workers=0)
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOptionsError: SearchOptions: 'workers' must be an integer in 1..1024, got 0
    """

    backend: Any = attrs.field(default="auto", validator=_check_backend)
    warm_starts: tuple[Schedule, ...] = attrs.field(default=(), converter=_schedules, eq=False)
    progress: Callable[[ProgressEvent], None] | None = attrs.field(default=None, eq=False, validator=check_callable)
    gap: float = attrs.field(default=0.0, validator=check_gap)

    @property
    def backend_name(self) -> str:
        """The backend's name (``"auto"`` resolves to ``"cpsat"``)."""
        name = self.backend if isinstance(self.backend, str) else str(self.backend.name)
        return "cpsat" if name == "auto" else name

    @property
    def solver_backend(self) -> Any:
        """What to hand to a backend lookup: the object as given, or a name (``"auto"`` is ``"cpsat"``)."""
        return "cpsat" if self.backend == "auto" else self.backend

    def report(self, phase: str, incumbent: int | None, bound: int | None, t0: float,
               source: str | None = None) -> None:
        """Send one :class:`ProgressEvent` (elapsed from ``t0``, a ``perf_counter`` time; ``source``: what
        found the incumbent) if asked for."""
        if self.progress is not None:
            self.progress(ProgressEvent(phase=phase, incumbent=incumbent, bound=bound,
                                        elapsed_s=time.perf_counter() - t0, source=source))

    def replace(self, **changes: Any) -> SearchOptions:
        return attrs.evolve(self, **changes)

    def checked_warm_starts(self, problem: Problem, where: str) -> tuple[Schedule, ...]:
        """The warm starts, each checked to be a valid plan of ``problem``.

        A warm start is the user's claim of a valid plan: one that is not
        raises :class:`~schedsearch.errors.InvalidOptionsError` naming
        ``where``, its index and its first violation.
        """
        from schedsearch.validate import validate

        for i, schedule in enumerate(self.warm_starts):
            violations = validate(problem, schedule)
            if violations:
                raise InvalidOptionsError(
                    f"{where}: warm start {i} is not a valid plan of problem {problem.name!r}: {violations[0]}"
                )
        return self.warm_starts


_FIELDS = frozenset(f.name for f in attrs.fields(SearchOptions))


@attrs.frozen
class Rule:
    """What one option of an entry point must be.

    ``allowed`` says it in words (the error message's ``must be ...``),
    ``test`` tells whether a value is one, ``names`` are the valid names of
    a choice (the message suggests the closest ones to a misspelt value).
    The constructors below make the usual rules.

    Examples
    --------
    >>> from schedsearch.options import Rule, check_option
    >>> check_option("repetend", "completion", "bets", Rule.choice(("best", "solved", "truncated")))
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOptionsError: repetend: 'completion' must be one of 'best', 'solved', 'truncated' (did you mean 'best'?), got 'bets'
    """

    allowed: str
    test: Callable[[Any], bool]
    names: tuple[str, ...] = ()

    @classmethod
    def integer(cls, minimum: int | None = None, maximum: int | None = None, *, none: bool = False) -> Rule:
        """An int (not a bool) in ``minimum .. maximum``; None too with ``none``."""
        if minimum is not None and maximum is not None:
            words = f"an integer in {minimum}..{maximum}"
        elif minimum is not None:
            words = f"an integer >= {minimum}"
        elif maximum is not None:
            words = f"an integer <= {maximum}"
        else:
            words = "an integer"

        def test(v: Any) -> bool:
            return (isinstance(v, numbers.Integral) and not isinstance(v, bool)
                    and (minimum is None or v >= minimum) and (maximum is None or v <= maximum))

        return cls._maybe_none(words, test, none)

    @classmethod
    def number(cls, minimum: float | None = None, maximum: float | None = None, *, above: float | None = None,
               none: bool = False) -> Rule:
        """A finite real number (not a bool) ``>= minimum`` (or ``> above``), ``<= maximum``; None too with ``none``."""
        low = f"({above}" if above is not None else f"[{minimum}" if minimum is not None else None
        if low is not None and maximum is not None:
            words = f"a number in {low}, {maximum}]"
        elif low is not None:
            words = f"a number {'>' if above is not None else '>='} {low[1:]}"
        elif maximum is not None:
            words = f"a number <= {maximum}"
        else:
            words = "a finite number"

        def test(v: Any) -> bool:
            return (isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
                    and (above is None or v > above) and (minimum is None or v >= minimum)
                    and (maximum is None or v <= maximum))

        return cls._maybe_none(words, test, none)

    @classmethod
    def boolean(cls, *, none: bool = False) -> Rule:
        """True or False; None too with ``none``."""
        return cls._maybe_none("True or False", lambda v: isinstance(v, bool), none)

    @classmethod
    def choice(cls, names: Iterable[str], *, none: bool = False) -> Rule:
        """One of ``names``; None too with ``none``."""
        names = tuple(names)
        rule = cls._maybe_none(f"one of {', '.join(repr(n) for n in names)}",
                               lambda v: isinstance(v, str) and v in names, none)
        return attrs.evolve(rule, names=names)

    @classmethod
    def choices(cls, names: Iterable[str], *, lone: bool = True, size: int | None = None, none: bool = False) -> Rule:
        """A non-empty list or tuple of distinct names of ``names`` (``size`` of them when given), or with
        ``lone`` one name alone; None too with ``none``. A string is never read as a sequence of its
        characters.

        Examples
        --------
        >>> from schedsearch.options import Rule, check_option
        >>> check_option("pareto", "objectives", "makespan", Rule.choices(("makespan", "peak_memory"), lone=False, size=2))
        Traceback (most recent call last):
        ...
        schedsearch.errors.InvalidOptionsError: pareto: 'objectives' must be a list or tuple of 2 distinct names of 'makespan', 'peak_memory', got 'makespan'
        """
        names = tuple(names)
        listed = ", ".join(repr(n) for n in names)
        words = (f"one of {listed}, or a list or tuple of distinct ones" if lone
                 else f"a list or tuple of {size if size is not None else 'one or more'} distinct names of {listed}")

        def test(v: Any) -> bool:
            if isinstance(v, str):
                return lone and v in names
            return (isinstance(v, (list, tuple, set, frozenset)) and len(v) > 0 and (size is None or len(v) == size)
                    and all(isinstance(x, str) and x in names for x in v) and len(set(v)) == len(v))

        return attrs.evolve(cls._maybe_none(words, test, none), names=names)

    @classmethod
    def instance(cls, types: type | tuple[type, ...], what: str, *, none: bool = False) -> Rule:
        """An instance of ``types`` (``what`` names it in the message); None too with ``none``."""
        return cls._maybe_none(what, lambda v: isinstance(v, types) and not isinstance(v, bool), none)

    @classmethod
    def sequence(cls, types: type | tuple[type, ...], what: str) -> Rule:
        """A list or tuple (possibly empty) of instances of ``types``, ``what`` naming it."""
        return cls(what, lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, types) for x in v))

    @classmethod
    def ties(cls) -> Rule:
        """Start-time ties: a list or tuple of ``((block, micro-batch), (block, micro-batch), offset)``."""
        def task(t: Any) -> bool:
            return (isinstance(t, (list, tuple)) and len(t) == 2 and isinstance(t[0], str)
                    and isinstance(t[1], int) and not isinstance(t[1], bool))

        def test(v: Any) -> bool:
            return isinstance(v, (list, tuple)) and all(
                isinstance(t, (list, tuple)) and len(t) == 3 and task(t[0]) and task(t[1])
                and isinstance(t[2], int) and not isinstance(t[2], bool) for t in v)

        return cls("a list of ((block, micro-batch), (block, micro-batch), offset) ties", test)

    @classmethod
    def function(cls, *, none: bool = True) -> Rule:
        """A callable; None too with ``none`` (the default)."""
        return cls._maybe_none("a callable", callable, none)

    @classmethod
    def _maybe_none(cls, words: str, test: Callable[[Any], bool], none: bool) -> Rule:
        if not none:
            return cls(words, test)
        return cls(f"{words}, or None", lambda v: v is None or test(v))


def check_option(where: str, name: str, value: Any, rule: Rule) -> None:
    """Raise :class:`~schedsearch.errors.InvalidOptionsError` ``<where>: '<name>' must be <allowed>, got <value>``
    when ``value`` breaks ``rule`` (a misspelt name gets the closest valid ones suggested).

    Examples
    --------
    >>> from schedsearch.options import Rule, check_option
    >>> check_option("pareto", "max_points", 50, Rule.integer(1))  # fine: nothing happens
    >>> check_option("pareto", "max_points", 0, Rule.integer(1))
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOptionsError: pareto: 'max_points' must be an integer >= 1, got 0
    """
    try:
        ok = bool(rule.test(value))
    except Exception:  # a value so odd that the test itself fails (an unhashable choice, say)
        ok = False
    if not ok:
        text = repr(value)
        if len(text) > 80:
            text = text[:77] + "..."
        # a misspelt name gets the closest valid ones; a valid name alone where a list is due gets none
        hint = "" if isinstance(value, str) and value in rule.names else did_you_mean(value, rule.names)
        raise InvalidOptionsError(f"{where}: {name!r} must be {rule.allowed}{hint}, got {text}")


def check_options(where: str, own: Mapping[str, tuple[Any, Rule]]) -> None:
    """:func:`check_option` on every ``name: (value, rule)`` of ``own``, in order.

    Examples
    --------
    >>> from schedsearch.options import Rule, check_options
    >>> check_options("plan", {"workers": (2, Rule.integer(1, none=True)), "seed": (-1, Rule.integer(0))})
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOptionsError: plan: 'seed' must be an integer >= 0, got -1
    """
    for name, (value, rule) in own.items():
        check_option(where, name, value, rule)


#: The options of the partitioners (:mod:`schedsearch.partition`), by name: a
#: name means the same in every partitioner that takes it.
PARTITION_RULES: dict[str, Rule] = {
    "seed": Rule.integer(),
    "time_limit_s": Rule.number(above=0, none=True),
    "search": Rule.choice(("brkga", "random", "dfs")),
    "restarts": Rule.integer(0),
    "population": Rule.integer(1),
    "generations": Rule.integer(0),
    "iterations": Rule.integer(0),
    "start_temperature": Rule.number(above=0),
    "end_temperature": Rule.number(above=0),
    "neighbour_bias": Rule.number(0, 1),
    "acyclic": Rule.boolean(),
    "merge_trivial": Rule.boolean(),
    "upper_bound": Rule("a number >= 0 (math.inf: no pruning), or None",
                        lambda v: v is None or (isinstance(v, numbers.Real) and not isinstance(v, bool)
                                                and not math.isnan(v) and v >= 0)),
    "ideal_limit": Rule.integer(1, none=True),
    "module_ideal_limit": Rule.integer(1),
    "channels": Rule.integer(1),
    "order": Rule("a list of operator ids, or None",
                  lambda v: v is None or (isinstance(v, (list, tuple)) and all(
                      isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in v))),
}


def check_keywords(where: str, fn: Callable[..., Any], keywords: Mapping[str, Any], what: str) -> None:
    """Check that ``fn`` takes every name of ``keywords`` (passed on to it later, after other work).

    A name ``fn`` does not take raises
    :class:`~schedsearch.errors.InvalidOptionsError` naming ``what`` and
    suggesting the closest names. A strategy of :mod:`schedsearch.search`
    takes its own parameters and the common options (:class:`SearchOptions`'
    fields); another callable with ``**kwargs`` takes any name.

    Examples
    --------
    >>> from schedsearch.options import check_keywords
    >>> def search(problem, *, time_limit_s=10.0):
    ...     return None
    >>> check_keywords("partition_and_schedule", search, {"time_limt_s": 5}, "search option")
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOptionsError: partition_and_schedule: unknown search option 'time_limt_s' (did you mean 'time_limit_s'?)
    """
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a callable without a signature: nothing to check against
        return
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    if any(p.kind is p.VAR_KEYWORD for p in params):
        if not str(getattr(fn, "__module__", "")).startswith("schedsearch.search"):
            return
        names |= _FIELDS | {"warm_start", "options"}
    for name in keywords:
        if name not in names:
            raise InvalidOptionsError(f"{where}: unknown {what} {name!r}{did_you_mean(name, names)}")


def check_partition_options(where: str, options: Mapping[str, Any], accepted: Iterable[str] | None = None) -> None:
    """The door of the partitioners: every option of ``options`` checked against :data:`PARTITION_RULES`.

    ``accepted`` (default: the names of ``options``) are the option names
    the partitioner ``where`` takes; another name raises
    :class:`~schedsearch.errors.InvalidOptionsError` with the closest ones
    suggested, as does a value that breaks its rule.

    Examples
    --------
    >>> check_partition_options("partition_slicegraph", {"restarts": -1})
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOptionsError: partition_slicegraph: 'restarts' must be an integer >= 0, got -1
    """
    names = tuple(options if accepted is None else accepted)
    for name, value in options.items():
        if name not in names:
            raise InvalidOptionsError(f"{where}: unknown option {name!r}{did_you_mean(name, names)}; "
                                      f"it takes {', '.join(sorted(names)) or 'no options'}")
        rule = PARTITION_RULES.get(name)
        if rule is not None:
            check_option(where, name, value, rule)


def resolve_options(options: SearchOptions | None, overrides: Mapping[str, Any], where: str,
                    renamed: Mapping[str, str] | None = None, own: Mapping[str, tuple[Any, Rule]] | None = None,
                    **defaults: Any) -> SearchOptions:
    """``options`` with the keyword ``overrides`` applied, checked: the door of every strategy.

    Every public strategy calls it first, before any work, so that a bad
    option raises :class:`~schedsearch.errors.InvalidOptionsError` naming
    ``where``, the option and the value, and nothing has run yet.

    ``defaults`` are the strategy's own defaults for fields neither
    ``options`` nor ``overrides`` set (for example a longer time limit).
    ``warm_start`` is accepted as a synonym of ``warm_starts``. An unknown
    keyword raises naming it; ``renamed`` maps former knob names of the
    strategy to their present ones, so the error can point to the right
    one. ``own`` holds the strategy's own knobs, ``name: (value, rule)``
    (:class:`Rule`), each checked. A backend name must be one of
    :func:`backend_names` (the closest are suggested). (A strategy that
    solves through the backend registry checks the ``backend_params``
    against what that backend takes next:
    :meth:`schedsearch.search.run.Run.open`.)
    """
    check_options(where, own or {})
    if options is not None and not isinstance(options, SearchOptions):
        raise InvalidOptionsError(f"{where}: 'options' must be a SearchOptions, got {options!r:.80}")
    return _resolve(options, overrides, where, renamed, defaults)


def _resolve(options: SearchOptions | None, overrides: Mapping[str, Any], where: str,
             renamed: Mapping[str, str] | None, defaults: Mapping[str, Any]) -> SearchOptions:
    changes = dict(overrides)
    if "warm_start" in changes:
        if "warm_starts" in changes:
            raise InvalidOptionsError(f"{where}: give 'warm_start' or 'warm_starts', not both")
        changes["warm_starts"] = changes.pop("warm_start")
    unknown = sorted(set(changes) - _FIELDS)
    moved = [u for u in unknown if renamed and u in renamed]
    if moved:
        raise InvalidOptionsError(
            f"{where}: unknown option {moved[0]!r}; its meaning is now {renamed[moved[0]]!r}"  # type: ignore[index]
        )
    if unknown:
        known = ", ".join(sorted(_FIELDS | {"warm_start"}))
        raise InvalidOptionsError(
            f"{where}: unknown option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(u) for u in unknown)}; the common options are {known}"
        )
    try:
        if options is None:
            base = {k: v for k, v in defaults.items() if k not in changes}
            return SearchOptions(**base, **changes)
        return attrs.evolve(options, **changes) if changes else options
    except InvalidOptionsError as error:
        raise InvalidOptionsError(f"{where}: {error}") from None


class Deadline:
    """The time left of one call's limit, shared by its phases.

    With ``deterministic=True`` the budget is spent only by what the phases
    :meth:`charge` (the deterministic time their solver searches used), never
    by the wall clock, so that which phases run and the limits they get are
    the same on every run; ``elapsed`` stays wall-clock time, for reports.
    ``clock`` (default ``time.perf_counter``) is what it reads; a wall-clock
    limit is also the hard stop of the phases run under
    :func:`~schedsearch.deadline.stopping`.

    Examples
    --------
    >>> from schedsearch.options import Deadline
    >>> deadline = Deadline(10.0, deterministic=True)
    >>> deadline.charge(4.0)
    >>> deadline.left(), deadline.slice(0.5), deadline.expired()
    (6.0, 3.0, False)
    """

    def __init__(self, limit_s: float | None, deterministic: bool = False,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.t0 = clock()
        self.limit_s = limit_s
        self.deterministic = deterministic
        self.spent = 0.0

    @property
    def elapsed(self) -> float:
        return self.clock() - self.t0

    def charge(self, seconds: float) -> None:
        """Count ``seconds`` of deterministic time against the budget (deterministic mode; no effect otherwise)."""
        self.spent += max(0.0, float(seconds))

    def left(self) -> float | None:
        """Seconds left (None: no limit); may be <= 0 when the limit has passed."""
        if self.limit_s is None:
            return None
        return self.limit_s - (self.spent if self.deterministic else self.elapsed)

    def expired(self, margin_s: float = 0.0) -> bool:
        left = self.left()
        return left is not None and left <= margin_s

    def slice(self, fraction: float, floor_s: float = 0.0, cap_s: float | None = None) -> float | None:
        """A share of the time left: ``fraction`` of it, at least ``floor_s``, at most ``cap_s`` and what is left."""
        left = self.left()
        if left is None:
            return cap_s
        share = max(fraction * left, floor_s)
        if cap_s is not None:
            share = min(share, cap_s)
        return max(min(share, left), 1e-3)


class Reporter:
    """The progress of one strategy call, sent as :class:`ProgressEvent` events.

    It keeps the best incumbent (least) and the best bound (largest) the
    call has reported, and sends an event only when the phase, the
    incumbent or the bound changed, with the time elapsed since ``t0`` (a
    ``perf_counter`` time, the start of the call). A strategy that hands a
    sub-search its own progress callback uses :meth:`relay`, so the
    sub-search's events arrive re-timed from the call's start, merged with
    what the call already knows.
    """

    def __init__(self, progress: Callable[[ProgressEvent], None] | None, t0: float | None = None) -> None:
        self.progress = progress
        self.t0 = time.perf_counter() if t0 is None else t0
        self.phase = ""
        self.incumbent: int | None = None
        self.bound: int | None = None
        self.source: str | None = None  # what found the incumbent
        self._sent: tuple[str, int | None, int | None] | None = None

    def report(self, phase: str | None = None, incumbent: int | None = None, bound: int | None = None,
               source: str | None = None) -> None:
        """Note a phase, an incumbent (found by ``source``; default: the phase) or a bound; send an event if
        that changes what was sent last."""
        if phase is not None:
            self.phase = phase
        if incumbent is not None and (self.incumbent is None or incumbent < self.incumbent):
            self.incumbent = incumbent
            self.source = source if source is not None else self.phase
        if bound is not None and (self.bound is None or bound > self.bound):
            self.bound = bound
        state = (self.phase, self.incumbent, self.bound)
        if self.progress is None or state == self._sent:
            return
        self._sent = state
        self.progress(ProgressEvent(phase=self.phase, incumbent=self.incumbent, bound=self.bound,
                                    elapsed_s=time.perf_counter() - self.t0, source=self.source))

    def reset(self, phase: str) -> None:
        """Start a phase whose incumbent and bound are not comparable with the earlier ones
        (a Pareto step under another capacity, say)."""
        self.incumbent = self.bound = self.source = None
        self.report(phase)

    def relay(self, *, incumbents: bool = True, bounds: bool = True,
              prefix: str | None = None) -> Callable[[ProgressEvent], None] | None:
        """A progress callback for a sub-search (None when nobody listens).

        ``incumbents`` / ``bounds``: whether the sub-search's values hold
        for this call's problem (a search of a coarsened or restricted
        problem finds plans of another problem, and proves bounds of the
        restricted one only). ``prefix`` names the call's own phase before
        the sub-search's (``"pareto capacity 4: exact search (cpsat)"``).
        """
        if self.progress is None:
            return None

        def forward(event: ProgressEvent) -> None:
            phase = event.phase if prefix is None else f"{prefix}: {event.phase}"
            source = event.source if prefix is None or event.source is None else f"{prefix}: {event.source}"
            self.report(phase, event.incumbent if incumbents else None, event.bound if bounds else None,
                        source=source)

        return forward
