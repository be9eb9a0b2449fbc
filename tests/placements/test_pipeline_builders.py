"""Placement builders: names, stages, devices, edges, durations, memory, overlaps, errors."""

from __future__ import annotations

import pytest

from schedsearch.errors import InvalidProblemError
from schedsearch.placements import (
    bidirectional,
    chain_pipelines,
    chimera,
    dualpipe,
    dualpipev,
    interleaved,
    mapping_style,
    stage_mapping,
    stage_pipeline,
    vshape,
    vshape_chunks,
    zero_bubble,
)


def devices_of(problem):
    return {b.name: b.options[0].devices[0] for b in problem.graph.blocks}


def edges_of(problem):
    return {(e.src, e.dst) for e in problem.graph.edges}


def test_vshape_keeps_its_names_and_shape():
    p = vshape(3, 2)
    assert [b.name for b in p.graph.blocks] == ["F0", "F1", "F2", "B2", "B1", "B0"]
    assert edges_of(p) == {("F0", "F1"), ("F1", "F2"), ("F2", "B2"), ("B2", "B1"), ("B1", "B0")}
    assert devices_of(p) == {"F0": "d0", "F1": "d1", "F2": "d2", "B2": "d2", "B1": "d1", "B0": "d0"}
    assert [(b.kind, b.stage, b.memory) for b in p.graph.blocks][:1] == [("F", 0, 1)]
    assert p.graph.block("B1").memory == -1 and p.overlaps == ()


def test_bidirectional_keeps_its_suffixes():
    p = bidirectional(2, 4)
    assert p.num_microbatches == 2
    assert devices_of(p)["F0.up"] == "d1" and devices_of(p)["F0.down"] == "d0"


def test_split_backward_structure():
    p = zero_bubble(3, 2, forward=2, input_grad=3, weight_grad=1)
    names = [b.name for b in p.graph.blocks]
    assert names == ["F0", "F1", "F2", "I2", "W2", "I1", "W1", "I0", "W0"]
    # I depends on the next stage's I (or the last forward); W only on its own I
    assert edges_of(p) == {("F0", "F1"), ("F1", "F2"), ("F2", "I2"), ("I2", "W2"), ("I2", "I1"), ("I1", "W1"),
                           ("I1", "I0"), ("I0", "W0")}
    b = p.graph.by_name()
    assert (b["F1"].options[0].duration, b["I1"].options[0].duration, b["W1"].options[0].duration) == (2, 3, 1)
    # an activation is held from F's start to W's start
    assert (b["F1"].memory, b["I1"].memory, b["W1"].memory) == (1, 0, -1)
    assert (b["I1"].kind, b["W1"].kind, b["W1"].stage) == ("I", "W", 1)


def test_per_stage_durations_and_memory():
    p = stage_pipeline([0, 1, 1], 2, 1, forward=[1, 2, 3], backward=[2, 4, 6], forward_memory=[5, 6, 7])
    b = p.graph.by_name()
    assert [b[f"F{s}"].options[0].duration for s in range(3)] == [1, 2, 3]
    assert [b[f"B{s}"].options[0].duration for s in range(3)] == [2, 4, 6]
    assert [b[f"B{s}"].memory for s in range(3)] == [-5, -6, -7]
    assert devices_of(p)["F2"] == "d1"


def test_default_split_of_backward_durations():
    p = stage_pipeline([0, 1], 2, 1, backward=5, split_backward=True)
    b = p.graph.by_name()
    assert (b["I0"].options[0].duration, b["W0"].options[0].duration) == (3, 2)  # W = B // 2, I = B - W


def test_mappings():
    assert stage_mapping("loop", 4, 8) == (0, 1, 2, 3, 0, 1, 2, 3)
    assert stage_mapping("v", 4, 8) == (0, 1, 2, 3, 3, 2, 1, 0)
    assert stage_mapping("v", 2, 6) == (0, 1, 1, 0, 0, 1)
    assert mapping_style((0, 1, 1, 0), 2) == "v"
    assert mapping_style((0, 1, 0, 1), 2) == "loop"
    assert mapping_style((1, 0), 2) is None
    with pytest.raises(InvalidProblemError, match="multiple of 'num_devices'"):
        stage_mapping("v", 4, 6)
    with pytest.raises(InvalidProblemError, match="must be one of"):
        stage_mapping("zigzag", 4, 8)


def test_interleaved_and_v_chunks():
    p = interleaved(2, 3, 4)
    assert p.name.endswith("(time x3)")
    d = devices_of(p)
    assert [d[f"F{s}"] for s in range(6)] == ["d0", "d1"] * 3
    v = vshape_chunks(3, 5)
    d = devices_of(v)
    assert [d[f"F{s}"] for s in range(6)] == ["d0", "d1", "d2", "d2", "d1", "d0"]
    assert "I5" in v.graph.by_name() and "B5" not in v.graph.by_name()


def test_dualpipe_declares_full_backward_and_overlapped_pairs():
    p = dualpipe(4, 8, overlap=3)
    assert p.num_microbatches == 4  # pairs of down and up micro-batches
    d = devices_of(p)
    for r in range(4):
        assert d[f"F{r}.down"] == f"d{r}" and d[f"F{3 - r}.up"] == f"d{r}"
    names = {(o.name, o.blocks) for o in p.overlaps}
    assert ("B", ("I1.down", "W1.down")) in names
    # device 1 holds down stage 1 and up stage 2: F of one overlaps the full backward of the other
    assert ("F&B", ("F1.down", "I2.up", "W2.up")) in names
    assert ("F&B", ("F2.up", "I1.down", "W1.down")) in names
    assert sum(o.name == "F&B" for o in p.overlaps) == 8 and sum(o.name == "B" for o in p.overlaps) == 8
    assert all(o.duration == 3 for o in p.overlaps if o.name == "F&B")
    assert all(o.duration == 2 for o in p.overlaps if o.name == "B")


def test_dualpipev_is_the_v_mapping_with_groups():
    p = dualpipev(4, 10, overlap=2)
    d = devices_of(p)
    assert [d[f"F{s}"] for s in range(8)] == ["d0", "d1", "d2", "d3", "d3", "d2", "d1", "d0"]
    assert p.overlap_for(("F0", "I7", "W7")).duration == 2
    assert p.overlap_for(("F7", "I0", "W0")) is not None


def test_chimera_is_bidirectional():
    # one builder under two names: the same function, hence the same problem
    assert chimera is bidirectional
    p = chimera(4, 8)
    assert p.num_microbatches == 4 and devices_of(p)["B0.up"] == "d3"
    # down pipeline: stage s on device s; up pipeline: stage s on device D-1-s
    d = devices_of(p)
    assert all(d[f"F{s}.down"] == f"d{s}" and d[f"F{s}.up"] == f"d{3 - s}" for s in range(4))


def test_one_bidirectional_builder_in_the_package():
    import inspect

    import schedsearch.placements as placements
    import schedsearch.placements.stages as stages

    assert stages.chimera is placements.bidirectional and placements.chimera is placements.bidirectional
    # no second definition of the builder under either name
    defined = [name for name, obj in vars(stages).items() if inspect.isfunction(obj) and obj.__module__ == stages.__name__]
    assert "chimera" not in defined and "bidirectional" not in defined


@pytest.mark.parametrize(
    "build, fragment",
    [
        (lambda: chain_pipelines([[0, 1]], 2, 1, forward=[1]), "one value per stage"),
        (lambda: chain_pipelines([[0, 5]], 2, 1), "device must be in 0..1"),
        (lambda: chain_pipelines([[0, 1]], 2, 1, forward=0), "'forward' of stage 0 must be >= 1"),
        (lambda: chain_pipelines([[0, 1]], 2, 1, backward=1, split_backward=True), "input_grad"),
        (lambda: chain_pipelines([[0, 1]], 2, 1, full_backward=True), "split_backward=True"),
        (lambda: chain_pipelines([[0, 1]], 2, 1, backward=None, split_backward=True), "needs a backward"),
        (lambda: chain_pipelines([[0, 1]], 2, 1, split_backward=True, overlap_forward_backward=3),
         "full_backward=True"),
        (lambda: chain_pipelines([[0, 1]], 2, 1, memory=[1]), "one capacity per device"),
        (lambda: chain_pipelines([[0], [1]], 2, 1, suffixes=["a", "a"]), "distinct"),
        (lambda: vshape(0, 1), "'num_devices' must be an integer >= 1, got 0"),
        (lambda: dualpipe(4, 7), "must be even"),
        (lambda: chimera(4, 3), "must be even"),
        (lambda: stage_pipeline("loop", 2, 1), "needs 'num_stages'"),
        (lambda: stage_pipeline("vee", 4, 8), r"mapping style must be one of \('loop', 'v'\), got 'vee'"),
        (lambda: stage_mapping("vee", 0, 8), r"mapping style must be one of \('loop', 'v'\), got 'vee'"),
        (lambda: stage_pipeline([0, 1], 2, 1, num_stages=3), "differs from the mapping"),
    ],
)
def test_bad_input_is_a_clear_error(build, fragment):
    with pytest.raises(InvalidProblemError, match=fragment):
        build()
