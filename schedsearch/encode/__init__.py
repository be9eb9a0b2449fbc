"""Encoders: Problem -> solver model -> Schedule (CP-SAT and Z3 backends)."""

from schedsearch.encode.base import (
    BACKENDS as BACKENDS,
    Backend as Backend,
    Progress as Progress,
    SolveOptions as SolveOptions,
    available_backends as available_backends,
    get_backend as get_backend,
    solve as solve,
)

__all__ = ["BACKENDS", "Backend", "Progress", "SolveOptions", "available_backends", "get_backend", "solve"]
