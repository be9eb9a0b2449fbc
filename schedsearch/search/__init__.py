"""Search strategies: they build sub-problems and hand them to a backend."""

from schedsearch.search.optimal import optimal as optimal

__all__ = ["optimal"]
