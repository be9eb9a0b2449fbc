"""Deprecated name of :mod:`schedsearch.search.pareto_front` (the module holds
the time-memory trade-off: Pareto fronts and memory walks).

``import schedsearch.search.pareto`` still works and gives the very module
:mod:`schedsearch.search.pareto_front`, with a :class:`DeprecationWarning`; import from
:mod:`schedsearch.search.pareto_front` instead.
"""

import sys
import warnings

import schedsearch.search.pareto_front as _pareto_front

warnings.warn("schedsearch.search.pareto is deprecated: it is now schedsearch.search.pareto_front",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _pareto_front
