"""Pipeline descriptions: fields, errors naming entity/field/value, TOML and JSON round trips, profiles."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from schedsearch import Pipeline
from schedsearch.errors import InvalidPipelineError, InvalidProblemError
from schedsearch.plan.pipeline import P2P, Stage, _least_max_split, parse_bytes, split_layers



def _pipeline(**changes):
    fields = dict(
        num_ranks=2,
        num_microbatches=4,
        memory_budget_bytes="8 GiB",
        p2p={"latency_ms": 0.01, "bandwidth_bytes_per_s": "25 GB"},
        fb_overlap_ms=2.5,
        stages=[
            {"name": "embed", "forward_ms": 1.25, "backward_ms": 2.5, "input_grad_ms": 1.25, "weight_grad_ms": 1.25,
             "activation_bytes": "1 GiB", "parameter_bytes": "2 GiB"},
            {"name": "head", "forward_ms": 1.5, "backward_ms": 3.0, "activation_bytes": 1000, "parameter_bytes": 0},
        ],
    )
    fields.update(changes)
    return Pipeline.from_dict(fields)


def test_byte_strings_and_fields():
    p = _pipeline()
    assert p.memory_budget_bytes == 8 * 2**30
    assert p.stages[0].activation_bytes == 2**30 and p.stages[0].has_split and not p.stages[1].has_split
    assert p.p2p.bandwidth_bytes_per_s == 25 * 10**9
    # 1 GiB over 25 GB/s = 42.95 ms, plus 0.01 ms latency
    assert p.p2p.transfer_ms(2**30) == pytest.approx(0.01 + 2**30 / 25e9 * 1e3)
    assert parse_bytes("1.5 GB") == 1_500_000_000


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_round_trip(tmp_path, suffix):
    p = _pipeline(microbatch_sizes=[8, 8, 7.5, 7])
    path = p.save(tmp_path / f"pipeline{suffix}")
    assert Pipeline.load(path) == p
    if suffix == ".toml":
        assert 'memory_budget_bytes = "8 GiB"' in path.read_text()


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"num_ranks": 0}, "pipeline: 'num_ranks' must be an integer >= 1, got 0"),
        ({"families": ["zb-h2"]}, "'families' entry must be one of"),
        ({"memory_budget_bytes": "1 GiB"}, "stage 'embed': 'parameter_bytes' 2 GiB exceed the memory budget per rank 1 GiB"),
        ({"memory_budget_bytes": "lots"}, "'memory_budget_bytes' must be a byte amount"),
        ({"stages": [{"name": "x", "forward_ms": -1.0, "backward_ms": 1.0}]}, "stage 'x': 'forward_ms' must be a time"),
        ({"stages": [{"name": "x", "forward_ms": 0.0, "backward_ms": 1.0}]}, "stage 'x': 'forward_ms' must be > 0"),
        ({"stages": [{"name": "x", "forward_ms": 1.0, "backward_ms": 1.0, "input_grad_ms": 0.5}]},
         "give both 'input_grad_ms' and 'weight_grad_ms'"),
        ({"stages": [{"name": "x", "forward_ms": 1.0, "backward_ms": 1.0, "colour": 1}]}, "unknown field(s) ['colour']"),
        ({"p2p": {"time_ms": 1.0, "latency_ms": 1.0}}, "p2p: give either 'time_ms'"),
        ({"partition": "auto"}, "'partition' must be 'fixed' or 'dp'"),
        ({"time_tolerance": 0.0}, "'time_tolerance' must be in [1e-06, 0.5)"),
        ({"fb_overlap_ms": 0.0}, "'fb_overlap_ms' must be > 0"),
        ({"microbatch_sizes": [8, 8, 7]}, "'microbatch_sizes' must give one size per micro-batch (4), got 3"),
        ({"microbatch_sizes": [8, 8, 0, 7]}, "'microbatch_sizes' entry 2 must be a positive number, got 0"),
        ({"microbatch_sizes": "8,8,7,7"}, "'microbatch_sizes' must be a list of numbers"),
    ],
)
def test_errors_name_entity_field_value(changes, fragment):
    with pytest.raises(InvalidPipelineError) as info:
        _pipeline(**changes)
    assert fragment in str(info.value)
    assert isinstance(info.value, InvalidProblemError) and isinstance(info.value, ValueError)


def test_unknown_and_missing_fields(tmp_path):
    with pytest.raises(InvalidPipelineError, match=r"unknown field\(s\) \['ranks'\]"):
        Pipeline.from_dict({"ranks": 2})
    with pytest.raises(InvalidPipelineError, match=r"missing field\(s\) \['num_microbatches', 'stages'\]"):
        Pipeline.from_dict({"num_ranks": 2})
    bad = tmp_path / "p.toml"
    bad.write_text("num_ranks = [")
    with pytest.raises(InvalidPipelineError, match="not valid toml"):
        Pipeline.load(bad)


def test_split_layers_is_the_dp_optimum():
    # loads 3,3,6,12 (F + 2F): two stages -> {3,3,6} | {12}, max 12, the least possible
    layers = [Stage(name=f"l{i}", forward_ms=t, backward_ms=2 * t) for i, t in enumerate([1.0, 1.0, 2.0, 4.0])]
    assert split_layers(layers, 2) == ((0, 1, 2), (3,))
    # four stages of four layers: one each
    assert split_layers(layers, 4) == ((0,), (1,), (2,), (3,))
    # equal loads: the DP may leave stages empty; every stage still gets a layer, in order
    same = [Stage(name=f"l{i}", forward_ms=1.0, backward_ms=1.0) for i in range(6)]
    groups = split_layers(same, 3)
    assert [i for g in groups for i in g] == list(range(6)) and all(groups) and len(groups) == 3


def _brute_least_max(load, most):
    """Every split of the chain into 1..most contiguous groups, by cut sets: the least largest group sum."""
    n = len(load)
    best = None
    for cuts in itertools.chain.from_iterable(itertools.combinations(range(1, n), c) for c in range(min(most, n))):
        bounds = (0, *cuts, n)
        worst = max(sum(load[a:b]) for a, b in zip(bounds, bounds[1:]))
        best = worst if best is None else min(best, worst)
    return best


@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 3.0, 7.0]), min_size=1, max_size=9),
       st.integers(1, 11))
@settings(max_examples=150, deadline=None)
def test_split_layers_matches_brute_force_and_the_partition_dp(loads, num_stages):
    # an exhaustive oracle for the value, and the partitioner's chain DP (another code) for the very split:
    # with loads exact in binary both break ties alike
    from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_dpl

    assume(num_stages <= len(loads) and sum(loads) > 0)
    layers = [Stage(name=f"l{i}", forward_ms=t, backward_ms=t) for i, t in enumerate(loads)]
    groups = split_layers(layers, num_stages)
    load = [2 * t for t in loads]
    assert [i for g in groups for i in g] == list(range(len(loads))) and len(groups) == num_stages and all(groups)
    assert max(sum(load[i] for i in g) for g in groups) == _brute_least_max(load, num_stages)
    graph = OperatorGraph(operators=[Operator(id=i, accel_latency=x, color_class=i) for i, x in enumerate(load)],
                          edges=[(i, i + 1) for i in range(len(load) - 1)])
    dp = partition_dpl(graph, DeviceLimits(num_accelerators=num_stages), order=list(range(len(load))),
                       merge_trivial=False)
    theirs = sorted(tuple(sorted(g)) for _, g in dp.split.stages if g)
    assert _least_max_split(load, num_stages) == theirs


def test_split_layers_loads_no_partitioner():
    # the split is the first thing a plan of a description in layers does: it must not import numpy/networkx
    code = ("import sys\nfrom schedsearch.plan.pipeline import Stage, split_layers\n"
            "split_layers([Stage(name=str(i), forward_ms=1.0 + i % 3, backward_ms=2.0) for i in range(40)], 8)\n"
            "print(sorted(m for m in ('numpy', 'networkx', 'schedsearch.partition') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_stages_for_fixed_and_dp():
    p = _pipeline()
    assert p.stages_for(2)[0] == p.stages and p.stages_for(4) is None
    layers = Pipeline(num_ranks=2, num_microbatches=2, partition="dp",
                      stages=[Stage(name=f"l{i}", forward_ms=1.0, backward_ms=2.0, activation_bytes=10,
                                    parameter_bytes=5) for i in range(4)])
    stages, groups = layers.stages_for(2)
    assert groups == ((0, 1), (2, 3))
    assert stages[0].forward_ms == 2.0 and stages[0].activation_bytes == 20 and stages[0].parameter_bytes == 10
    assert layers.stages_for(5) is None


def test_from_pipedream_profile(shared_data):
    path = shared_data / "pipedream-profiles/profiler/image_classification/profiles/vgg16/graph.txt"
    p = Pipeline.from_profile(path, num_ranks=4, num_microbatches=8, weight_grad_share=0.5)
    assert p.name == "vgg16" and p.partition == "dp" and len(p.stages) > 20
    assert all(s.has_split for s in p.stages)
    stages, groups = p.stages_for(4)
    assert len(stages) == 4 and [i for g in groups for i in g] == list(range(len(p.stages)))
    total = sum(s.forward_ms + s.backward_ms for s in p.stages)
    assert sum(s.forward_ms + s.backward_ms for s in stages) == pytest.approx(total)


def test_from_runtime_profile():
    from schedsearch.runtime.profile import Profile, StageProfile

    rows = tuple(StageProfile(stage=s, microbatch_size=1, forward_s=1e-3, backward_s=2e-3, input_grad_s=1e-3,
                              weight_grad_s=1e-3, activation_bytes=1024, parameter_bytes=2048) for s in range(2))
    profile = Profile(sizes=(1,), stages={1: rows}, repeats=3, time_unit_s=1e-4, memory_unit_bytes=1024)
    p = Pipeline.from_profile(profile, num_ranks=2, num_microbatches=4, memory_budget_bytes="1 MiB")
    assert p.partition == "fixed" and p.stages[1].backward_ms == pytest.approx(2.0) and p.stages[0].has_split
    with pytest.raises(InvalidPipelineError, match="micro-batch size 2 was not profiled"):
        Pipeline.from_profile(profile, num_ranks=2, num_microbatches=4, microbatch_size=2)
    with pytest.raises(InvalidPipelineError, match="expected a runtime Profile"):
        Pipeline.from_profile(42, num_ranks=2, num_microbatches=4)


def test_p2p_free_by_default():
    assert P2P().free and not P2P(time_ms=0.5).free


def test_microbatch_sizes_scale_against_the_largest():
    p = _pipeline(microbatch_sizes=[8, 8, 7, 6])
    assert p.size_ratios() == (1.0, 1.0, 0.875, 0.75)
    assert "(sizes 6 to 8)" in str(p)
    assert _pipeline(microbatch_sizes=[4, 4, 4, 4]).size_ratios() is None


def test_send_bytes_round_trips_and_defaults_to_the_activation(tmp_path):
    p = _pipeline(stages=[{"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB", "send_bytes": "16 MiB"},
                          {"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB"}])
    assert p.stages[0].send_bytes == 16 * 2**20 and p.stages[0].p2p_bytes == 16 * 2**20
    assert p.stages[1].send_bytes is None and p.stages[1].p2p_bytes == 2**30  # not given: the activation
    for suffix in (".toml", ".json"):
        again = Pipeline.load(p.save(tmp_path / f"p{suffix}"))
        assert again == p
    assert "send_bytes" not in p.to_dict()["stages"][1]


def test_a_merged_stage_sends_what_its_last_layer_sends():
    layers = [{"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB", "send_bytes": f"{k + 1} MiB"}
              for k in range(4)]
    layers[3] = {"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "3 MiB"}  # no send_bytes: its activation
    p = _pipeline(partition="dp", stages=layers)
    stages, groups = p.stages_for(2)
    assert groups == ((0, 1), (2, 3))
    assert stages[0].activation_bytes == 2 * 2**30 and stages[0].p2p_bytes == 2 * 2**20
    assert stages[1].p2p_bytes == 3 * 2**20


def test_a_pipedream_layer_sends_its_output(tmp_path):
    rows = [f"node{i} -- Linear -- forward_compute_time=1.0, backward_compute_time=2.0, "
            f"activation_size={i * 1000}.0, parameter_size=4096.0" for i in (1, 2, 3)]
    path = tmp_path / "mlp" / "graph.txt"
    path.parent.mkdir()
    path.write_text("\n".join(rows + ["\tnode1 -- node2", "\tnode2 -- node3"]))
    p = Pipeline.from_profile(path, num_ranks=2, num_microbatches=4)
    assert [s.send_bytes for s in p.stages] == [1000, 2000, 3000]
