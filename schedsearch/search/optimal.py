"""Deprecated name of :mod:`schedsearch.search.exact` (the module holds the
exact search and its public entry, optimal).

``import schedsearch.search.optimal`` still works and gives the very module
:mod:`schedsearch.search.exact`, with a :class:`DeprecationWarning`; import from
:mod:`schedsearch.search.exact` instead.
"""

import sys
import warnings

import schedsearch.search.exact as _exact

warnings.warn("schedsearch.search.optimal is deprecated: it is now schedsearch.search.exact",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _exact
