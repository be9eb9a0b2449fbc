"""Deprecated name of :mod:`schedsearch.search.jobshop_search` (the module
holds the job-shop search: jobshop and transfer_overlap).

``import schedsearch.search.jobshop`` still works and gives the very module
:mod:`schedsearch.search.jobshop_search`, with a :class:`DeprecationWarning`; import from
:mod:`schedsearch.search.jobshop_search` instead.
"""

import sys
import warnings

import schedsearch.search.jobshop_search as _jobshop_search

warnings.warn("schedsearch.search.jobshop is deprecated: it is now schedsearch.search.jobshop_search",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _jobshop_search
