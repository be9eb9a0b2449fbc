"""The planner's configuration search (:mod:`schedsearch.plan.autoplan`) against brute force.

* on a small model whose every split is searched, the planner's choice
  equals the least step time over every configuration x family variant,
  each planned on its own (deterministic mode; the brute-force optimum is a
  proven row);
* the pruning never drops the optimum (pruned search = unpruned search), and
  no pruned candidate's bound is below the best plan;
* the bound covers every plan found, and where memory binds every
  candidate's pre-search bound (analytic and memory bounds) is at most the
  optimum its own search proves;
* the least largest rank share is at most the least largest rank total over
  every assignment (brute force), and the floor of the whole space is at
  most every plan of every configuration;
* the library's balanced split is the least largest rank time over every
  split that fits (brute force);
* bad inputs are refused by name.
"""

from __future__ import annotations

import itertools
import math

import attrs

import pytest

from schedsearch.errors import InvalidOptionsError, InvalidPipelineError
from schedsearch.plan.autoplan import (Decision, balanced_split, configurations, least_bound_ms,
                                       least_largest_share, parameters_over_budget, space_floor_ms)
from schedsearch.plan.planner import plan_configuration, plan_layers
from schedsearch.plan.candidates import Candidate
from schedsearch.plan.layers import LayerModel, Recomputation


def small_model(budget: str = "6 GiB") -> LayerModel:
    at = [{"microbatch_size": b, "forward_ms": 1.0 * b, "backward_ms": 2.0 * b, "input_grad_ms": 1.0 * b,
           "weight_grad_ms": 1.0 * b, "activation_bytes": f"{b} GiB", "checkpoint_bytes": f"{b / 4} GiB"}
          for b in (1, 2)]
    head = [dict(m, forward_ms=2.0 * m["microbatch_size"], backward_ms=4.0 * m["microbatch_size"],
                 input_grad_ms=2.0 * m["microbatch_size"], weight_grad_ms=2.0 * m["microbatch_size"]) for m in at]
    return LayerModel(global_batch=4, num_ranks=2, memory_budget_bytes=budget, layers=[
        {"name": "block", "repeat": 3, "measured": at, "parameter_bytes": "0.5 GiB"},
        {"name": "head", "kind": "head", "measured": head, "parameter_bytes": "1 GiB"}])


@pytest.fixture(scope="module")
def searched():
    model = small_model()
    pruned = plan_layers(model, time_limit_s=60, parallel=1, deterministic=True)
    whole = plan_layers(model, time_limit_s=60, parallel=1, deterministic=True, prune=False)
    return model, pruned, whole


@pytest.fixture(scope="module")
def brute(searched):
    """Every configuration x variant of the small model's whole space planned on its own:
    (configuration, row) for each one with a plan torch runs."""
    model, pruned, _ = searched
    found, covered = configurations(model, 2)
    assert covered and pruned.covered
    out = []
    for config, _ in found:
        for fam, variant in config.torchtitan_variants():
            cand = Candidate(family=fam.key, chunks=config.stages_per_rank, split_backward=variant.split_backward)
            row = plan_configuration(model, config, cand, time_limit_s=5, deterministic=True)
            if row.makespan_ms is not None and not cand.record.runtime_gap("torch"):
                out.append((config, row))
    return out


def test_the_choice_equals_a_brute_force_over_the_configuration_space(searched, brute):
    _, pruned, whole = searched
    best = min((row for _, row in brute), key=lambda r: r.makespan_ms)
    assert best.makespan_proven  # the brute force's optimum is proven: the comparison is about the optimum
    assert pruned.best.makespan_ms == whole.best.makespan_ms == best.makespan_ms
    assert pruned.bound_ms <= best.makespan_ms


def test_each_recomputation_modes_best_and_bound_agree_with_the_brute_force(searched, brute):
    _, pruned, whole = searched
    truth: dict[str, float] = {}
    for config, row in brute:
        assert row.makespan_proven
        mode = config.recomputation.mode
        truth[mode] = min(truth.get(mode, math.inf), row.makespan_ms)
    assert set(truth) == {"none", "full"}  # both modes have a plan: the comparison covers two
    for result in (pruned, whole):
        modes = {m.mode: m for m in result.by_recomputation()}
        assert set(modes) == set(truth)
        for mode, best in truth.items():
            assert modes[mode].bound_ms <= best + 1e-9  # the mode's bound holds for its optimum
        assert min(m.bound_ms for m in modes.values()) == result.bound_ms
        assert sum(m.searched + m.pruned + m.skipped + m.not_reached for m in modes.values()) == len(result.candidates)
        winner = modes[result.best.configuration.recomputation.mode]
        assert winner.best is result.best
    # searched whole, each mode's best is its optimum
    for mode, m in {m.mode: m for m in whole.by_recomputation()}.items():
        assert m.best.makespan_ms == truth[mode]
    lines = pruned.table().splitlines()
    assert "by recomputation (its best plan; the bound on every plan of it):" in lines
    assert pruned.to_dict()["by_recomputation"][0]["mode"] in truth


def test_no_bound_is_claimed_over_a_candidate_without_one(searched):
    _, pruned, _ = searched
    cands = list(pruned.candidates)
    assert least_bound_ms(cands) == pruned.bound_ms
    skipped = [c for c in cands if c.outcome is Decision.SKIPPED]
    assert skipped and least_bound_ms(skipped) is None  # skipped candidates have no plan to bound
    unbounded = attrs.evolve(next(c for c in cands if c.outcome is Decision.PRUNED), bound_ms=None)
    assert unbounded.lower_bound_ms is None and least_bound_ms([*cands, unbounded]) is None


def test_pruning_never_drops_the_optimum(searched):
    _, pruned, whole = searched
    assert pruned.pruned > 0 and whole.pruned == 0
    assert pruned.searched + pruned.pruned == whole.searched
    for c in pruned.candidates:
        if c.outcome is Decision.PRUNED:
            assert c.bound_ms >= pruned.best.makespan_ms
    # the pre-search bound of every candidate is below or at what its search found
    for c in whole.candidates:
        if c.makespan_ms is not None:
            assert c.bound_ms <= c.makespan_ms + 1e-9
            assert whole.bound_ms <= c.makespan_ms


def test_the_result_says_what_the_step_time_is_made_of(searched):
    _, pruned, _ = searched
    b = pruned.best.breakdown
    assert b.overhead_ms == 0  # the model has no per-action overhead
    assert math.isclose(b.compute_ms + b.recompute_ms + b.bubble_ms, pruned.best.makespan_ms, abs_tol=1e-2)
    assert pruned.runner_up is not None
    text = pruned.table()
    assert "runner-up" in text and "pruned by bound" in text and "whole space" in text


def test_the_runtime_overhead_is_its_own_part_of_the_step_not_bubble():
    import attrs

    model = attrs.evolve(small_model(), action_overhead_ms=0.25)
    result = plan_layers(model, time_limit_s=60, parallel=1, deterministic=True)
    best = result.best
    config, b = best.configuration, best.breakdown
    actions = 3 if best.candidate.split_backward else 2
    busiest = max(len(stages) for stages in config.stage_of_rank())
    # every rank of the small model's configurations runs the same number of stages, so the busiest rank's
    # overhead is its stages' actions, each micro-batch, at 0.25 ms
    assert len({len(stages) for stages in config.stage_of_rank()}) == 1
    assert math.isclose(b.overhead_ms, config.num_microbatches * busiest * actions * 0.25)
    assert math.isclose(b.compute_ms + b.recompute_ms + b.overhead_ms + b.bubble_ms, best.makespan_ms, abs_tol=1e-2)
    assert "per-action overhead" in b.label()


@pytest.mark.parametrize("budget", ["3 GiB", "4 GiB"])
def test_where_memory_binds_each_pre_search_bound_is_at_most_the_proven_optimum(budget):
    at = small_model().layers[0].measured
    model = LayerModel(global_batch=8, num_ranks=2, memory_budget_bytes=budget, layers=[
        {"name": "block", "repeat": 3, "measured": at, "parameter_bytes": "0.5 GiB"},
        {"name": "head", "kind": "head", "measured": small_model().layers[1].measured, "parameter_bytes": "1 GiB"}])
    whole = plan_layers(model, time_limit_s=60, parallel=1, deterministic=True, prune=False)
    proven = [c for c in whole.candidates if c.row is not None and c.row.makespan_proven]
    assert len(proven) >= 4
    for c in proven:
        assert c.bound_ms <= c.makespan_ms + 1e-9
    assert whole.bound_ms == whole.best.makespan_ms  # every candidate searched and proven: the bound is tight


@pytest.mark.parametrize("layout,v", [("loop", 1), ("loop", 2), ("v", 2), ("loop", 3)])
@pytest.mark.parametrize("budget", [None, "6 GiB", "3 GiB"])
def test_the_balanced_split_is_the_least_largest_rank_or_stage_time_that_fits(layout, v, budget):
    # one stage per rank: the least largest rank time among the splits that fit (exact); more: the least
    # largest stage time (exact without a budget; with one, a split that fits)
    model = small_model(budget) if budget else small_model("100 GiB")
    p, n = 2, model.num_layers
    figures = model.at(1)
    params = [layer.parameter_bytes for layer in model.expanded]
    S = p * v
    ranks = [s % p for s in range(S)] if layout == "loop" else [s if s < p else 2 * p - 1 - s for s in range(S)]

    def measure(edges):
        time_of, mem, longest = [0.0] * p, [0] * p, 0.0
        for s in range(S):
            stage = sum(figures[i].forward_ms + figures[i].backward_ms for i in range(edges[s], edges[s + 1]))
            time_of[ranks[s]] += stage
            longest = max(longest, stage)
            mem[ranks[s]] += sum(params[i] + figures[i].activation_bytes for i in range(edges[s], edges[s + 1]))
        fits = model.memory_budget_bytes is None or max(mem) <= model.memory_budget_bytes
        return max(time_of), longest, fits

    fitting = [measure((0, *cuts, n)) for cuts in itertools.combinations(range(1, n), S - 1)]
    fitting = [f for f in fitting if f[2]]
    split = balanced_split(model, num_ranks=p, layout=layout, stages_per_rank=v, microbatch_size=1,
                           recomputation=Recomputation(mode="none"))
    if not fitting:
        assert split is None
        return
    assert split is not None
    rank_time, longest, fits = measure([group[0] for group in split] + [n])
    assert fits
    if v == 1:
        assert rank_time == min(f[0] for f in fitting)
    elif budget is None:
        assert longest == min(f[1] for f in fitting)


def test_bad_inputs_are_refused_by_name():
    model = small_model()
    with pytest.raises(InvalidPipelineError, match="'model' must be a LayerModel"):
        plan_layers("model.toml")
    with pytest.raises(InvalidPipelineError, match="'num_ranks' must be one of the model's pipeline degrees"):
        plan_layers(model, num_ranks=3)
    with pytest.raises(InvalidOptionsError, match="time_limit_s"):
        plan_layers(model, time_limit_s=-1)
    with pytest.raises(InvalidOptionsError, match="prune"):
        plan_layers(model, prune="yes")
    with pytest.raises(InvalidOptionsError, match="progress"):
        plan_layers(model, progress="print")
    config = configurations(model, 2)[0][0][0]
    with pytest.raises(InvalidPipelineError, match="'candidate' must be a Candidate"):
        plan_configuration(model, config, "1f1b")
    with pytest.raises(InvalidPipelineError, match="not 'zb-v'"):
        plan_configuration(model, config, Candidate(family="zb-v", chunks=2))


def test_plan_takes_a_model_in_layers():
    from schedsearch.plan import plan

    model = small_model()
    result = plan(model, time_limit_s=5, parallel=1, deterministic=True)
    assert result.best.makespan_ms == plan_layers(model, time_limit_s=5, parallel=1,
                                                  deterministic=True).best.makespan_ms
    assert result.result is not None and result.result.best.makespan_ms == result.best.makespan_ms


def test_the_cli_plans_a_model_in_layers(tmp_path, capsys):
    from schedsearch.cli import main

    path = small_model().save(tmp_path / "model.toml")
    assert main(["plan", str(path), "--out", str(tmp_path / "out"), "--time-limit", "5", "--deterministic",
                 "--parallel", "1"]) == 0
    out = capsys.readouterr().out
    assert "whole space" in out and "plan written:" in out
    assert (tmp_path / "out" / "schedule.csv").is_file() and (tmp_path / "out" / "plan.json").is_file()
    # the configuration's recomputation is written as torchtitan's checkpointing (the last override)
    assert (tmp_path / "out" / "torchtitan.args").read_text().splitlines()[-1] == "activation_checkpoint:none"


def test_candidates_searched_in_rounds_on_processes_find_the_same_optimum(searched):
    model, pruned, _ = searched
    two = plan_layers(model, time_limit_s=60, parallel=2, deterministic=True)
    assert two.best.makespan_ms == pruned.best.makespan_ms
    assert two.searched + two.pruned == pruned.searched + pruned.pruned


def test_the_time_limit_is_the_whole_calls_and_the_candidates_not_reached_keep_their_bounds(searched):
    # deterministic mode: each round is given an equal part of what is left of the limit (at least the floor),
    # so a limit of two floors searches two rounds on any machine; the others are not reached, their
    # pre-search bounds still bound the result
    from schedsearch.plan.shares import SEARCH_FLOOR_S

    model, pruned, whole = searched
    short = plan_layers(model, time_limit_s=2 * SEARCH_FLOOR_S, parallel=1, deterministic=True, prune=False)
    assert short.searched == 2 and short.not_reached == whole.searched - 2
    assert short.searched + short.not_reached + short.skipped == len(whole.candidates)
    unsearched = [c for c in short.candidates if c.outcome is Decision.NOT_REACHED]
    assert all(c.makespan_ms is None and c.bound_ms is not None for c in unsearched)
    assert short.bound_ms == min(min(c.bound_ms for c in unsearched),
                                 *(max(c.bound_ms, c.row.bound_ms or 0) for c in short.candidates
                                   if c.outcome is Decision.SEARCHED))
    assert short.bound_ms <= whole.best.makespan_ms <= short.best.makespan_ms
    assert "not reached within the time limit" in short.table()
    again = plan_layers(model, time_limit_s=2 * SEARCH_FLOOR_S, parallel=1, deterministic=True, prune=False)
    assert [(c.candidate.label, c.configuration.label(), c.outcome, c.makespan_ms) for c in again.candidates] == \
           [(c.candidate.label, c.configuration.label(), c.outcome, c.makespan_ms) for c in short.candidates]


def test_the_least_largest_share_is_at_most_every_assignments_largest_rank():
    import random

    rng = random.Random(7)
    for _ in range(300):
        p = rng.randint(1, 3)
        weights = [rng.randint(1, 9) for _ in range(rng.randint(1, 7))]
        exact = min(max(sum(w for w, r in zip(weights, ranks) if r == q) for q in range(p))
                    for ranks in itertools.product(range(p), repeat=len(weights)))
        assert least_largest_share(weights, p) <= exact
    # identical blocks and one lighter head: the pigeonhole is exact (20 blocks and the head on one rank)
    assert least_largest_share([288] * 80 + [246], 4) == 20 * 288 + 246


def test_the_floor_of_the_whole_space_is_below_every_plan(searched):
    model, pruned, whole = searched
    floor = space_floor_ms(model, 2)
    assert floor is not None and 0 < floor <= whole.best.makespan_ms
    assert all(floor <= c.makespan_ms + 1e-9 for c in whole.candidates if c.makespan_ms is not None)
    assert pruned.space_bound_ms == pruned.bound_ms  # every split searched: the search's own bound covers the space
    # a budget no rank can meet without recomputation: the floor is the recomputing one's; none at all: no floor
    assert space_floor_ms(small_model("3 GiB"), 2) == 36.0 > space_floor_ms(small_model("100 GiB"), 2) == 30.0
    assert space_floor_ms(small_model("2 GiB"), 2) is None  # 4.25 GiB to share even recomputing: over 2 x 2 GiB


def test_an_overlapped_candidate_without_a_pair_time_gets_a_row_with_its_reason():
    # a model in layers has no fb_overlap_ms: a direct caller's F&B candidate is answered with the reason
    model = small_model()
    config = next(c for c, _ in configurations(model, 2)[0] if c.layout == "v")
    cand = Candidate(family="dualpipev", chunks=config.stages_per_rank, split_backward=True, overlap=True)
    row = plan_configuration(model, config, cand, time_limit_s=5, deterministic=True)
    assert row.makespan_ms is None and "fb_overlap_ms" in row.note


def test_a_setup_cut_by_the_limit_keeps_one_configuration_and_bounds_the_rest_by_their_floors(searched, monkeypatch):
    # the setup's parts of a wall-clock limit set to nothing: whatever the machine's speed, the stop has passed
    # when the second configuration would be prepared, so exactly the first (least floor) is, and every other
    # is not reached with its configuration floor as its bound; the search itself is cut by the clock, so only
    # what holds of any plan is asserted of it
    from schedsearch.plan import planner
    from schedsearch.plan.autoplan import configuration_floor_ms

    model, _, whole = searched
    monkeypatch.setattr(planner, "SETUP_PREPARE_SHARE", 0.0)
    monkeypatch.setattr(planner, "SETUP_PROPOSALS_SHARE", 0.0)
    cut = plan_layers(model, time_limit_s=20, parallel=1, prune=False)
    configs = [config for config, _ in configurations(model, 2)[0]]
    floors = {config: float(configuration_floor_ms(model, config)) for config in configs}
    order = sorted(configs, key=lambda config: (floors[config], configs.index(config)))
    # prepared: the least floors' configurations up to the first with a candidate that fits (those before it
    # have none: skipped), in the planner's order
    prepared = [config for config in order
                if any(c.configuration == config and c.outcome is not Decision.NOT_REACHED for c in cut.candidates)]
    assert prepared == order[:len(prepared)]
    first = prepared[-1]
    assert all(c.outcome is Decision.SKIPPED for c in cut.candidates if c.configuration in prepared[:-1])
    rest = [c for c in cut.candidates if c.configuration not in prepared]
    assert rest and all(c.outcome is Decision.NOT_REACHED and c.bound_ms == floors[c.configuration] for c in rest)
    assert any("were prepared" in note for note in cut.notes)
    assert cut.best is not None and cut.best.configuration == first
    # every floor is at most the proven optimum of its configuration, so the cut result's bound stays sound
    assert cut.bound_ms <= whole.best.makespan_ms + 1e-9
    for c in whole.candidates:
        if c.row is not None and c.row.makespan_ms is not None:
            assert floors[c.configuration] <= c.row.makespan_ms + 1e-9


def test_split_proposals_cut_by_the_limit_leave_the_balanced_split(monkeypatch):
    # a space too large to enumerate is searched on proposed splits; with no time for proposals the peers'
    # DPs are left out (torchtitan's even split, no work, stays), the library's own balanced split is made
    # first whatever the clock, and a note says how many proposals were left out
    from schedsearch.plan import planner
    from schedsearch.plan.autoplan import proposed_configurations
    from schedsearch.deadline import stopping
    from schedsearch.options import Deadline

    at = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "0.1 GiB"}]
    model = LayerModel(global_batch=8, num_ranks=4, memory_budget_bytes="80 GiB", layers=[
        {"name": "embed", "kind": "embedding", "measured": at}, {"name": "block", "repeat": 40, "measured": at},
        {"name": "head", "kind": "head", "measured": at}])
    full, whole, none_cut = proposed_configurations(model, 4)
    assert not whole and none_cut == 0
    with stopping(Deadline(0.0), grace=0.0):
        found, _, cut = proposed_configurations(model, 4)
    assert cut > 0 and any("balanced DP" in origins for _, origins in found)
    assert not any(o.startswith(("auto_partition", "adapipe")) for _, origins in found for o in origins)
    assert {c for c, _ in found} <= {c for c, _ in full}
    monkeypatch.setattr(planner, "SETUP_PROPOSALS_SHARE", 0.0)
    result = plan_layers(model, time_limit_s=20, parallel=1)
    assert result.best is not None and any("split proposals" in note for note in result.notes)


def test_interleaved_is_tried_at_every_count_that_splits_the_blocks_equally():
    # 12 blocks on 2 ranks: besides v = 2, 3, 4 the counts 6 (one block per stage); 5 splits them unequally.
    # With two micro-batches the bubble dominates: the most stages per rank is the shortest step, and the
    # planner finds it (searched, not skipped for want of a candidate)
    at = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    model = LayerModel(global_batch=2, num_ranks=2, layers=[{"name": "block", "repeat": 12, "measured": at}])
    found, _ = configurations(model, 2, families=["interleaved"])
    assert sorted({c.stages_per_rank for c, _ in found}) == [2, 3, 4, 6]
    result = plan_layers(model, time_limit_s=60, parallel=1, deterministic=True, families=["interleaved"],
                         prune=False)
    six = [c for c in result.candidates if c.configuration.stages_per_rank == 6 and not c.candidate.split_backward]
    assert six and all(c.outcome is Decision.SEARCHED for c in six)  # the split backward has no figures here
    assert result.best.configuration.stages_per_rank == 6
    assert result.best.makespan_ms < min(c.makespan_ms for c in result.candidates
                                         if c.configuration.stages_per_rank < 6 and c.makespan_ms is not None)


def test_a_configuration_whose_parameters_exceed_the_budget_is_skipped_saying_so():
    # 2 GiB of parameters per block, 5 GiB per rank: a rank of 3 blocks cannot hold them, one of 2 can
    at = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "0.25 GiB"}]
    model = LayerModel(global_batch=2, num_ranks=2, memory_budget_bytes="5 GiB", layers=[
        {"name": "block", "repeat": 4, "measured": at, "parameter_bytes": "2 GiB"}])
    result = plan_layers(model, time_limit_s=30, parallel=1, deterministic=True)
    assert result.best is not None and result.best.row.makespan_ms > 0
    over = [c for c in result.candidates if parameters_over_budget(model, c.configuration) is not None]
    assert over and all(c.outcome is Decision.SKIPPED and "GiB of parameters" in c.note for c in over)
    # the others fit by their parameters: none of them is skipped for that reason
    assert all("of parameters" not in c.note for c in result.candidates if c not in over)
    assert result.covered and result.bound_ms <= result.best.row.makespan_ms
