"""Every exported CSV checked by PyTorch itself (torch==2.13.0, CPU build).

Each compute-only CSV goes through torch's own parser (``_Action.from_str``),
``_validate_schedule`` (per-stage counts, F before I/B, I before W, one rank per
stage), the lowering ``_PipelineScheduleRuntime`` runs when it loads a CSV
(``_add_unshard_reshard``, ``_add_reduce_grad``, ``_add_send_recv``: the real
deadlock check) and ``_simulate_comms_compute`` (overlapped pairs flattened
into their halves first: the simulator does not know OVERLAP_F_B). No step
may fail and none may report "Schedule is not progressing".

Skipped when torch is not installed; CI installs it (``pip install torch==2.13.0``).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from optional import require

from schedsearch.export.torch_csv import to_torch_csv
from schedsearch.handcrafted import reproduce

pytestmark = pytest.mark.torch

schedules = require("torch.distributed.pipelining.schedules")

DATA = Path(__file__).resolve().parent / "data"

CASES = [
    ("gpipe", {}),
    ("gpipe", dict(devices=3, microbatches=2)),
    ("1f1b", {}),
    ("1f1b", dict(devices=8, microbatches=20)),
    ("1f1b", dict(devices=4, microbatches=2)),
    ("interleaved", {}),
    ("interleaved", dict(devices=4, chunks=4, microbatches=16)),
    ("interleaved", dict(devices=2, chunks=3, microbatches=6, group_size=3)),
    ("interleaved-zb", {}),
    ("interleaved-zb", dict(devices=8, chunks=2, microbatches=32)),
    ("zb-h1", {}),
    ("zb-h1", dict(devices=8, microbatches=20)),
    ("zb-v", {}),
    ("zb-v", dict(devices=4, microbatches=3)),
    ("dualpipev", {}),
    ("dualpipev", dict(devices=4, microbatches=16, overlap=2)),
    ("dualpipev", dict(devices=2, microbatches=5)),
]


def torch_actions(text: str) -> dict[int, list]:
    return {rank: [schedules._Action.from_str(cell) for cell in row]
            for rank, row in enumerate(csv.reader(io.StringIO(text)))}


def check_with_torch(text: str, num_ranks: int, num_stages: int, num_microbatches: int) -> dict[int, int]:
    actions = torch_actions(text)
    # the parser reads back exactly what we wrote
    for rank, row in enumerate(csv.reader(io.StringIO(text))):
        assert [str(a) for a in actions[rank]] == row
    stage_to_rank = schedules._validate_schedule(actions, num_ranks, num_stages, num_microbatches)
    lowered = {}
    for rank, acts in actions.items():
        acts = schedules._add_unshard_reshard([a for a in acts if a is not None])
        lowered[rank] = schedules._add_reduce_grad(acts, num_microbatches)
    comms = schedules._add_send_recv(lowered, stage_to_rank=lambda s: stage_to_rank[s], num_stages=num_stages)
    # the simulator knows compute and send/recv only: drop the (un)shard and gradient-reduction
    # actions the lowering added, and flatten overlapped pairs into their halves
    skip = (schedules.UNSHARD, schedules.RESHARD, schedules.REDUCE_GRAD)
    flat = {rank: [sub for a in acts for sub in (a.sub_actions if a.sub_actions is not None else (a,))
                   if sub.computation_type not in skip]
            for rank, acts in comms.items()}
    simulated = schedules._simulate_comms_compute(flat, lambda s: stage_to_rank[s], num_stages)
    assert all(simulated[r] for r in simulated)
    return stage_to_rank


@pytest.mark.parametrize("name, params", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_exported_csv_passes_pytorchs_checks(name, params):
    rep = reproduce(name, **params)
    text = to_torch_csv(rep.problem, rep.schedule)
    num_stages = len({b.stage for b in rep.problem.graph.blocks})
    mapping = check_with_torch(text, len(rep.problem.cluster.devices), num_stages, rep.problem.num_microbatches)
    ranks = {d: i for i, d in enumerate(rep.problem.cluster.device_names)}
    for b in rep.problem.graph.blocks:
        assert mapping[b.stage] == ranks[b.options[0].devices[0]]


def test_pytorchs_own_dualpipev_artifact_passes_the_same_checks():
    check_with_torch((DATA / "dualpipev_4rank_10mb.csv").read_text(), 4, 8, 10)


def test_the_checks_can_fail():
    # rank 1 wants forward 1 first, which rank 0 only runs after backward 0: a deadlock
    text = "0F0,0B0,0F1,0B1\n1F1,1F0,1B0,1B1\n"
    with pytest.raises(AssertionError, match="Malformed compute schedule"):
        check_with_torch(text, 2, 2, 2)
