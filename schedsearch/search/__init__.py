"""Search strategies: they build sub-problems and hand them to a backend."""

from schedsearch.search.coarsen import Coarsening as Coarsening, coarsen as coarsen
from schedsearch.search.heuristics import heft as heft, list_schedule as list_schedule
from schedsearch.search.jobshop import jobshop as jobshop, transfer_overlap as transfer_overlap
from schedsearch.search.optimal import optimal as optimal

__all__ = ["Coarsening", "coarsen", "heft", "jobshop", "list_schedule", "optimal", "transfer_overlap"]
