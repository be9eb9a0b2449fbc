"""Emulated compute: a stage call the plan has no time for is an error naming it, not a zero-length sleep."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from schedsearch.actions import Action
from schedsearch.errors import ExecutionError
from schedsearch.runtime._torch import emulated_seconds, instrument_stages

PLANNED = {Action(0, "F", 0): 0.004, Action(0, "B", 0): 0.008, Action(1, "F", 0): 0.004}


def test_a_planned_call_gets_its_planned_seconds():
    assert emulated_seconds(PLANNED, 0, Action(0, "B", 0)) == 0.008


@pytest.mark.parametrize("key", [(0, "F", 7), (0, "I", 0), (2, "F", 0)])
def test_a_call_the_plan_does_not_have_names_rank_stage_kind_and_microbatch(key):
    with pytest.raises(ExecutionError, match=rf"rank 3: stage {key[0]} {key[1]} of micro-batch {key[2]}:") as info:
        emulated_seconds(PLANNED, 3, Action(*key))
    assert info.value.rank == 3


def test_an_instrumented_stage_refuses_an_unplanned_call_before_computing():
    pytest.importorskip("torch")
    ran: list = []
    slept: list = []
    stage = SimpleNamespace(
        stage_index=0,
        forward_one_chunk=lambda chunk, *a, **k: ran.append(("F", chunk)),
        backward_one_chunk=lambda chunk, *a, **k: ran.append(("B", chunk)),
        backward_weight_one_chunk=lambda chunk, *a, **k: ran.append(("W", chunk)),
    )
    instrument_stages([stage], PLANNED, sleep=slept.append, rank=1)
    stage.forward_one_chunk(0)
    assert ran == [("F", 0)] and len(slept) == 1 and 0 < slept[0] <= 0.004
    with pytest.raises(ExecutionError, match=r"rank 1: stage 0 F of micro-batch 5:"):
        stage.forward_one_chunk(5)
    with pytest.raises(ExecutionError, match=r"rank 1: stage 0 I of micro-batch 0:"):
        stage.backward_one_chunk(0, full_backward=False)
    assert ran == [("F", 0)]
