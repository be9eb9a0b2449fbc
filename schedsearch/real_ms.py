"""Deprecated name of :mod:`schedsearch.plan.real_ms` (the planner's floor is one package now, :mod:`schedsearch.plan`).

``import schedsearch.real_ms`` still works and gives the very module :mod:`schedsearch.plan.real_ms`,
with a :class:`DeprecationWarning`; import from :mod:`schedsearch.plan.real_ms` instead.
"""

import sys
import warnings

from schedsearch.plan import real_ms as _moved

warnings.warn("schedsearch.real_ms is deprecated: it is schedsearch.plan.real_ms now", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
