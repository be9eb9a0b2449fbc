"""The space floor against every plan of every configuration of small layer models.

For each model, every configuration of the whole space (every split of every shape, micro-batch size and
recomputation, the per-operator mode where the blocks give its figures) is planned for every variant of every family of its shape, in deterministic mode; the floor
:func:`space_floor_ms` claims must be at most every plan's step time. Plans come from the planner; the
judgement (the floor against each plan) is made here.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from schedsearch.errors import SchedSearchError
from schedsearch.handcrafted.families import family
from schedsearch.plan.autoplan import (configuration_floor_ms, configurations, least_largest_share,
                                       space_floor_ms)
from schedsearch.plan.layers import LayerModel
from schedsearch.plan.planner import Candidate, plan_configuration


def plans(model: LayerModel, runtime: str = "any", limit_s: float = 5.0):
    """(configuration label, variant label, step ms) of every plan of the whole space on 2 ranks."""
    found, whole = configurations(model, 2, runtime=runtime)
    assert whole
    for config, _ in found:
        for key in config.families():
            for variant in family(key).variants:
                cand = Candidate(family=key, chunks=config.stages_per_rank, split_backward=variant.split_backward)
                # a model in layers declares no overlapped pairs: its candidates run without them
                try:
                    row = plan_configuration(model, config, cand, time_limit_s=limit_s, deterministic=True)
                except SchedSearchError:
                    continue
                if row.makespan_ms is not None:
                    yield config, cand.label, row.makespan_ms


def check(model: LayerModel, runtime: str = "any", limit_s: float = 5.0) -> None:
    floor = space_floor_ms(model, 2, runtime=runtime)
    if floor is None:
        assert not list(plans(model, runtime, limit_s)), "no floor claimed, yet a configuration has a plan"
        return
    for config, variant, ms in plans(model, runtime, limit_s):
        assert floor <= ms + 1e-9, f"space floor {floor} ms above the plan of {config.label()} ({variant}): {ms} ms"
        # the floor of one configuration (what bounds it before its search is prepared) holds for its plans
        own = configuration_floor_ms(model, config)
        assert floor <= own + 1e-9, f"{config.label()}: its floor {own} is below the whole space's {floor}"
        assert own <= ms + 1e-9, f"configuration floor {float(own)} ms above the plan of {config.label()} " \
                                 f"({variant}): {ms} ms"


def test_split_backward_below_the_whole_backward():
    # ZB-H1 runs the input and weight gradients (0.495 + 0.495 ms), 1% below the whole backward (1 ms)
    at1 = {"microbatch_size": 1, "forward_ms": 0.5, "backward_ms": 1.0, "input_grad_ms": 0.495,
           "weight_grad_ms": 0.495}
    model = LayerModel(global_batch=8, num_ranks=2, layers=[{"name": "block", "repeat": 3, "measured": [at1]}])
    check(model)
    assert space_floor_ms(model, 2, runtime="any") == pytest.approx(8 * 2 * 1.49)


@st.composite
def layer_models(draw) -> LayerModel:
    ms = st.integers(5, 300).map(lambda x: x / 100)
    split = draw(st.booleans())

    op = draw(st.booleans())  # the blocks give per-operator checkpointing's figures: mode "op" is searched

    def measured(size_factors=(1, 2), block=False):
        f, b, a = draw(ms), draw(ms), draw(st.integers(0, 100))
        again, kept = draw(st.integers(0, 100)) / 100, draw(st.integers(0, 100)) / 100
        out = []
        for size in size_factors:
            m = {"microbatch_size": size, "forward_ms": f * size * 0.9 ** (size - 1),
                 "backward_ms": b * size * 0.9 ** (size - 1), "activation_bytes": a * size, "send_bytes": size}
            if op and block:
                m.update(selective_recompute_ms=m["forward_ms"] * again, selective_bytes=int(a * size * kept))
            if split:
                share = draw(st.integers(20, 80)) / 100
                shrink = draw(st.sampled_from([1.0, 0.995, 0.99]))
                m.update(input_grad_ms=m["backward_ms"] * share * shrink,
                         weight_grad_ms=m["backward_ms"] * (1 - share) * shrink)
            out.append(m)
        return out

    layers = []
    if draw(st.booleans()):
        layers.append({"name": "embed", "kind": "embedding", "parameter_bytes": draw(st.integers(0, 100)),
                       "measured": measured()})
    layers.append({"name": "block", "repeat": draw(st.integers(2, 3)), "parameter_bytes": draw(st.integers(0, 50)),
                   "measured": measured(block=True)})
    if draw(st.booleans()):
        layers.append({"name": "head", "kind": "head", "parameter_bytes": draw(st.integers(0, 200)),
                       "measured": measured()})
    budget = draw(st.one_of(st.none(), st.integers(50, 500)))
    try:
        return LayerModel(global_batch=draw(st.sampled_from([2, 4])), num_ranks=2, memory_budget_bytes=budget,
                          layers=layers)
    except SchedSearchError:  # a layer over the budget alone: refused when built
        reject()


@given(layer_models())
@settings(max_examples=3, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_floor_at_most_every_plan(model):
    check(model, limit_s=0.5)  # a deterministic limit: the same plans on any machine


@pytest.mark.slow
@given(layer_models())
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_floor_at_most_every_plan_many(model):
    check(model, limit_s=1.0)


@given(st.lists(st.integers(0, 20), min_size=1, max_size=6), st.integers(1, 3))
def test_least_largest_share_at_most_every_assignment(weights, ranks):
    import itertools

    best = min(max(sum(w for w, r in zip(weights, assign) if r == k) for k in range(ranks))
               for assign in itertools.product(range(ranks), repeat=len(weights)))
    assert least_largest_share(weights, ranks) <= best
