"""Deprecated name of :mod:`schedsearch.actions` (torch's pipeline actions and CSV cells).

``import schedsearch.export.torch_actions`` still works and gives the very module
:mod:`schedsearch.actions` (``Action``, ``Cell``, ``parse_cell``, ``parse_rows``, ``format_rows``),
with a :class:`DeprecationWarning`; import from :mod:`schedsearch.actions` instead.
"""

import sys
import warnings

from schedsearch import actions as _moved

warnings.warn("schedsearch.export.torch_actions is deprecated: it is schedsearch.actions now", DeprecationWarning,
              stacklevel=2)
sys.modules[__name__] = _moved
