"""Deprecated name of :mod:`schedsearch.executors` (the module holds executors, not sweeps).

``import schedsearch.sweep`` still works and gives the very module
:mod:`schedsearch.executors` (same classes, same functions), with a
:class:`DeprecationWarning`; import from :mod:`schedsearch.executors` instead.
"""

import sys
import warnings

import schedsearch.executors as _executors

warnings.warn("schedsearch.sweep is deprecated: its executors are in schedsearch.executors", DeprecationWarning,
              stacklevel=2)
sys.modules[__name__] = _executors
