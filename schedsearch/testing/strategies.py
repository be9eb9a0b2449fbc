"""Hypothesis strategies: scheduling problems, valid plans and broken plans.

* :func:`problems`: small random problems with a switch per feature of the
  model (below);
* :func:`pipeline_problems`: pipeline placements from the library's builders
  (1F1B, zero bubble, interleaved, V, Chimera, DualPipe, DualPipeV, Tessel's
  shapes) with random stage times, micro-batch counts and memory caps;
* :func:`overlap_problems`: fixed placements with declared overlapped groups;
* :func:`schedules`: valid plans of a given problem (random priority list
  schedules, :mod:`schedsearch.testing.sgs`);
* :func:`broken`: a valid plan mutated to break one rule of the validator
  (:mod:`schedsearch.testing.mutations`).

Every strategy shrinks towards fewer devices, blocks and micro-batches and
shorter durations; :func:`schedules` towards the default priority order
(micro-batch by micro-batch) and no idle time.

:func:`problems`
----------------
Draws small :class:`~schedsearch.problem.Problem`\\ s with a switch per
feature of the model, so a test can cover every feature and every
intersection of features, or only the ones a scheduler under test supports.

What it generates
~~~~~~~~~~~~~~~~~
* devices ``d0 .. d{k-1}``; blocks ``b0 .. b{n-1}`` whose edges run only from a
  lower to a higher index (so every graph is acyclic);
* options: one device, or (``multi_device``) two devices in either order
  (the first is the lead device); with ``flexible``, a second option on
  other devices, or on the same devices with another duration;
* memory deltas in ``-2..2`` and workspace in ``0..1``, initial memory, and
  capacities that leave room for every block on at least one option (memory
  may still make a problem infeasible: that is a legitimate outcome);
* transfers on channels: every device pair an edge may need has a channel
  serving it (undirected, or directed where only one direction is needed),
  with ``parallel`` a second, slower channel beside some of them;
* releases, fixed orders (which may contradict the edges: infeasible
  problems are part of the space), duration overrides, overlapped groups of
  two or three fixed blocks on one device tuple (``same_microbatch`` sets
  included) and both objectives.

What it never generates: cycles in the graph, an edge whose transfer has no
channel, a block that fits on none of its devices, more than ``max_tasks``
task instances. Every drawn problem passes the problem model's own checks.
"""

from __future__ import annotations

from typing import Any

from schedsearch.actions import COMPUTE_KINDS
from schedsearch.errors import InvalidOptionsError
from schedsearch.problem import (
    Block,
    Channel,
    Cluster,
    Device,
    Edge,
    Graph,
    Option,
    Overlap,
    Problem,
    Release,
)
from schedsearch.schedule import Schedule

try:
    from hypothesis import assume
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the installation
    from schedsearch.errors import MissingDependencyError

    raise MissingDependencyError(
        "schedsearch.testing needs hypothesis: python -m pip install -e '.[testing]' from a clone"
    ) from exc

from schedsearch.testing.mutations import Mutation, mutate, mutation_sites
from schedsearch.testing.sgs import serial_schedule, topological_order
from schedsearch.validate import VIOLATION_KINDS

__all__ = [
    "problems",
    "pipeline_problems",
    "overlap_problems",
    "schedules",
    "problems_and_schedules",
    "broken",
    "ALL_FEATURES",
    "PIPELINE_LAYOUTS",
]

#: A block's kind tags, the pipeline's compute kinds by their letters.
_KINDS = tuple(k.value for k in COMPUTE_KINDS)

#: Every switch of :func:`problems`.
ALL_FEATURES = (
    "flexible",
    "multi_device",
    "memory",
    "transfers",
    "parallel",
    "directed",
    "releases",
    "fixed_orders",
    "overrides",
    "overlaps",
    "max_span",
)


def _draw_options(draw: Any, names: list[str], flexible: bool, multi_device: bool, max_duration: int) -> list[Option]:
    def devices() -> tuple[str, ...]:
        if multi_device and len(names) > 1 and draw(st.integers(0, 3)) == 0:
            return tuple(draw(st.permutations(draw(st.lists(st.sampled_from(names), min_size=2, max_size=2,
                                                              unique=True)))))
        return (draw(st.sampled_from(names)),)

    first = devices()
    options = [Option(devices=first, duration=draw(st.integers(1, max_duration)))]
    if flexible and draw(st.booleans()):
        kind = draw(st.integers(0, 2))
        if kind == 0:  # the same devices, another duration
            other = first
        elif kind == 1 and len(first) == 2:  # the same devices led by the other one
            other = (first[1], first[0])
        else:
            other = devices()
        duration = draw(st.integers(1, max_duration))
        if Option(devices=other, duration=duration) not in options:
            options.append(Option(devices=other, duration=duration))
    return options


@st.composite
def problems(
    draw: Any,
    *,
    max_devices: int = 3,
    max_blocks: int = 4,
    max_microbatches: int = 3,
    max_tasks: int = 6,
    max_duration: int = 3,
    flexible: bool = True,
    multi_device: bool = True,
    memory: bool = True,
    transfers: bool = True,
    parallel: bool = True,
    directed: bool = True,
    releases: bool = True,
    fixed_orders: bool = True,
    overrides: bool = True,
    overlaps: bool = True,
    max_span: bool = True,
) -> Problem:
    """A small valid problem; each switch turns a feature of the model off.

    What it generates (details in the module docstring): 1 to
    ``max_devices`` devices, 1 to ``max_blocks`` blocks with durations in
    ``1..max_duration`` and 1 to ``max_microbatches`` micro-batches, at most
    ``max_tasks`` task instances in all, so the brute-force oracle
    (:func:`schedsearch.testing.oracle.exact_optimum`) settles every draw
    with its default limits. Features, each on unless switched off:
    ``flexible`` (a second placement option), ``multi_device`` (two-device
    options), ``memory`` (deltas, workspace, initial memory, capacities),
    ``transfers`` (edge sizes and the channels they need), ``parallel`` (a
    second channel beside some), ``directed`` (one-way channels),
    ``releases``, ``fixed_orders``, ``overrides`` (per-micro-batch
    durations), ``overlaps`` (declared overlapped groups) and ``max_span``
    (that objective as well as the makespan).

    What it never generates: a cyclic graph, a transfer without a channel,
    a block that fits on none of its devices, more than ``max_tasks`` task
    instances. It may generate infeasible problems (memory, or fixed orders
    against the edges).

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from schedsearch.testing import problems
    >>> @settings(max_examples=10, derandomize=True, database=None, deadline=None)
    ... @given(problems(max_tasks=4, memory=False))
    ... def test_small(problem):
    ...     assert 1 <= len(problem.tasks) <= 4
    ...     assert all(device.memory is None for device in problem.cluster.devices)
    >>> test_small()
    """
    num_devices = draw(st.integers(1, max_devices))
    names = [f"d{i}" for i in range(num_devices)]
    num_blocks = draw(st.integers(1, min(max_blocks, max_tasks)))
    num_mb = draw(st.integers(1, max(1, min(max_microbatches, max_tasks // num_blocks))))
    blocks = []
    for i in range(num_blocks):
        options = _draw_options(draw, names, flexible, multi_device, max_duration)
        mem = draw(st.integers(-2, 2)) if memory else 0
        ws = draw(st.integers(0, 1)) if memory else 0
        blocks.append(Block(name=f"b{i}", kind=draw(st.sampled_from(_KINDS)), options=options, memory=mem,
                            workspace=ws))
    edges = []
    for j in range(num_blocks):
        for i in range(j):
            if draw(st.integers(0, 2)) == 0:
                size = draw(st.integers(0, 2)) if transfers else 0
                edges.append(Edge(src=f"b{i}", dst=f"b{j}", size=size))
    channels = _channels(draw, blocks, edges, parallel=parallel, directed=directed)

    initial: dict[str, int] = {}
    devices = []
    for name in names:
        init = draw(st.integers(0, 1)) if memory else 0
        if init:
            initial[name] = init
        need = max((max(b.memory, 0) + b.workspace for b in blocks if name in b.devices), default=0)
        cap = None
        if memory and draw(st.booleans()):
            cap = init + need + draw(st.integers(0, 3))
        devices.append(Device(name=name, memory=cap))

    tasks = [(b.name, m) for m in range(num_mb) for b in blocks]
    release_list = []
    if releases and draw(st.integers(0, 2)) == 0:
        for key in draw(st.lists(st.sampled_from(tasks), max_size=2, unique=True)):
            release_list.append(Release(block=key[0], microbatch=key[1], time=draw(st.integers(1, 4))))
    orders = []
    if fixed_orders and len(tasks) > 1 and draw(st.integers(0, 2)) == 0:
        orders.append(tuple(draw(st.lists(st.sampled_from(tasks), min_size=2, max_size=3, unique=True))))
    override_list = []
    if overrides and draw(st.integers(0, 2)) == 0:
        by_name = {b.name: b for b in blocks}
        for key in draw(st.lists(st.sampled_from(tasks), max_size=2, unique=True)):
            n_opt = len(by_name[key[0]].options)
            override_list.append((key[0], key[1], tuple(draw(st.integers(1, max_duration + 2)) for _ in range(n_opt))))
    overlap_list = _overlaps(draw, blocks) if overlaps else []
    objective = draw(st.sampled_from(["makespan", "max_span"])) if max_span else "makespan"
    return Problem(
        graph=Graph(blocks=blocks, edges=edges),
        num_microbatches=num_mb,
        cluster=Cluster(devices=devices, channels=channels),
        initial_memory=initial,
        releases=release_list,
        fixed_orders=orders,
        duration_overrides=override_list,
        overlaps=overlap_list,
        objective=objective,
    )


def _channels(draw: Any, blocks: list[Block], edges: list[Edge], *, parallel: bool, directed: bool) -> list[Channel]:
    """A channel for every (lead, lead) pair a transfer may need."""
    by_name = {b.name: b for b in blocks}
    needed: set[tuple[str, str]] = set()
    for e in edges:
        if e.size <= 0:
            continue
        for oa in by_name[e.src].options:
            for ob in by_name[e.dst].options:
                if not set(oa.devices) & set(ob.devices):
                    needed.add((oa.devices[0], ob.devices[0]))
    channels: list[Channel] = []
    done: set[tuple[str, str]] = set()
    for a, b in sorted(needed):
        if (a, b) in done:
            continue
        one_way = directed and (b, a) not in needed and draw(st.booleans())
        name = f"c{a}{b}"
        channels.append(Channel(name=name, endpoints=(a, b), time_per_unit=draw(st.integers(0, 2)),
                                latency=draw(st.integers(0, 2)), directed=one_way))
        done.add((a, b))
        if not one_way:
            done.add((b, a))
        if parallel and draw(st.integers(0, 2)) == 0:
            channels.append(Channel(name=f"{name}x", endpoints=(a, b), time_per_unit=draw(st.integers(1, 3)),
                                    latency=draw(st.integers(0, 2)), directed=one_way))
    return channels


def _overlaps(draw: Any, blocks: list[Block]) -> list[Overlap]:
    """One or two overlaps of fixed blocks that share their device tuple."""
    fixed: dict[tuple[str, ...], list[Block]] = {}
    for b in blocks:
        if b.is_fixed:
            fixed.setdefault(b.options[0].devices, []).append(b)
    pools = [group for group in fixed.values() if len(group) >= 2]
    if not pools or draw(st.integers(0, 2)) != 0:
        return []
    out: list[Overlap] = []
    for _ in range(draw(st.integers(1, 2))):
        pool = draw(st.sampled_from(pools))
        members = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=min(3, len(pool)),
                                unique_by=lambda b: b.name))
        names = [b.name for b in members]
        if any(set(o.blocks) == set(names) for o in out):
            continue
        durations = [b.options[0].duration for b in members]
        tied: tuple[tuple[str, ...], ...] = ()
        if draw(st.integers(0, 2)) == 0:
            tied = (tuple(names[:2]),)
        out.append(Overlap(blocks=names, duration=draw(st.integers(max(durations), sum(durations) + 1)),
                           name=f"g{len(out)}", same_microbatch=tied))
    return out


# --------------------------------------------------------------------------
# Pipeline placements
# --------------------------------------------------------------------------

#: Every layout :func:`pipeline_problems` draws from.
PIPELINE_LAYOUTS = ("1f1b", "zb", "interleaved", "v", "chimera", "dualpipe", "dualpipev", "tessel")

#: Layouts that declare overlapped groups (DualPipe's F&B pairs and fused I+W).
_OVERLAP_LAYOUTS = ("dualpipe", "dualpipev")


def _stage_times(draw: Any, stages: int, max_duration: int, minimum: int = 1) -> list[int]:
    return [draw(st.integers(minimum, max(minimum, max_duration))) for _ in range(stages)]


def _build_pipeline(draw: Any, layout: str, D: int, max_duration: int, fmem: int) -> Problem:
    """One micro-batch of ``layout`` on ``D`` devices (the count is set afterwards)."""
    import schedsearch.placements as pl

    if layout in ("1f1b", "zb"):
        F = _stage_times(draw, D, max_duration)
        if layout == "1f1b":
            return pl.stage_pipeline(list(range(D)), D, 1, forward=F, backward=_stage_times(draw, D, max_duration),
                                     forward_memory=fmem)
        ig, wg = _stage_times(draw, D, max_duration), _stage_times(draw, D, max_duration)
        return pl.stage_pipeline(list(range(D)), D, 1, forward=F, backward=[i + w for i, w in zip(ig, wg)],
                                 input_grad=ig, weight_grad=wg, split_backward=True, forward_memory=fmem)
    if layout == "interleaved":
        S = 2 * D
        return pl.interleaved(D, 2, 1, forward=_stage_times(draw, S, max_duration),
                              backward=_stage_times(draw, S, max_duration), forward_memory=fmem)
    if layout == "v":
        S = 2 * D
        if draw(st.booleans()):
            return pl.vshape_chunks(D, 1, forward=_stage_times(draw, S, max_duration),
                                    input_grad=_stage_times(draw, S, max_duration),
                                    weight_grad=_stage_times(draw, S, max_duration), forward_memory=fmem)
        return pl.vshape_chunks(D, 1, split_backward=False, forward=_stage_times(draw, S, max_duration),
                                backward=_stage_times(draw, S, max_duration), forward_memory=fmem)
    if layout == "chimera":
        return pl.chimera(D, 2, forward=_stage_times(draw, D, max_duration),
                          backward=_stage_times(draw, D, max_duration), forward_memory=fmem)
    if layout in ("dualpipe", "dualpipev"):
        f = draw(st.integers(1, max_duration))
        w = draw(st.integers(1, max_duration))
        b = w + draw(st.integers(1, max_duration))  # I = b - w >= 1
        overlap = draw(st.integers(max(f, b - w, w), f + b + 1))
        if layout == "dualpipe":
            return pl.dualpipe(D, 2, forward=f, backward=b, weight_grad=w, overlap=overlap, forward_memory=fmem)
        return pl.dualpipev(D, 1, forward=f, backward=b, weight_grad=w, overlap=overlap, forward_memory=fmem)
    if layout == "tessel":
        shape = draw(st.sampled_from(pl.TESSEL_SHAPES if D >= 2 else ("V", "X", "M")))
        return pl.tessel_shape(shape, D, 1, forward=draw(st.integers(1, max_duration)),
                               backward=draw(st.integers(1, max_duration)), forward_memory=fmem,
                               backward_memory=-fmem)
    raise InvalidOptionsError(f"pipeline_problems: unknown layout {layout!r}; choose from {PIPELINE_LAYOUTS}")


def _one_microbatch_need(problem: Problem) -> dict[str, int]:
    """Per device: initial memory plus every positive delta of one micro-batch
    there plus its largest workspace (what running micro-batches one after
    the other needs at most)."""
    need = {d: problem.initial_memory_of(d) for d in problem.cluster.device_names}
    ws = dict.fromkeys(need, 0)
    for b in problem.graph.blocks:
        for d in b.options[0].devices:
            need[d] += max(b.memory, 0)
            ws[d] = max(ws[d], b.workspace)
    return {d: need[d] + ws[d] for d in need}


@st.composite
def pipeline_problems(
    draw: Any,
    *,
    layouts: tuple[str, ...] | list[str] = PIPELINE_LAYOUTS,
    max_devices: int = 3,
    max_microbatches: int = 4,
    max_duration: int = 3,
    max_tasks: int = 48,
    memory: bool = True,
    overlaps: bool = True,
) -> Problem:
    """A pipeline problem built by the library's placement builders.

    What it generates: one of ``layouts`` (default :data:`PIPELINE_LAYOUTS`)
    on 1 to ``max_devices`` devices (2 or more for Tessel's NN and K):

    * ``"1f1b"``: stage ``s`` on device ``s``, F and B per stage (1F1B's and
      GPipe's placement, :func:`~schedsearch.placements.stage_pipeline`);
    * ``"zb"``: the same with the zero-bubble split into I and W;
    * ``"interleaved"``: two chunks per device, ``"loop"`` mapping;
    * ``"v"``: two chunks per device, ``"v"`` mapping (ZB-V's), with or
      without the split;
    * ``"chimera"``: a down and an up pipeline (one micro-batch of the
      problem holds one of each);
    * ``"dualpipe"``, ``"dualpipev"``: DualPipe's placements with their
      overlapped groups (fused ``B`` = I+W and ``F&B`` pairs);
    * ``"tessel"``: one of Tessel's V, X, M, NN and K shapes (full-shard
      blocks on every device at once).

    Stage times are drawn per stage in ``1..max_duration`` (one value per
    pass for DualPipe and Tessel, whose builders take one), forward memory
    is 1 or 2 and each micro-batch frees what it allocates. Micro-batches:
    1 to ``max_microbatches``, as many as keep the task instances within
    ``max_tasks`` (one at least, even when a single micro-batch has more
    blocks). With ``memory``, every device may get a capacity: at
    least what one micro-batch holds there (the allocations of every block
    of the micro-batch on that device), plus 0 to 2; the problem then stays
    feasible (micro-batches one after the other always fit) but the caps may
    bind hard. With ``overlaps=False`` the overlapped groups are dropped
    (the DualPipe placements remain, as plain split pipelines).

    What it never generates: transfers or channels (pipeline stages hand
    over through precedences), flexible placements, releases, fixed
    orders, duration overrides, the ``"max_span"`` objective, or a
    capacity below what one micro-batch needs on a device.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from schedsearch.handcrafted import pipeline_view
    >>> from schedsearch.testing import pipeline_problems
    >>> @settings(max_examples=10, derandomize=True, database=None, deadline=None)
    ... @given(pipeline_problems(layouts=["1f1b", "zb"], max_devices=2))
    ... def test_one_stage_per_device(problem):
    ...     assert len(pipeline_view(problem).mapping()) == len(problem.cluster.devices)
    >>> test_one_stage_per_device()
    """
    layouts = tuple(layouts)
    if not layouts or any(layout not in PIPELINE_LAYOUTS for layout in layouts):
        raise InvalidOptionsError(f"pipeline_problems: 'layouts' must be a non-empty subset of {PIPELINE_LAYOUTS}, "
                         f"got {layouts!r}")
    layout = draw(st.sampled_from(layouts))
    num_devices = draw(st.integers(1, max(1, max_devices)))
    base = _build_pipeline(draw, layout, num_devices, max_duration, draw(st.integers(1, 2)))
    per_mb = len(base.graph.blocks)
    most = max(1, min(max_microbatches, max_tasks // per_mb))
    n = draw(st.integers(1, most))
    changes: dict[str, Any] = {"num_microbatches": n, "name": f"{layout}-p{num_devices}-m{n}"}
    if not overlaps:
        changes["overlaps"] = ()
    if memory and draw(st.booleans()):
        need = _one_microbatch_need(base)
        devices = []
        for d in base.cluster.devices:
            capped = draw(st.integers(0, 3)) > 0  # most devices get one
            devices.append(Device(name=d.name, memory=need[d.name] + draw(st.integers(0, 2)) if capped else None))
        changes["cluster"] = Cluster(devices=devices, channels=base.cluster.channels)
    return base.with_(**changes)


# --------------------------------------------------------------------------
# Overlapped groups
# --------------------------------------------------------------------------


@st.composite
def overlap_problems(draw: Any, max_microbatches: int = 2) -> Problem:
    """Fixed-placement problems with one or two declared overlapped groups.

    What it generates: 1-2 devices, 2-4 blocks (``b0`` and ``b1`` on ``d0``,
    the others anywhere) of durations 1-3 and memory deltas -1..1, random
    precedence edges (lower to higher index), one or two overlaps of two
    blocks of ``d0`` lasting from their longest member to one more than
    their sum, a uniform capacity (none or 1-3) and 1 to
    ``max_microbatches`` micro-batches.

    What it never generates: transfers, channels, flexible or multi-device
    blocks, workspace, releases, fixed orders, overrides, ``same_microbatch``
    sets, the ``"max_span"`` objective. Memory may make a draw infeasible.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from schedsearch.testing import overlap_problems
    >>> @settings(max_examples=10, derandomize=True, database=None, deadline=None)
    ... @given(overlap_problems())
    ... def test_declares_groups(problem):
    ...     assert 1 <= len(problem.overlaps) <= 2
    >>> test_declares_groups()
    """
    num_devices = draw(st.integers(1, 2))
    names = [f"d{i}" for i in range(num_devices)]
    num_blocks = draw(st.integers(2, 4))
    blocks = []
    for i in range(num_blocks):
        dev = "d0" if i < 2 else draw(st.sampled_from(names))
        blocks.append(Block(name=f"b{i}", kind=draw(st.sampled_from(_KINDS)),
                            options=[Option(devices=(dev,), duration=draw(st.integers(1, 3)))],
                            memory=draw(st.integers(-1, 1))))
    edges = [Edge(src=f"b{i}", dst=f"b{j}") for j in range(num_blocks) for i in range(j)
             if draw(st.integers(0, 2)) == 0]
    overlap_list: list[Overlap] = []
    on_d0 = [b for b in blocks if b.options[0].devices == ("d0",)]
    for _ in range(draw(st.integers(1, 2))):
        pair = draw(st.lists(st.sampled_from(on_d0), min_size=2, max_size=2, unique_by=lambda b: b.name))
        if any(set(o.blocks) == {b.name for b in pair} for o in overlap_list):
            continue
        durs = [b.options[0].duration for b in pair]
        overlap_list.append(Overlap(blocks=[b.name for b in pair],
                                    duration=draw(st.integers(max(durs), sum(durs) + 1)),
                                    name=f"g{len(overlap_list)}"))
    capacity = draw(st.one_of(st.none(), st.integers(1, 3)))
    return Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=draw(st.integers(1, max_microbatches)),
                   cluster=Cluster(devices=[Device(name=n, memory=capacity) for n in names]),
                   overlaps=overlap_list)


# --------------------------------------------------------------------------
# Valid and broken plans
# --------------------------------------------------------------------------


@st.composite
def schedules(draw: Any, problem: Problem, *, max_delay: int = 2, fallback: bool = True) -> Schedule:
    """A valid plan of ``problem``: a random priority list schedule.

    What it generates: :func:`~schedsearch.testing.sgs.serial_schedule` of a
    random priority order of the task instances, a random preferred option
    per flexible task, a random channel per transfer where several serve it
    and, in half of the draws, random idle time (0 to ``max_delay``) before
    each task. Every plan passes :func:`~schedsearch.validate.validate`.
    When memory blocks the drawn order, the default order (micro-batch by
    micro-batch) is tried instead (with ``fallback``), first with the drawn
    options then with the first options; when that fails too the draw is
    rejected (the problem may be infeasible). On every pipeline of
    :func:`pipeline_problems` the fallback always succeeds.

    What it never generates: overlapped groups (members of a declared
    :class:`~schedsearch.problem.Overlap` always run alone, which the model
    always allows), so a plan that needs a group to fit is out of reach;
    transfers that start later than the earliest gap of their channel.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from schedsearch import validate
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import schedules
    >>> problem = vshape(2, 2, memory=2)
    >>> @settings(max_examples=10, derandomize=True, database=None, deadline=None)
    ... @given(schedules(problem))
    ... def test_valid(plan):
    ...     assert validate(problem, plan) == ()
    >>> test_valid()
    """
    keys = list(problem.tasks)
    order = draw(st.permutations(keys))
    blocks = problem.graph.by_name()
    options = {k: draw(st.integers(0, len(blocks[k[0]].options) - 1))
               for k in keys if len(blocks[k[0]].options) > 1}
    channels: dict[tuple[str, str, int], int] = {}
    cluster = problem.cluster
    if any(len(cluster.channels_between(a, b)) > 1 for a in cluster.device_names for b in cluster.device_names):
        for e in problem.graph.edges:
            if e.size > 0:
                for m in range(problem.num_microbatches):
                    channels[(e.src, e.dst, m)] = draw(st.integers(0, 1))
    delays: dict[tuple[str, int], int] = {}
    if max_delay > 0 and draw(st.booleans()):
        delays = {k: draw(st.integers(0, max_delay)) for k in keys}
    schedule = serial_schedule(problem, order, options=options, channels=channels, delays=delays,
                               name="random list schedule")
    if schedule is None and fallback:
        default = topological_order(problem)
        schedule = (serial_schedule(problem, default, options=options, channels=channels, name="list schedule")
                    or serial_schedule(problem, default, name="list schedule"))
    assume(schedule is not None)
    return schedule


@st.composite
def problems_and_schedules(draw: Any, problem_strategy: Any = None, **schedule_options: Any) -> tuple[Problem, Schedule]:
    """A ``(problem, valid plan)`` pair: a problem of ``problem_strategy``
    (default :func:`problems`) and a plan of :func:`schedules`.

    ``schedule_options`` go to :func:`schedules`; a problem that has no plan
    it can build is rejected, so every pair holds a plan.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from schedsearch import metrics
    >>> from schedsearch.bounds import analytic_lower_bound
    >>> from schedsearch.testing import problems, problems_and_schedules
    >>> @settings(max_examples=10, derandomize=True, database=None, deadline=None)
    ... @given(problems_and_schedules(problems(max_tasks=4, max_span=False)))
    ... def test_bound_below_every_plan(pair):
    ...     problem, plan = pair
    ...     assert analytic_lower_bound(problem).value <= plan.makespan
    >>> test_bound_below_every_plan()
    """
    problem = draw(problems() if problem_strategy is None else problem_strategy)
    return problem, draw(schedules(problem, **schedule_options))


@st.composite
def broken(draw: Any, problem: Problem, schedule: Schedule, *, kinds: Any = None) -> Mutation:
    """A mutation of the valid plan ``schedule`` that breaks one rule.

    What it generates: a :class:`~schedsearch.testing.mutations.Mutation`: its
    ``kind`` (one of :data:`~schedsearch.validate.VIOLATION_KINDS`), the
    broken ``schedule`` and a ``description``. The kind is drawn among
    ``kinds`` (default: all) that this plan of this problem can produce
    (:func:`~schedsearch.testing.mutations.producible_kinds`: e.g.
    ``release`` needs a release after time 0, ``channel_overlap`` a
    transfer of positive length, ``memory`` a capacity that piling up the
    allocations exceeds); the place (task, edge, transfer, device) is drawn
    among those where it applies. :func:`~schedsearch.validate.validate`
    always reports the drawn kind for the broken plan (possibly with
    others).

    What it never generates: a mutation of a kind the plan cannot produce
    (a draw with none of ``kinds`` producible is rejected), or a plan that
    still validates.

    Examples
    --------
    The validator finds every planted violation:

    >>> from hypothesis import given, settings
    >>> from schedsearch import validate
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import broken
    >>> problem = vshape(2, 2)
    >>> @settings(max_examples=10, derandomize=True, database=None, deadline=None)
    ... @given(broken(problem, one_f_one_b(problem)))
    ... def test_reported(mutation):
    ...     assert mutation.kind in {v.kind for v in validate(problem, mutation.schedule)}
    >>> test_reported()
    """
    wanted = VIOLATION_KINDS if kinds is None else tuple(kinds)
    unknown = [k for k in wanted if k not in VIOLATION_KINDS]
    if unknown:
        raise InvalidOptionsError(f"broken: unknown violation kind {unknown[0]!r}; choose from {VIOLATION_KINDS}")
    sites = mutation_sites(problem, schedule)
    available = [k for k in VIOLATION_KINDS if k in wanted and sites[k]]
    assume(bool(available))
    kind = draw(st.sampled_from(available))
    site = draw(st.sampled_from(sites[kind]))
    return mutate(problem, schedule, kind, site)
