"""schedsearch: exact placement and schedule search for distributed deep learning.

Layers, bottom up (each imports its own layer and those below it, and the
module import graph has no circle; ``tests/test_layers.py`` places every
module and checks both):

* the leaves: ``errors``, the text and JSON readers, ``timeline`` (the free
  gaps of devices and channels that the list schedulers and the simulator
  of device orders book), ``units``, ``executors``, ``actions`` (the one
  pipeline action type, torch's action grammar printed and parsed);
* the solver-free core: ``problem``, then ``schedule`` (metrics), then
  ``validate``, then ``periodic``, ``rewrite`` (the problem under other
  capacities, overlapped groups flattened and regrouped), ``result`` and
  ``options``;
* solver-free faces that build and write plans: ``placements`` and
  ``graphs`` (problem builders), ``handcrafted`` (the published schedules),
  ``export`` (CSV, traces, JSON, pictures) and ``testing``;
* ``bounds``: the schedule lower bounds (analytic, memory, assignment LP);
  ``bounds.mip``, the MIP layer, is loaded only when used;
* ``encode``: the CP-SAT and Z3 backends;
* ``partition`` (operator graphs, partitioners and their integer programs)
  with ``loaders`` (job-shop files as problems, operator-graph files for the
  partitioners);
* ``search``: the strategies, DiviML's MILP, the comparison with handcrafted
  schedules;
* ``plan``: the floor above search, from a pipeline description to the
  files a trainer runs (the description, calibration, the candidates and
  their times, the planner's table, torchtitan's settings);
* ``runtime``: PyTorch execution, profiling and calibration runs (it never
  imports a search; the planner does);
* this package's names, then ``cli``.

One upward import is deliberate and deferred into a function:
``SearchResult.export()`` calls the exporters.

Module names and function names. A few packages export a function under its
own module's name: ``schedsearch.validate``, ``schedsearch.plan`` (the planner's package; the
attribute is its entry point, ``schedsearch.plan(pipeline)``), ``schedsearch.handcrafted.chimera``,
``schedsearch.handcrafted.dualpipe`` and ``schedsearch.runtime.profile``.
There the package's attribute is the function, as ``from schedsearch.validate
import validate`` expects, so ``import schedsearch.validate as m`` binds the
function too. The search strategies live in modules named after what they
hold: ``solve`` in ``schedsearch.search.portfolio``, ``optimal`` in
``schedsearch.search.exact``, ``repetend`` in
``schedsearch.search.repetend_search``, ``coarsen`` in
``schedsearch.search.coarsening``, ``jobshop`` in
``schedsearch.search.jobshop_search`` and ``pareto`` in
``schedsearch.search.pareto_front`` (their old module names still import,
with a ``DeprecationWarning``). Import names from
the module (``from schedsearch.validate import Violation``) or reach it with
``importlib.import_module("schedsearch.validate")``. No other module shares a
name with what its package exports (``tests/test_module_names.py``).
"""

import sys
import types

from schedsearch.errors import (
    InvalidProblemError as InvalidProblemError,
    InvalidScheduleError as InvalidScheduleError,
    SchedSearchError as SchedSearchError,
)
from schedsearch.problem import (
    Block as Block,
    Channel as Channel,
    Cluster as Cluster,
    Device as Device,
    Edge as Edge,
    Graph as Graph,
    Option as Option,
    Problem as Problem,
)
from schedsearch.options import ProgressEvent as ProgressEvent, SearchOptions as SearchOptions
from schedsearch.result import Level as Level, SearchResult as SearchResult, Status as Status
from schedsearch.schedule import Schedule as Schedule, TaskInstance as TaskInstance, Transfer as Transfer, metrics as metrics
from schedsearch.validate import validate as validate

__version__ = "0.1.0"

#: the names loaded when first used: solve() pulls in the engines (and their solvers), the planner's
#: names its package (the description, the candidates, the executors), so importing the model, the
#: validator or the exporters stays light
_LAZY = ("Pipeline", "plan", "plan_sweep", "solve")


class _Package(types.ModuleType):
    """The package: the planner's package, once imported, does not replace its entry point ``plan``."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "plan" and isinstance(value, types.ModuleType):
            return  # the import system binding the subpackage: the name stays the planner's entry point
        super().__setattr__(name, value)


def __getattr__(name: str):
    if name == "solve":
        from schedsearch.search import portfolio as where
    elif name == "Pipeline":
        from schedsearch.plan import pipeline as where
    elif name in _LAZY:
        from schedsearch.plan import planner as where
    else:
        raise AttributeError(f"module 'schedsearch' has no attribute {name!r}")
    value = getattr(where, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


sys.modules[__name__].__class__ = _Package


__all__ = [
    "Block",
    "Channel",
    "Cluster",
    "Device",
    "Edge",
    "Graph",
    "InvalidProblemError",
    "InvalidScheduleError",
    "Level",
    "Option",
    "Pipeline",
    "Problem",
    "ProgressEvent",
    "SchedSearchError",
    "SearchOptions",
    "Schedule",
    "SearchResult",
    "Status",
    "TaskInstance",
    "Transfer",
    "metrics",
    "plan",
    "plan_sweep",
    "solve",
    "validate",
]
