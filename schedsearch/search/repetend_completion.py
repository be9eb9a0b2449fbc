"""Completion of a repetend: its warmup and cooldown (Tessel, Eq. 5 and 6).

The warmup and cooldown task sets follow from the offsets (see
:func:`~schedsearch.periodic.warmup_keys` and
:func:`~schedsearch.periodic.cooldown_keys`; a fold-``k`` repetend has one
cooldown per residue of ``n - O - 1`` modulo ``k``). Each part can be built
in two ways:

* **truncated**: the tasks keep the times the infinite steady state gives
  them (instances ``j < 0`` for the warmup, ``j >= 1`` for the cooldown); no
  solver is involved. It is valid whenever the steady state is and every
  micro-batch's running sum of memory deltas on a device stays >= 0
  (allocations before the frees that depend on them): it is then a
  sub-schedule of the steady state from which whole micro-batches were
  dropped, which only lowers memory. The caller validates it.
* **solved**: the part becomes an ordinary :class:`~schedsearch.problem.Problem`
  (one block per task instance, named ``block@k``, edges within a
  micro-batch, Tessel's Property 4.1 as fixed orders between the copies of
  a block), solved by a backend, time-optimally or for feasibility only.
  The warmup starts from the problem's initial memory and ends before
  instance 0 starts; the cooldown starts from the memory the warmup and
  one instance leave, and begins after that instance ends.
"""

from __future__ import annotations

import attrs

from schedsearch.encode import Backend, SolveOptions, solve
from schedsearch.periodic import PeriodicSchedule, Repetend
from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, TaskInstance
from schedsearch.validate import validate

__all__ = [
    "truncated_warmup",
    "truncated_cooldown",
    "part_problem",
    "solve_part",
    "assemble",
    "levels_after",
    "instance_end",
]

Key = tuple[str, int]


def instance_end(repetend: Repetend) -> int:
    """End of instance 0 relative to its start: ``max(t_b + p_b)``."""
    return max(t.phase + t.duration for t in repetend.tasks)


def truncated_warmup(repetend: Repetend) -> tuple[Schedule, int]:
    """The warmup at its steady-state times, and the start of instance 0.

    Instance ``-i`` runs task ``r`` on micro-batch ``o_r - k i``; instance 0
    starts at ``max((o_r // k) P - t_r)`` so that every warmup task starts
    at or after time 0.
    """
    P, k = repetend.period, repetend.fold
    start0 = max([(t.offset // k) * P - t.phase for t in repetend.tasks if t.offset >= k], default=0)
    tasks = []
    for t in repetend.tasks:
        for i in range(1, t.offset // k + 1):
            s = start0 - i * P + t.phase
            tasks.append(
                TaskInstance(block=t.block, microbatch=t.offset - k * i, devices=t.devices, start=s, end=s + t.duration)
            )
    return Schedule(tasks=tasks), start0


def truncated_cooldown(repetend: Repetend, repetend_start: int, residue: int = 0) -> Schedule:
    """The cooldown of residue ``residue`` (one instance before it) at its steady-state times."""
    P, k, O = repetend.period, repetend.fold, repetend.max_offset
    tasks = []
    for t in repetend.tasks:
        for j in range(1, (O + residue - t.offset) // k + 1):
            s = repetend_start + j * P + t.phase
            tasks.append(
                TaskInstance(block=t.block, microbatch=k * j + t.offset, devices=t.devices, start=s, end=s + t.duration)
            )
    return Schedule(tasks=tasks)


def part_problem(
    problem: Problem, keys: list[Key], level: dict[str, int], objective: str, name: str
) -> tuple[Problem, dict[str, Key]] | None:
    """An ordinary Problem holding the task instances ``keys`` as blocks.

    ``level`` is the memory on each device when the part starts. Returns
    None when ``keys`` is empty, or when a block cannot fit beside that
    level even after every free that may come first
    (:meth:`~schedsearch.problem.Problem.memory_refusal`: the part is
    infeasible).
    """
    if not keys:
        return None
    graph = problem.graph
    names: dict[Key, str] = {key: f"{key[0]}@{key[1]}" for key in keys}
    blocks = []
    for b, k in keys:
        src = graph.block(b)
        blocks.append(
            Block(name=names[(b, k)], kind=src.kind, options=src.options, memory=src.memory,
                  workspace=src.workspace, stage=src.stage)
        )
    present = set(keys)
    edges = [
        Edge(src=names[(e.src, k)], dst=names[(e.dst, k)])
        for e in graph.edges
        for k in sorted({k for _, k in keys})
        if (e.src, k) in present and (e.dst, k) in present
    ]
    chains: dict[str, list[int]] = {}
    for b, k in keys:
        chains.setdefault(b, []).append(k)
    orders = [[(names[(b, k)], 0) for k in sorted(ks)] for b, ks in chains.items() if len(ks) > 1]
    devices, initial = [], {}
    for dev in problem.cluster.devices:
        amount = level.get(dev.name, 0)
        if dev.memory is None:
            devices.append(dev)
            continue
        if amount < 0:
            # the model forbids negative initial memory: lend the deficit to the capacity
            devices.append(Device(name=dev.name, memory=dev.memory - amount, speed_class=dev.speed_class))
        else:
            if amount > dev.memory:
                return None
            devices.append(dev)
            if amount:
                initial[dev.name] = amount
    # built unbounded, then asked whether any order fits the capacities (a proof when it says no)
    sub = Problem(
        graph=Graph(blocks=blocks, edges=edges),
        num_microbatches=1,
        cluster=Cluster(devices=[attrs.evolve(d, memory=None) for d in devices], channels=problem.cluster.channels),
        initial_memory=initial,
        fixed_orders=orders,
        objective=objective,
        name=f"{problem.name or 'problem'} {name}",
    )
    if sub.memory_refusal({d.name: d.memory for d in devices}) is not None:
        return None
    sub = sub.with_(cluster=Cluster(devices=devices, channels=problem.cluster.channels))
    return sub, {v: k for k, v in names.items()}


def solve_part(
    problem: Problem,
    keys: list[Key],
    level: dict[str, int],
    *,
    objective: str,
    name: str,
    backend: str | Backend,
    options: SolveOptions,
    hint: Schedule | None = None,
) -> tuple[Status, Schedule | None, SearchResult | None]:
    """Solve one part (``objective`` "makespan" or "feasibility").

    ``hint`` is a schedule of the same tasks (original names, any time
    origin), e.g. the truncated part; shifted to start at 0, it is used as a
    warm start when it is valid for the part on its own. Returns the status,
    the part's schedule in the original task names (times from 0), and the
    backend's result. An empty part is OPTIMAL with an empty schedule.
    """
    if not keys:
        return Status.OPTIMAL, Schedule(tasks=()), None
    built = part_problem(problem, keys, level, objective, name)
    if built is None:
        return Status.INFEASIBLE, None, None
    sub, back = built
    if hint is not None and hint.tasks:
        names = {v: k for k, v in back.items()}
        origin = min(t.start for t in hint.tasks)
        try:
            start = Schedule(
                tasks=[
                    TaskInstance(block=names[t.key], microbatch=0, devices=t.devices, start=t.start - origin,
                                 end=t.end - origin)
                    for t in hint.tasks
                ]
            )
        except KeyError:
            start = None
        if start is not None and not validate(sub, start):
            options = attrs.evolve(options, warm_start=start)
    result = solve(sub, backend, options)
    if result.schedule is None:
        return result.status, None, result
    tasks = [
        TaskInstance(block=back[t.block][0], microbatch=back[t.block][1], devices=t.devices, start=t.start, end=t.end)
        for t in result.schedule.tasks
    ]
    return result.status, Schedule(tasks=tasks), result


def assemble(
    problem: Problem,
    repetend: Repetend,
    warmup: Schedule | None,
    cooldowns: list[Schedule | None] | None,
    name: str = "",
) -> PeriodicSchedule:
    """Build a :class:`PeriodicSchedule` from solved parts (None = truncated).

    A solved warmup runs from time 0 and instance 0 starts when it ends; a
    solved cooldown (times from 0) starts when instance 0 ends.
    ``cooldowns`` gives one part per residue (None: all truncated).
    """
    if warmup is None:
        warm, start0 = truncated_warmup(repetend)
    else:
        warm, start0 = warmup, warmup.makespan
    parts = cooldowns if cooldowns is not None else [None] * repetend.fold
    cool = []
    for rho, part in enumerate(parts):
        if part is None:
            cool.append(truncated_cooldown(repetend, start0, rho))
        else:
            cool.append(part.shifted(start0 + instance_end(repetend)))
    return PeriodicSchedule(
        problem=problem, repetend=repetend, warmup=warm, repetend_start=start0, cooldowns=cool, name=name
    )


def levels_after(problem: Problem, repetend: Repetend, instances: int) -> dict[str, int]:
    """Memory on each device after the warmup and ``instances`` instances."""
    entry = repetend.entry_memory(problem)
    blocks = problem.graph.by_name()
    for t in repetend.tasks:
        for d in t.devices:
            entry[d] = entry.get(d, 0) + instances * blocks[t.block].memory
    return entry

