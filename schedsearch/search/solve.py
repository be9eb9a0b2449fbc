"""Deprecated name of :mod:`schedsearch.search.portfolio` (the module holds the portfolio behind ``solve``).

``import schedsearch.search.solve`` still works and gives the very module
:mod:`schedsearch.search.portfolio`, with a :class:`DeprecationWarning`;
import from :mod:`schedsearch.search.portfolio` instead
(``from schedsearch.search import solve`` gives the function, as before).
"""

import sys
import warnings

import schedsearch.search.portfolio as _portfolio

warnings.warn("schedsearch.search.solve is deprecated: its portfolio is in schedsearch.search.portfolio",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _portfolio
