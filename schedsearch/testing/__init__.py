"""Test machinery shipped with schedsearch: strategies, checks, an oracle, a pytest plugin.

For people who write their own schedulers, schedule generators, runtimes or
bounds and want to test them the way schedsearch tests itself (see
``docs/testing.md``):

* **strategies** (hypothesis; ``python -m pip install -e '.[testing]' from a clone``):
  :func:`problems` (a switch per model feature), :func:`pipeline_problems`
  (the placement builders with random stage times, micro-batch counts and
  memory caps), :func:`overlap_problems`, :func:`schedules` (valid plans of
  a problem), :func:`problems_and_schedules` and :func:`broken` (a valid plan
  mutated to break one validator rule);
* **checks** (no hypothesis needed): :func:`assert_valid`,
  :func:`assert_result_consistent`, :func:`assert_optimal`,
  :func:`assert_bound_sound`, :func:`assert_never_worse`;
* **oracle**: :func:`exact_optimum`, the brute-force optimum of tiny problems,
  :func:`least_peak` and :func:`exact_front`, their least peak memory and
  their exact time-memory front (:mod:`schedsearch.testing.oracle`);
* **generators**: :func:`serial_schedule` (a valid plan from any priority
  order) and the mutations (:mod:`schedsearch.testing.mutations`);
* **pytest plugin** (:mod:`schedsearch.testing.plugin`, loaded
  automatically): hypothesis profiles ``ci``, ``dev`` and ``thorough``
  selected with ``HYPOTHESIS_PROFILE``, and ``schedsearch_*`` fixtures.

Names are imported on first use, so ``import schedsearch.testing`` needs
neither hypothesis nor a solver; only the strategies need hypothesis.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    # strategies (need hypothesis)
    "problems": "strategies",
    "pipeline_problems": "strategies",
    "overlap_problems": "strategies",
    "schedules": "strategies",
    "problems_and_schedules": "strategies",
    "broken": "strategies",
    "ALL_FEATURES": "strategies",
    "PIPELINE_LAYOUTS": "strategies",
    # checks
    "CheckFailed": "checks",
    "assert_valid": "checks",
    "assert_result_consistent": "checks",
    "assert_optimal": "checks",
    "assert_bound_sound": "checks",
    "assert_never_worse": "checks",
    "describe_schedule": "checks",
    # oracle
    "exact_optimum": "oracle",
    "least_peak": "oracle",
    "exact_front": "oracle",
    "OracleResult": "oracle",
    "OracleTooLarge": "oracle",
    # generators
    "serial_schedule": "sgs",
    "Mutation": "mutations",
    "mutate": "mutations",
    "mutation_sites": "mutations",
    "producible_kinds": "mutations",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'schedsearch.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"schedsearch.testing.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
