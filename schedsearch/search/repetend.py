"""Deprecated name of :mod:`schedsearch.search.repetend_search` (the module
holds the repetend search and its public entry, repetend).

``import schedsearch.search.repetend`` still works and gives the very module
:mod:`schedsearch.search.repetend_search`, with a :class:`DeprecationWarning`; import from
:mod:`schedsearch.search.repetend_search` instead.
"""

import sys
import warnings

import schedsearch.search.repetend_search as _repetend_search

warnings.warn("schedsearch.search.repetend is deprecated: it is now schedsearch.search.repetend_search",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _repetend_search
