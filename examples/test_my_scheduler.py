"""Test your own scheduler: a naive 1F1B generator checked with schedsearch.testing.

A hand-written scheduler (here: the 1F1B order on the stage-per-device
placement) is checked like schedsearch checks itself: hypothesis draws
pipeline problems (random stage times, micro-batch counts and memory caps),
the scheduler plans each one, and ``assert_valid`` checks the plan with the
library's independent validator. An off-by-one bug is planted behind a flag
(one forward too many before the first backward, so a stage holds one
activation more than 1F1B needs); hypothesis finds it and shrinks the
failure to a minimal problem.

Run::

    python examples/test_my_scheduler.py            # both ways, prints the shrunk counterexample
    pytest examples/test_my_scheduler.py            # the property, bug off: passes
    SCHEDSEARCH_PLANTED_BUG=1 pytest examples/test_my_scheduler.py   # fails, shrunk
"""

from __future__ import annotations

import argparse
import os

from hypothesis import given, settings

from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance
from schedsearch.testing import assert_valid, pipeline_problems

#: The planted bug: on with SCHEDSEARCH_PLANTED_BUG=1 (or ``buggy=True``).
BUGGY = os.environ.get("SCHEDSEARCH_PLANTED_BUG", "") not in ("", "0")


# --------------------------------------------------------------------------
# The scheduler under test
# --------------------------------------------------------------------------


def one_f_one_b(problem: Problem, *, buggy: bool | None = None) -> Schedule | None:
    """1F1B on a pipeline whose stage ``s`` runs ``F{s}`` and ``B{s}`` on one device.

    Stage ``s`` of ``D`` runs ``min(N, D - s - 1)`` warm-up forwards, then
    alternates one forward and one backward, then drains the backwards; each
    task starts as soon as its device and its predecessors are done. It
    declines (returns None) when a device's capacity is below what this order
    needs there: ``min(N, D - s)`` activations.
    """
    buggy = BUGGY if buggy is None else buggy
    forward = {b.stage: b for b in problem.graph.blocks if b.kind == "F"}
    backward = {b.stage: b for b in problem.graph.blocks if b.kind == "B"}
    D, N = len(forward), problem.num_microbatches
    orders: dict[str, list[tuple[str, int]]] = {}
    for s in range(D):
        F, B = forward[s].name, backward[s].name
        device = forward[s].options[0].devices[0]
        capacity = problem.capacity(device)
        needs = problem.initial_memory_of(device) + min(N, D - s) * forward[s].memory
        if capacity is not None and capacity < needs:
            return None
        warmup = min(N, D - s if buggy else D - s - 1)  # the planted off-by-one
        order = [(F, m) for m in range(warmup)]
        for i in range(N - warmup):
            order += [(F, warmup + i), (B, i)]
        order += [(B, m) for m in range(N - warmup, N)]
        orders[device] = order

    preds: dict[str, list[str]] = {b.name: [] for b in problem.graph.blocks}
    for e in problem.graph.edges:
        preds[e.dst].append(e.src)
    devices = {b.name: b.options[0].devices for b in problem.graph.blocks}
    end: dict[tuple[str, int], int] = {}
    free = dict.fromkeys(orders, 0)
    tasks = []
    while any(orders.values()):
        progress = False
        for device, order in orders.items():
            if not order:
                continue
            block, m = order[0]
            if any((p, m) not in end for p in preds[block]):
                continue
            start = max([free[device]] + [end[(p, m)] for p in preds[block]])
            finish = start + problem.durations(block, m)[0]
            tasks.append(TaskInstance(block=block, microbatch=m, devices=devices[block], start=start, end=finish))
            end[(block, m)] = free[device] = finish
            order.pop(0)
            progress = True
        if not progress:  # the orders wait on each other
            return None
    return Schedule(tasks=tasks, name="1F1B")


# --------------------------------------------------------------------------
# The property
# --------------------------------------------------------------------------

#: 1F1B placements (stage s on device s), 1-4 devices, 1-6 micro-batches, random caps.
PIPELINES = pipeline_problems(layouts=["1f1b"], max_devices=4, max_microbatches=6)

#: reproducible, no example database written, one failure reported
SETTINGS = settings(max_examples=300, derandomize=True, database=None, deadline=None, report_multiple_bugs=False)


def check(problem: Problem) -> None:
    """Whenever the scheduler returns a plan, the plan is valid."""
    schedule = one_f_one_b(problem)
    if schedule is not None:
        assert_valid(problem, schedule, "1F1B plan")


@SETTINGS
@given(PIPELINES)
def test_one_f_one_b_plans_are_valid(problem: Problem) -> None:
    check(problem)


def run_property(buggy: bool) -> tuple[Problem, AssertionError] | None:
    """Run the property with the bug on or off; the shrunk counterexample, or None when it holds.

    Hypothesis replays the minimal failing example last, so the last
    failure seen is the shrunk one.
    """
    global BUGGY
    saved, BUGGY = BUGGY, buggy
    failures: list[tuple[Problem, AssertionError]] = []

    @SETTINGS
    @given(PIPELINES)
    def prop(problem: Problem) -> None:
        try:
            check(problem)
        except AssertionError as exc:
            failures.append((problem, exc))
            raise

    try:
        prop()
        return None
    except AssertionError:
        return failures[-1]
    finally:
        BUGGY = saved


def size(problem: Problem) -> tuple[int, int, int]:
    """(blocks, micro-batches, devices)"""
    return len(problem.graph.blocks), problem.num_microbatches, len(problem.cluster.devices)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    ok = True
    print("bug off: ", end="")
    found = run_property(buggy=False)
    if found is None:
        print(f"the property holds on {SETTINGS.max_examples} random pipelines")
    else:
        ok = False
        print(f"unexpected failure:\n{found[1]}")
    print("bug on:  ", end="")
    found = run_property(buggy=True)
    if found is None:
        ok = False
        print("the planted bug was not found")
    else:
        problem, error = found
        blocks, mbs, devices = size(problem)
        caps = {d.name: d.memory for d in problem.cluster.devices}
        print(f"hypothesis found the bug and shrank it to {blocks} blocks x {mbs} micro-batches on {devices} "
              f"device(s), capacities {caps}:")
        print(error)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
