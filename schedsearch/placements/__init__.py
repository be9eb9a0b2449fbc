"""Builders of pipeline Problems (placements)."""

from schedsearch.placements.pipeline import (
    bidirectional as bidirectional,
    chain_pipelines as chain_pipelines,
    device_names as device_names,
    vshape as vshape,
)

__all__ = ["bidirectional", "chain_pipelines", "device_names", "vshape"]
