"""Deprecated name of :mod:`schedsearch.plan.planner` (the planner's floor is one package now, :mod:`schedsearch.plan`).

``import schedsearch.planner`` still works and gives the very module :mod:`schedsearch.plan.planner`,
with a :class:`DeprecationWarning`; import from :mod:`schedsearch.plan.planner` instead.
"""

import sys
import warnings

from schedsearch.plan import planner as _moved

warnings.warn("schedsearch.planner is deprecated: it is schedsearch.plan.planner now", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
