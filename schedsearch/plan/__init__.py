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

from schedsearch.plan.pipeline import P2P as P2P, Pipeline as Pipeline, Stage as Stage
from schedsearch.plan.planner import (
    Candidate as Candidate,
    PlanResult as PlanResult,
    PlanRow as PlanRow,
    plan as plan,
    plan_sweep as plan_sweep,
)

__all__ = ["Candidate", "P2P", "Pipeline", "PlanResult", "PlanRow", "Stage", "plan", "plan_sweep"]
