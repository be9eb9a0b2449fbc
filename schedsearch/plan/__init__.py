"""The floor above search: from a pipeline description to the files a trainer runs.

The flow, one module a step:

* :mod:`~schedsearch.plan.pipeline`: the description (stages or layers in
  milliseconds and bytes, the ranks, the memory budget), read from TOML,
  JSON, a profile or Python;
* :mod:`~schedsearch.plan.calibration`: what a calibration run measured
  (links, the step's own overhead), applied to a description;
* :mod:`~schedsearch.plan.times`: a candidate's times in exact
  milliseconds, from which its problem's integer ticks are derived once and
  every figure shown in milliseconds is read;
* :mod:`~schedsearch.plan.candidates`: the candidates (a schedule family with
  its shape), whether each applies, and its :class:`~schedsearch.Problem`;
* :mod:`~schedsearch.plan.shares` and :mod:`~schedsearch.plan.evaluation`:
  the time limit split into the candidates' shares, and one candidate's
  search within its share;
* :mod:`~schedsearch.plan.outcome` and :mod:`~schedsearch.plan.table`: a
  row's typed outcome (status and reason) and the ranked table
  (:class:`PlanResult`);
* :mod:`~schedsearch.plan.planner`: :func:`plan` and :func:`plan_sweep`,
  which run the flow above through one executor;
* :mod:`~schedsearch.plan.torchtitan`: the files a torchtitan user launches.

``schedsearch.plan`` is also the name of the planner's entry point on the
package: ``schedsearch.plan(pipeline)`` calls :func:`plan`, as
``schedsearch.validate(problem, schedule)`` calls the validator (import names
from the modules: ``from schedsearch.plan import Pipeline, plan``).
"""

from __future__ import annotations

import importlib
from typing import Any

from schedsearch.plan.pipeline import P2P as P2P, Pipeline as Pipeline, Stage as Stage

#: the planner's names, loaded when first used: the planner loads CP-SAT, which reading a description (as the
#: solver-free layers do) must not
_PLANNER = ("Candidate", "PlanResult", "PlanRow", "plan", "plan_sweep")

#: the package's modules, loaded when first named as attributes (``schedsearch.plan.planner``)
_MODULES = ("autoplan", "calibration", "candidates", "evaluation", "layers", "model_spec", "outcome", "peers",
            "pipeline", "planner", "shares", "table", "times", "torchtitan")

__all__ = ["Candidate", "P2P", "Pipeline", "PlanResult", "PlanRow", "Stage", "plan", "plan_sweep"]


def __getattr__(name: str) -> Any:
    if name in _PLANNER:
        return getattr(importlib.import_module("schedsearch.plan.planner"), name)
    if name in _MODULES:
        return importlib.import_module(f"schedsearch.plan.{name}")
    raise AttributeError(f"module 'schedsearch.plan' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_PLANNER, *_MODULES})
