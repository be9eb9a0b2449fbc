"""Hypothesis strategies for the repetend tests: small random pipeline placements.

Valid by construction: every pipeline stage lies on an existing device,
durations are >= 1, and memory deltas pair up (F allocates 1, its B frees
1), so a periodic schedule exists whenever each block fits.
"""

from __future__ import annotations

from hypothesis import strategies as st

from schedsearch.placements import chain_pipelines


@st.composite
def small_placements(draw, max_devices: int = 3, max_stages: int = 3, memory: bool = True, train: bool = True):
    """A chain-pipeline Problem: 1-2 pipelines of 1-``max_stages`` stages on
    2-``max_devices`` devices, F in 1..2, B in 1..3, capacity None or 1 to 3
    more than the stages a device holds (small capacities bind or make the
    problem infeasible)."""
    num_devices = draw(st.integers(2, max_devices))
    num_pipelines = draw(st.integers(1, 2))
    pipelines = [
        draw(st.lists(st.integers(0, num_devices - 1), min_size=1, max_size=max_stages))
        for _ in range(num_pipelines)
    ]
    stages_on = [sum(p.count(d) for p in pipelines) for d in range(num_devices)]
    capacity = None
    if memory:
        capacity = draw(st.one_of(st.none(), st.integers(1, max(stages_on) + 3)))
    return chain_pipelines(
        pipelines,
        num_devices,
        draw(st.integers(2, 6)),
        forward=draw(st.integers(1, 2)),
        backward=draw(st.integers(1, 3)) if train else None,
        memory=capacity,
        name="random",
    )
