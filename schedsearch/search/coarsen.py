"""Deprecated name of :mod:`schedsearch.search.coarsening` (the module holds
graph coarsening: Coarsening and coarsen).

``import schedsearch.search.coarsen`` still works and gives the very module
:mod:`schedsearch.search.coarsening`, with a :class:`DeprecationWarning`; import from
:mod:`schedsearch.search.coarsening` instead.
"""

import sys
import warnings

import schedsearch.search.coarsening as _coarsening

warnings.warn("schedsearch.search.coarsen is deprecated: it is now schedsearch.search.coarsening",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _coarsening
