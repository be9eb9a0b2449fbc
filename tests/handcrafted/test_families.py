"""The family registry is the one table of schedule families, and every consumer reads it.

Three kinds of checks: the records agree with themselves (every published
schedule belongs to one family, every variant's schedule is its family's);
every consumer's list (the description's families, the planner's
candidates and their names, the command line's choices, the torchtitan
names, the runtime gap) is the registry's; and a family added to the
registry alone (here by patching it) reaches all of them: adding a family
touches one module.
"""

from __future__ import annotations

import attrs
import pytest

from optional import require

import schedsearch
from schedsearch.cli import build_parser
from schedsearch.cli.search import placements
from schedsearch.errors import FormatError, InvalidPipelineError, InvalidProblemError
from schedsearch.plan.torchtitan import torchtitan_schedule_name
from schedsearch.handcrafted import reproduce, schedule_names
from schedsearch.handcrafted.families import (
    ALL_FAMILIES,
    LAYOUTS,
    SCHEDULES,
    Family,
    Variant,
    family,
    family_of_schedule,
    planner_families,
)
from schedsearch.plan.pipeline import FAMILIES, Pipeline
from schedsearch.plan.planner import Candidate, candidates, runtime_gap
from schedsearch.plan import torchtitan as torchtitan_module


def _pipeline(families, num_ranks=2, num_microbatches=4, **extra) -> Pipeline:
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0}
    return Pipeline(num_ranks=num_ranks, num_microbatches=num_microbatches, families=families,
                    stages=[stage] * (4 * num_ranks), partition="dp", **extra)


def test_every_published_schedule_belongs_to_exactly_one_family():
    owners = {name: [f.key for f in ALL_FAMILIES.values() if name in f.schedules] for name in SCHEDULES}
    assert all(len(keys) == 1 for keys in owners.values()), owners
    listed = [name for f in ALL_FAMILIES.values() for name in f.schedules]
    assert sorted(listed) == sorted(SCHEDULES), "a family lists a schedule the registry does not hold"
    for name, (key,) in owners.items():
        assert family_of_schedule(name).key == key


@pytest.mark.parametrize("key", list(ALL_FAMILIES))
def test_each_record_is_consistent(key):
    fam = family(key)
    assert fam.layout in LAYOUTS
    assert fam.variants and len({v.split_backward for v in fam.variants}) == len(fam.variants)
    for v in fam.variants:
        assert v.schedule is None or v.schedule in fam.schedules
        assert fam.variant(v.split_backward) is v
    assert fam.chunks and all(c >= 1 for c in fam.chunks)
    # torch places "v" stages only when torchtitan is given a V schedule name; two pipelines torch cannot hold
    assert (fam.torchtitan_schedule is not None) == (fam.layout == "v")
    assert bool(fam.torch_gap) == fam.two_pipelines
    assert fam.torch_style == (None if fam.two_pipelines else fam.layout)
    if fam.layout == "v":
        assert fam.chunks == (2,)


def test_the_description_offers_the_planner_families_of_the_registry():
    assert FAMILIES == planner_families() == tuple(k for k, f in ALL_FAMILIES.items() if f.planner)
    assert _pipeline(list(FAMILIES)).families == FAMILIES
    with pytest.raises(InvalidPipelineError, match="must be one of"):
        _pipeline(["gpipe"])  # a family with no planner variants is the reproductions' only


def test_the_planner_offers_every_variant_at_every_chunk_count_named_as_the_record_names_it():
    pipeline = _pipeline(list(FAMILIES), num_ranks=2, num_microbatches=8, fb_overlap_ms=3.0)
    got = [(c.family, c.chunks, c.split_backward) for c in candidates(pipeline)]
    want = [(k, v, var.split_backward) for k in FAMILIES for v in family(k).chunks for var in family(k).variants]
    assert got == want
    for c in candidates(pipeline):
        fam, variant = family(c.family), family(c.family).variant(c.split_backward)
        assert c.label == fam.label(c.chunks, c.split_backward) + (" (F&B)" if c.overlap else "")
        assert c.overlap == fam.overlap
        assert c.layout == fam.layout
        assert c.handcrafted_name() == (variant.name if variant.schedule else None)
        assert runtime_gap(c, "torch") == fam.torch_gap and runtime_gap(c, "any") == ""


def test_the_command_line_choices_are_the_registry_names():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    reproduce_choices = next(a.choices for a in sub.choices["reproduce"]._actions if a.dest == "name")
    assert tuple(reproduce_choices) == schedule_names() == tuple(SCHEDULES)
    named = {name for name, spec in SCHEDULES.items() if spec.placement is not None}
    assert named <= set(placements())
    for name in named:
        assert placements()[name] is SCHEDULES[name].placement


@pytest.mark.parametrize("key", list(ALL_FAMILIES))
def test_the_torchtitan_schedule_name_is_the_record_s(key):
    fam = family(key)
    if fam.layout == "v":
        assert torchtitan_schedule_name(key, "v", 2) == fam.torchtitan_schedule
    elif fam.layout == "loop":
        assert torchtitan_schedule_name(key, "loop", 1) == "PipelineScheduleSingle"
        assert torchtitan_schedule_name(key, "loop", 3) == "PipelineScheduleMulti"
    else:
        with pytest.raises(FormatError):
            torchtitan_schedule_name(key, fam.layout, 1)


def test_unknown_family_names_are_refused_naming_the_choices():
    with pytest.raises(InvalidProblemError, match="unknown schedule family 'zb-h2'.*'1f1b'"):
        family("zb-h2")
    with pytest.raises(InvalidProblemError, match="unknown schedule family"):
        Candidate(family="zb-h2").label


@pytest.fixture
def added_family(monkeypatch):
    """A family added to the registry alone: 1F1B and ZB-H1 under new names."""
    one = attrs.evolve(SCHEDULES["1f1b"], name="copy-1f1b", title="copy of 1F1B")
    split = attrs.evolve(SCHEDULES["zb-h1"], name="copy-zb-h1", title="copy of ZB-H1")
    for spec in (one, split):
        monkeypatch.setitem(SCHEDULES, spec.name, spec)
    fam = Family(key="copy", title="copy", layout="loop", schedules=(one.name, split.name), planner=True,
                 variants=(Variant(name="copy 1F1B", split_backward=False, schedule=one.name),
                           Variant(name="copy ZB-H1", split_backward=True, schedule=split.name)))
    monkeypatch.setitem(ALL_FAMILIES, fam.key, fam)
    return fam


def test_a_family_added_to_the_registry_alone_reaches_every_consumer(added_family, tmp_path):
    # reproductions and the command line
    assert "copy-zb-h1" in schedule_names()
    assert reproduce("copy-zb-h1", devices=4, microbatches=8).metrics == reproduce("zb-h1", devices=4,
                                                                                   microbatches=8).metrics
    args = build_parser().parse_args(["reproduce", "copy-1f1b"])
    assert args.name == "copy-1f1b"
    assert {"copy-1f1b", "copy-zb-h1"} <= set(placements())
    # the description and the planner: same plans as the family it copies, under its own names
    assert "copy" in planner_families()
    copy = schedsearch.plan(_pipeline(["copy"]), time_limit_s=20, parallel=1)
    ref = schedsearch.plan(_pipeline(["1f1b"]), time_limit_s=20, parallel=1)
    # ranked alike; the makespans are proven, so equal whatever the machine's load
    assert all(r.makespan_proven for r in ref.rows), ref.table()
    assert [(r.family, r.makespan_proven, r.makespan_ms, r.handcrafted, r.handcrafted_ms) for r in copy.rows] == [
        ("copy " + r.family, r.makespan_proven, r.makespan_ms, "copy " + r.handcrafted, r.handcrafted_ms)
        for r in ref.rows]
    # the exports: the torch CSV and torchtitan's settings of the plan
    paths = torchtitan_module.write_plan_outputs(copy, tmp_path)
    assert {"csv", "torchtitan"} <= set(paths)
    assert "--parallelism.pipeline_parallel_schedule=PipelineScheduleSingle" in paths["torchtitan"].read_text()


@pytest.mark.torch
@pytest.mark.parametrize("key", list(ALL_FAMILIES))
def test_torch_knows_each_variant_s_schedule_class_with_the_family_s_stages_per_rank(key):
    require("torch")
    from torch.distributed.pipelining.schedules import PipelineScheduleSingle, get_schedule_class

    fam = family(key)
    for variant in fam.variants:
        if variant.torch_schedule is None:
            continue
        assert fam.torch_style is not None, f"{key}: torch cannot run it, yet names a torch schedule"
        cls = get_schedule_class(variant.torch_schedule)
        # one stage per rank: torch's single-stage schedules; several: its multi-stage ones
        assert issubclass(cls, PipelineScheduleSingle) == (fam.chunks == (1,)), (variant, cls)
