"""Run schedules on PyTorch: profile a model, execute a plan, prove the gradients equal.

Needs the optional extra ``schedsearch[torch]`` (torch 2.13 to 2.15, CPU
build). Importing this package never imports torch; the functions that need
it import it when called and, without it, raise
:class:`~schedsearch.errors.MissingDependencyError` naming the extra.

* :func:`parse_plan`, :func:`read_plan`: read and check a compute-only
  pipeline CSV (no torch needed);
* :func:`check_problem`: can torch pipelining run this placement? (no torch
  needed);
* :func:`run`: execute a plan on one process per rank with PyTorch's own
  ``_PipelineScheduleRuntime`` and compare every gradient with a
  one-process reference;
* :func:`build_workload`: built-in models (``mlp:LxW``,
  ``transformer:LxD``) split into stages;
* :func:`profile`: measure each stage's F, B, I, W times and activation
  memory and build a placement :class:`~schedsearch.problem.Problem`;
* :mod:`~schedsearch.runtime.trace`: the measured trace of a run, its
  order checks (:func:`order_violations`) and the comparison with the plan
  (:func:`compare`, :class:`Fidelity`); :func:`emulated_workload`: the
  stages of a run whose compute sleeps its planned durations
  (``run(..., emulate=True)``).
"""

from schedsearch.runtime._torch import (
    TESTED_TORCH_VERSION as TESTED_TORCH_VERSION,
    require_torch as require_torch,
    torch_available as torch_available,
)
from schedsearch.runtime.convert import (
    check_problem as check_problem,
    plan_from_schedule as plan_from_schedule,
)
from schedsearch.runtime.emulate import emulated_workload as emulated_workload
from schedsearch.runtime.execute import (
    DEFAULT_TOLERANCE as DEFAULT_TOLERANCE,
    RankReport as RankReport,
    RunResult as RunResult,
    microbatch_split as microbatch_split,
    run as run,
    run_schedule as run_schedule,
)
from schedsearch.runtime.models import (
    ModelSpec as ModelSpec,
    Workload as Workload,
    build_workload as build_workload,
    parse_model_spec as parse_model_spec,
    split_layers as split_layers,
)
from schedsearch.runtime.plan import (
    Action as Action,
    Cell as Cell,
    CsvPlan as CsvPlan,
    Plan as Plan,  # the old name of CsvPlan, kept working
    check_progress as check_progress,
    parse_plan as parse_plan,
    read_plan as read_plan,
)
from schedsearch.runtime.profile import (
    Profile as Profile,
    StageProfile as StageProfile,
    choose_time_unit as choose_time_unit,
    profile as profile,
)
from schedsearch.runtime.torch_checks import torch_check as torch_check
from schedsearch.runtime.trace import (
    Fidelity as Fidelity,
    MeasuredTrace as MeasuredTrace,
    compare as compare,
    measured_schedule as measured_schedule,
    order_violations as order_violations,
)

__all__ = [
    "Action",
    "Fidelity",
    "MeasuredTrace",
    "compare",
    "emulated_workload",
    "measured_schedule",
    "order_violations",
    "Profile",
    "StageProfile",
    "check_problem",
    "choose_time_unit",
    "plan_from_schedule",
    "profile",
    "run_schedule",
    "Cell",
    "DEFAULT_TOLERANCE",
    "ModelSpec",
    "CsvPlan",
    "RankReport",
    "RunResult",
    "TESTED_TORCH_VERSION",
    "Workload",
    "build_workload",
    "check_progress",
    "microbatch_split",
    "parse_model_spec",
    "parse_plan",
    "read_plan",
    "require_torch",
    "run",
    "split_layers",
    "torch_available",
    "torch_check",
]
