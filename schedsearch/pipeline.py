"""Deprecated name of :mod:`schedsearch.plan.pipeline` (the planner's floor is one package now, :mod:`schedsearch.plan`).

``import schedsearch.pipeline`` still works and gives the very module :mod:`schedsearch.plan.pipeline`,
with a :class:`DeprecationWarning`; import from :mod:`schedsearch.plan.pipeline` instead.
"""

import sys
import warnings

from schedsearch.plan import pipeline as _moved

warnings.warn("schedsearch.pipeline is deprecated: it is schedsearch.plan.pipeline now", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
