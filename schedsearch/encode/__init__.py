"""Encoders: Problem -> solver model -> Schedule (CP-SAT and Z3 backends).

* :mod:`~schedsearch.encode.solve_options`: :class:`SolveOptions`, what
  every backend takes;
* :mod:`~schedsearch.encode.backends`: the :class:`Backend` protocol, the
  registry (:data:`BACKENDS`, :func:`get_backend`) and :func:`solve`, which
  validates what a backend returns;
* :mod:`~schedsearch.encode.repetend`: the modulo-scheduling entry of the
  repetend search (:func:`~schedsearch.encode.repetend.solve_repetend`);
* :mod:`~schedsearch.encode.structure`: the solver-neutral
  :class:`~schedsearch.encode.structure.TaskStructure` both backends build on;
* ``cpsat/`` and ``z3/``: the backends, with the same constraint families.
"""

from schedsearch.encode.backends import (
    BACKENDS as BACKENDS,
    Backend as Backend,
    available_backends as available_backends,
    get_backend as get_backend,
    solve as solve,
)
from schedsearch.encode.solve_options import Progress as Progress, SolveOptions as SolveOptions

__all__ = ["BACKENDS", "Backend", "Progress", "SolveOptions", "available_backends", "get_backend", "solve"]
