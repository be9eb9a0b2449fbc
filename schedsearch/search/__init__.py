"""Search strategies: they build sub-problems and hand them to a backend."""

from schedsearch.search.coarsen import Coarsening as Coarsening, coarsen as coarsen
from schedsearch.search.list_scheduling import (
    HEFT_RULES as HEFT_RULES,
    PIPELINE_RULES as PIPELINE_RULES,
    PipelineRule as PipelineRule,
    best_list_schedule as best_list_schedule,
    heft as heft,
    list_plan as list_plan,
    list_schedule as list_schedule,
)
from schedsearch.search.jobshop import jobshop as jobshop, transfer_overlap as transfer_overlap
from schedsearch.search.optimal import optimal as optimal
from schedsearch.search.pareto import (
    MemoryWalk as MemoryWalk,
    ParetoFront as ParetoFront,
    ParetoPoint as ParetoPoint,
    min_memory as min_memory,
    pareto as pareto,
)
from schedsearch.search.repetend import RepetendResult as RepetendResult, repetend as repetend
from schedsearch.search.scale import scale_search as scale_search
from schedsearch.search.solve import solve as solve

__all__ = [
    "HEFT_RULES",
    "PIPELINE_RULES",
    "Coarsening",
    "MemoryWalk",
    "ParetoFront",
    "ParetoPoint",
    "PipelineRule",
    "RepetendResult",
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
