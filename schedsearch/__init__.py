"""schedsearch: exact placement and schedule search for distributed deep learning.

Layers (imports point down only): ``problem`` and ``schedule`` (solver-free
data, metrics, :func:`validate`), ``encode`` (CP-SAT and Z3 backends),
``search`` (strategies), ``bounds``, ``placements``, ``export``, ``cli``.
"""

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
from schedsearch.result import SearchResult as SearchResult, Status as Status
from schedsearch.schedule import Schedule as Schedule, TaskInstance as TaskInstance, Transfer as Transfer, metrics as metrics
from schedsearch.validate import validate as validate

__version__ = "0.1.0"

__all__ = [
    "Block",
    "Channel",
    "Cluster",
    "Device",
    "Edge",
    "Graph",
    "InvalidProblemError",
    "InvalidScheduleError",
    "Option",
    "Problem",
    "SchedSearchError",
    "Schedule",
    "SearchResult",
    "Status",
    "TaskInstance",
    "Transfer",
    "metrics",
    "validate",
]
