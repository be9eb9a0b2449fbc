"""Deprecated name of :mod:`schedsearch.plan.times` (a candidate's times in exact milliseconds).

``import schedsearch.real_ms`` still works and gives the very module :mod:`schedsearch.plan.times`
(``retime_ms``, ``real_bound_ms``, ``exact_ms``, ``float_below``; a candidate's times are a
:class:`~schedsearch.plan.times.CandidateTimes`), with a :class:`DeprecationWarning`; import from
:mod:`schedsearch.plan.times` instead.
"""

import sys
import warnings

from schedsearch.plan import times as _moved

warnings.warn("schedsearch.real_ms is deprecated: it is schedsearch.plan.times now", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
