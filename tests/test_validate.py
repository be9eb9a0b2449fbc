"""The independent validator: a valid schedule passes; each violation kind is caught
when a valid schedule is broken on purpose; every violation is reported."""

from __future__ import annotations

import attrs
import pytest

from schedsearch.errors import ValidationFailedError
from schedsearch.placements import vshape
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem
from schedsearch.schedule import Schedule, TaskInstance, Transfer
from schedsearch.validate import VIOLATION_KINDS, assert_valid, validate


def base_problem(**kw) -> Problem:
    """d0, d1 (memory 3) and one channel; A -(2)-> B -(1)-> C -> S (full shard)."""
    blocks = [
        Block(name="A", options=[Option(devices=("d0",), duration=2)], memory=1),
        Block(name="B", options=[Option(devices=("d1",), duration=1)], workspace=1),
        Block(name="C", options=[Option(devices=("d0",), duration=1)], memory=-1),
        Block(name="S", options=[Option(devices=("d0", "d1"), duration=1)]),
    ]
    edges = [Edge(src="A", dst="B", size=2), Edge(src="B", dst="C", size=1), Edge(src="C", dst="S")]
    cluster = Cluster(
        devices=[Device(name="d0", memory=3), Device(name="d1", memory=3)],
        channels=[Channel(name="c", endpoints=("d0", "d1"), time_per_unit=1)],
    )
    return Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=1, cluster=cluster, **kw)


def base_schedule() -> Schedule:
    return Schedule(
        tasks=[
            TaskInstance(block="A", microbatch=0, devices=("d0",), start=0, end=2),
            TaskInstance(block="B", microbatch=0, devices=("d1",), start=4, end=5),
            TaskInstance(block="C", microbatch=0, devices=("d0",), start=6, end=7),
            TaskInstance(block="S", microbatch=0, devices=("d0", "d1"), start=7, end=8),
        ],
        transfers=[
            Transfer(src="A", dst="B", microbatch=0, channel="c", start=2, end=4),
            Transfer(src="B", dst="C", microbatch=0, channel="c", start=5, end=6),
        ],
    )


def replace_task(s: Schedule, block: str, **changes) -> Schedule:
    tasks = [attrs.evolve(t, **changes) if t.block == block else t for t in s.tasks]
    return attrs.evolve(s, tasks=tasks)


def test_base_schedule_is_valid():
    assert validate(base_problem(), base_schedule()) == ()
    assert assert_valid(base_problem(), base_schedule()) == base_schedule()


def kinds(problem: Problem, schedule: Schedule) -> set[str]:
    return {v.kind for v in validate(problem, schedule)}


def _memory_case():
    p = vshape(2, 2, memory=1)  # forward +1 per stage, capacity 1: only one micro-batch in flight
    gpipe = Schedule(tasks=[
        TaskInstance(block="F0", microbatch=0, devices="d0", start=0, end=1),
        TaskInstance(block="F0", microbatch=1, devices="d0", start=1, end=2),
        TaskInstance(block="F1", microbatch=0, devices="d1", start=1, end=2),
        TaskInstance(block="F1", microbatch=1, devices="d1", start=2, end=3),
        TaskInstance(block="B1", microbatch=0, devices="d1", start=3, end=5),
        TaskInstance(block="B1", microbatch=1, devices="d1", start=5, end=7),
        TaskInstance(block="B0", microbatch=0, devices="d0", start=5, end=7),
        TaskInstance(block="B0", microbatch=1, devices="d0", start=7, end=9),
    ])
    return p, gpipe


base = base_schedule()
MUTATIONS = {
    "missing_task": (base_problem(), attrs.evolve(base, tasks=[t for t in base.tasks if t.block != "S"])),
    "duplicate_task": (base_problem(), attrs.evolve(base, tasks=list(base.tasks) + [base.tasks[-1]])),
    "unknown_task": (base_problem(), attrs.evolve(
        base, tasks=list(base.tasks) + [TaskInstance(block="Z", microbatch=0, devices="d0", start=9, end=10)])),
    "option_not_allowed": (base_problem(), replace_task(base, "C", devices=("d1",))),
    "wrong_duration": (base_problem(), replace_task(base, "C", end=8)),
    "release": (base_problem(releases=[("S", 0, 9)]), base),
    "device_overlap": (base_problem(), replace_task(base, "S", start=6, end=7)),
    "dependency": (base_problem(), replace_task(base, "B", start=3, end=4)),
    "missing_transfer": (base_problem(), attrs.evolve(base, transfers=base.transfers[1:])),
    "wrong_transfer": (base_problem(), attrs.evolve(
        base, transfers=[attrs.evolve(base.transfers[0], end=3)] + list(base.transfers[1:]))),
    "unexpected_transfer": (base_problem(), attrs.evolve(
        base, transfers=list(base.transfers) + [Transfer(src="C", dst="S", microbatch=0, channel="c", start=7, end=7)])),
    "channel_overlap": (base_problem(), attrs.evolve(
        base,
        tasks=[attrs.evolve(t, start=t.start + 2, end=t.end + 2) if t.block in ("C", "S") else t for t in base.tasks],
        transfers=[base.transfers[0], attrs.evolve(base.transfers[1], start=3, end=4)],
    )),
    "memory": _memory_case(),
    "fixed_order": (base_problem(fixed_orders=[[("S", 0), ("C", 0)]]), base),
}


def test_every_kind_has_a_mutation():
    assert set(MUTATIONS) == set(VIOLATION_KINDS)


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_mutation_is_caught(kind):
    problem, schedule = MUTATIONS[kind]
    found = validate(problem, schedule)
    assert kind in {v.kind for v in found}, found
    with pytest.raises(ValidationFailedError) as info:
        assert_valid(problem, schedule)
    assert kind in {v.kind for v in info.value.violations}


def test_every_violation_is_reported_not_just_the_first():
    broken = replace_task(base_schedule(), "C", devices=("d1",))  # option not allowed
    broken = replace_task(broken, "B", start=3, end=4)  # dependency
    broken = attrs.evolve(broken, tasks=[t for t in broken.tasks if t.block != "S"])  # missing
    found = kinds(base_problem(), broken)
    assert {"option_not_allowed", "dependency", "missing_task"} <= found


def test_memory_message_names_device_level_and_capacity():
    problem, schedule = _memory_case()
    (v,) = [v for v in validate(problem, schedule) if v.kind == "memory" and "'d0'" in v.message]
    assert "device 'd0': memory level 2 exceeds capacity 1 at time 1" in v.message


def test_workspace_counts_while_running():
    # d0 holds A's activation (+1) when C needs 2 units of workspace: 3 > capacity 2
    blocks = [
        Block(name="A", options=[Option(devices=("d0",), duration=1)], memory=1),
        Block(name="C", options=[Option(devices=("d0",), duration=1)], workspace=2),
        Block(name="D", options=[Option(devices=("d0",), duration=1)], memory=-1),
    ]
    problem = Problem(graph=Graph(blocks=blocks, edges=[("A", "D")]), num_microbatches=1,
                      cluster=Cluster(devices=[Device(name="d0", memory=2)]))

    def at(a, c, d):
        return Schedule(tasks=[TaskInstance(block="A", microbatch=0, devices="d0", start=a, end=a + 1),
                               TaskInstance(block="C", microbatch=0, devices="d0", start=c, end=c + 1),
                               TaskInstance(block="D", microbatch=0, devices="d0", start=d, end=d + 1)])

    assert "memory" in kinds(problem, at(0, 1, 2))  # C runs while A's activation is held
    assert validate(problem, at(1, 0, 2)) == ()  # C's workspace is released before A allocates
    assert validate(problem, at(0, 2, 1)) == ()  # D frees the activation before C runs


def test_half_open_intervals_touching_is_fine():
    # end == next start on the same device is not an overlap
    s = base_schedule()
    assert all(v.kind != "device_overlap" for v in validate(base_problem(), s))


def test_validator_imports_no_encoder_or_solver():
    import ast
    import pathlib

    import importlib

    module = importlib.import_module("schedsearch.validate")

    tree = ast.parse(pathlib.Path(module.__file__).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {m for m in names if m.startswith(("schedsearch.encode", "z3", "ortools"))}


def test_memory_counts_each_known_task_instance_once():
    # A allocates 1 on d0 (capacity 3): counted four times it would reach 4; a repeated A, or a task of an
    # unknown block, adds nothing to the level
    base = base_schedule()
    a = next(t for t in base.tasks if t.block == "A")
    extra = [a] * 3 + [TaskInstance(block="Z", microbatch=0, devices=("d0",), start=0, end=1)]
    found = kinds(base_problem(), attrs.evolve(base, tasks=list(base.tasks) + extra))
    assert found == {"duplicate_task", "unknown_task"}


def test_options_on_the_same_devices_are_told_apart_by_duration_for_every_instance():
    # one block, two options on d0 (durations 1 and 3); each instance may take either, and a third length is wrong
    blocks = [Block(name="A", options=[Option(devices=("d0",), duration=1), Option(devices=("d0",), duration=3)])]
    problem = Problem(graph=Graph(blocks=blocks, edges=[]), num_microbatches=3, cluster=Cluster(devices=[Device(name="d0")]))

    def plan(lengths):
        starts = [0, 4, 8]
        return Schedule(tasks=[TaskInstance(block="A", microbatch=m, devices=("d0",), start=s, end=s + n)
                               for m, (s, n) in enumerate(zip(starts, lengths))])

    assert validate(problem, plan([1, 3, 1])) == ()
    (v,) = validate(problem, plan([3, 2, 1]))
    assert v.kind == "wrong_duration" and "'A' (micro-batch 1) lasts 2" in v.message and "one of [1, 3]" in v.message
