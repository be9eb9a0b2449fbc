"""Overlapped groups in the model: Problem.overlaps, TaskInstance.overlap, the validator,
busy time, JSON, the backends' feature check and the analytic bound.

Fixture: one device, blocks F (1, +1), I (1, 0), W (1, -1) with F -> I -> W, and
the declared groups "B" = I+W lasting 2 and "F&B" = F+I+W lasting 2 (shorter
than the members' 3, as DualPipe's F&B = 2).
"""

from __future__ import annotations

import attrs
import pytest

from schedsearch.bounds.analytic import analytic_lower_bound
from schedsearch.encode.backends import problem_features, solve
from schedsearch.errors import InvalidProblemError, InvalidScheduleError, UnsupportedFeatureError
from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Overlap, Problem
from schedsearch.schedule import Schedule, TaskInstance, busy_time, metrics, overlap_groups
from schedsearch.validate import validate


def problem(**kw) -> Problem:
    blocks = [
        Block(name="F", kind="F", options=[Option(devices=("d0",), duration=1)], memory=1),
        Block(name="I", kind="I", options=[Option(devices=("d0",), duration=1)], memory=0),
        Block(name="W", kind="W", options=[Option(devices=("d0",), duration=1)], memory=-1),
    ]
    kw.setdefault("overlaps", [Overlap(blocks=("I", "W"), duration=2, name="B"),
                               Overlap(blocks=("F", "I", "W"), duration=2, name="F&B")])
    return Problem(graph=Graph(blocks=blocks, edges=[Edge(src="F", dst="I"), Edge(src="I", dst="W")]),
                   num_microbatches=2, cluster=Cluster(devices=[Device(name="d0", memory=2)]), **kw)


def t(block, mb, start, end, overlap=None):
    return TaskInstance(block=block, microbatch=mb, devices=("d0",), start=start, end=end, overlap=overlap)


def grouped() -> Schedule:
    """mb 0: F, then its I+W fused (B) overlapped with F of mb 1 (an F&B group lasting 2);
    then mb 1's I+W fused: makespan 1 + 2 + 2 = 5 (plain: 6)."""
    return Schedule(tasks=[
        t("F", 0, 0, 1),
        t("F", 1, 1, 3, "F&B"), t("I", 0, 1, 3, "F&B"), t("W", 0, 1, 3, "F&B"),
        t("I", 1, 3, 5, "B"), t("W", 1, 3, 5, "B"),
    ])


def kinds(p, s):
    return sorted({v.kind for v in validate(p, s)})


def test_declared_groups_are_valid_and_count_once_in_busy_time():
    p, s = problem(), grouped()
    assert validate(p, s) == ()
    assert s.makespan == 5
    assert busy_time(s) == {"d0": 5}  # 1 + 2 + 2: each group once
    m = metrics(p, s)
    assert m.bubble_global == 0
    # memory: F0 +1 at 0; group at 1: +1 (F1) -1 (W0) -> 1; W1 at 3 -> 0
    assert m.peak_memory == {"d0": 1}
    assert len(overlap_groups(s)) == 2


def test_undeclared_group_is_a_device_overlap():
    p = problem(overlaps=[Overlap(blocks=("I", "W"), duration=2, name="B")])  # no F&B declared
    assert "device_overlap" in kinds(p, grouped())


def test_group_of_wrong_duration_is_caught():
    s = grouped()
    tasks = [attrs.evolve(x, end=x.end + 1) if x.overlap == "B" else x for x in s.tasks]
    assert kinds(problem(), Schedule(tasks=tasks)) == ["wrong_duration"]


def test_lone_tagged_task_is_checked_as_a_plain_task():
    s = Schedule(tasks=[t("F", 0, 0, 1, "F&B"), t("I", 0, 1, 2), t("W", 0, 2, 3),
                        t("F", 1, 3, 4), t("I", 1, 4, 5), t("W", 1, 5, 6)])
    assert validate(problem(), s) == ()
    bad = Schedule(tasks=[t("F", 0, 0, 2, "F&B")] + list(s.tasks[1:]))
    assert "wrong_duration" in kinds(problem(), bad)


def test_group_running_members_against_their_order_breaks_the_dependency():
    p = problem(overlaps=[Overlap(blocks=("W", "I"), duration=2, name="B"),
                          Overlap(blocks=("F", "I", "W"), duration=2, name="F&B")])
    assert "dependency" in kinds(p, grouped())  # the "B" group declares W before I


def test_members_of_different_groups_still_may_not_overlap():
    s = grouped()
    tasks = [attrs.evolve(x, start=2, end=4) if x.overlap == "B" else x for x in s.tasks]
    assert "device_overlap" in kinds(problem(), Schedule(tasks=tasks))


def test_overlap_declarations_are_checked():
    problem(overlaps=[Overlap(blocks=("F", "W"), duration=1)])  # fine: the longest member lasts 1
    with pytest.raises(InvalidProblemError, match="names an unknown block"):
        problem(overlaps=[Overlap(blocks=("I", "Z"), duration=2)])
    with pytest.raises(InvalidProblemError, match="'duration' must be >= 1, got 0"):
        Overlap(blocks=("I", "W"), duration=0)


def test_overlap_needs_two_distinct_blocks_on_one_device():
    with pytest.raises(InvalidProblemError, match="at least two blocks"):
        Overlap(blocks=("I",), duration=1)
    with pytest.raises(InvalidProblemError, match="must not repeat"):
        Overlap(blocks=("I", "I"), duration=1)
    blocks = [Block(name="A", options=[Option(devices=("d0",), duration=1)]),
              Block(name="B", options=[Option(devices=("d1",), duration=2)])]
    cluster = Cluster(devices=[Device(name="d0"), Device(name="d1")])
    with pytest.raises(InvalidProblemError, match="same devices"):
        Problem(graph=Graph(blocks=blocks), num_microbatches=1, cluster=cluster,
                overlaps=[Overlap(blocks=("A", "B"), duration=2)])
    blocks[1] = Block(name="B", options=[Option(devices=("d0",), duration=2)])
    with pytest.raises(InvalidProblemError, match="longest member"):
        Problem(graph=Graph(blocks=blocks), num_microbatches=1, cluster=cluster,
                overlaps=[Overlap(blocks=("A", "B"), duration=1)])
    with pytest.raises(InvalidProblemError, match="declared twice"):
        Problem(graph=Graph(blocks=blocks), num_microbatches=1, cluster=cluster,
                overlaps=[Overlap(blocks=("A", "B"), duration=2), Overlap(blocks=("B", "A"), duration=3)])


def test_overlap_tag_must_be_a_string():
    with pytest.raises(InvalidScheduleError, match="'overlap' must be a non-empty string"):
        TaskInstance(block="F", microbatch=0, devices="d0", start=0, end=1, overlap="")


def test_json_round_trips_keep_groups_and_stay_compatible():
    p, s = problem(), grouped()
    assert Problem.from_json(p.to_json()) == p
    assert Schedule.from_json(s.to_json()) == s
    plain = problem(overlaps=())
    assert "overlaps" not in plain.to_dict()  # documents without groups are unchanged
    assert "overlap" not in grouped().tasks[0].to_dict()


def test_a_backend_without_overlaps_refuses_and_points_to_the_way_out():
    assert "overlaps" in problem_features(problem())

    class NoOverlaps:
        name = "no-overlaps"
        features = frozenset({"memory", "transfers", "workspace", "flexible_options", "multi_device"})

        def solve(self, problem, options):  # pragma: no cover - never reached
            raise AssertionError

    with pytest.raises(UnsupportedFeatureError, match=r"problem.with_\(overlaps=\(\)\)"):
        solve(problem(), NoOverlaps())


def test_both_backends_search_overlaps():
    for backend in ("cpsat", "z3"):
        result = solve(problem(), backend)
        assert result.schedule is not None and result.objective <= grouped().makespan


def test_analytic_bound_stays_a_bound_with_shortening_groups():
    # the grouped schedule has makespan 5 < 6 = plain work: the device bound must not claim 6
    bound = analytic_lower_bound(problem())
    assert bound.value <= grouped().makespan
    # the device bound and the average load count the work less what groups can save
    assert bound.parts["device d0"] <= grouped().makespan and bound.parts["average_load"] <= grouped().makespan
    # without groups the device bound is back: 2 micro-batches x 3 units
    assert analytic_lower_bound(problem(overlaps=())).value == 6
