"""Search strategies: they build sub-problems and hand them to a backend."""

from schedsearch.search.optimal import optimal as optimal
from schedsearch.search.pareto import min_memory as min_memory, pareto as pareto
from schedsearch.search.scale import scale_search as scale_search

__all__ = ["min_memory", "optimal", "pareto", "scale_search"]
