"""Hypothesis strategies for pipeline problems: small random placements.

Each problem is one or two pipelines (random stage-to-device mappings) on
2-3 devices, with or without the zero-bubble split, small integer durations,
forward memory 1 or 2 (split backwards free part of it at ``I``), and a
capacity that leaves room for at least two forwards, or none.
"""

from __future__ import annotations

from hypothesis import strategies as st

from schedsearch.placements import chain_pipelines
from schedsearch.problem import Problem


@st.composite
def pipeline_problems(draw, max_devices: int = 3, max_stages: int = 3, max_microbatches: int = 3) -> Problem:
    num_devices = draw(st.integers(2, max_devices))
    num_pipes = draw(st.integers(1, 2))
    pipelines = [draw(st.lists(st.integers(0, num_devices - 1), min_size=1, max_size=max_stages))
                 for _ in range(num_pipes)]
    split = draw(st.booleans())
    forward_memory = draw(st.integers(1, 2))
    kwargs = {}
    if split:
        kwargs.update(split_backward=True, input_grad=draw(st.integers(1, 2)), weight_grad=draw(st.integers(1, 2)),
                      input_grad_memory=-1 if forward_memory == 2 and draw(st.booleans()) else 0)
    memory = draw(st.one_of(st.none(), st.integers(2 * forward_memory, 4 * forward_memory)))
    return chain_pipelines(
        pipelines, num_devices, draw(st.integers(1, max_microbatches)),
        forward=draw(st.integers(1, 2)), backward=draw(st.integers(2, 3)),
        forward_memory=forward_memory, memory=memory, **kwargs,
    )
