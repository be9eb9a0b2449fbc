"""Search strategies: they build sub-problems and hand them to a backend.

The names below are loaded on first use, so importing one strategy (say
``schedsearch.search.jobshop_search``) does not import the others and what they
depend on. The package's attribute is always the function, as
``from schedsearch.search import pareto`` expects, also after a module of
the same name was imported: the deprecated module names ``solve``,
``optimal``, ``repetend``, ``coarsen``, ``jobshop`` and ``pareto`` (now
``portfolio``, ``exact``, ``repetend_search``, ``coarsening``,
``jobshop_search`` and ``pareto_front``).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

#: public name -> the module (under schedsearch.search) that defines it
_WHERE = {
    "Coarsening": "coarsening",
    "coarsen": "coarsening",
    "HEFT_RULES": "list_scheduling",
    "PIPELINE_RULES": "list_scheduling",
    "PipelineRule": "list_scheduling",
    "best_list_schedule": "list_scheduling",
    "heft": "list_scheduling",
    "list_plan": "list_scheduling",
    "list_schedule": "list_scheduling",
    "jobshop": "jobshop_search",
    "transfer_overlap": "jobshop_search",
    "optimal": "exact",
    "MemoryWalk": "pareto_front",
    "ParetoFront": "pareto_front",
    "ParetoPoint": "pareto_front",
    "min_memory": "pareto_front",
    "pareto": "pareto_front",
    "RepetendResult": "repetend_search",
    "repetend": "repetend_search",
    "scale_search": "scale",
    "solve": "portfolio",
    "Provenance": "run",
    "Run": "run",
    "Source": "run",
}


class _SearchPackage(types.ModuleType):
    """The package: a submodule named like a public function does not replace the function's name."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _WHERE and isinstance(value, types.ModuleType):
            return  # the import system binding the submodule: the name stays the function's
        super().__setattr__(name, value)


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'schedsearch.search' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"schedsearch.search.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


sys.modules[__name__].__class__ = _SearchPackage

__all__ = [
    "HEFT_RULES",
    "PIPELINE_RULES",
    "Coarsening",
    "MemoryWalk",
    "ParetoFront",
    "ParetoPoint",
    "PipelineRule",
    "Provenance",
    "RepetendResult",
    "Run",
    "Source",
    "best_list_schedule",
    "coarsen",
    "heft",
    "jobshop",
    "list_plan",
    "list_schedule",
    "min_memory",
    "optimal",
    "pareto",
    "repetend",
    "scale_search",
    "solve",
    "transfer_overlap",
]
