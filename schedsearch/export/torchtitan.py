"""Deprecated name of :mod:`schedsearch.plan.torchtitan` (the planner's floor is one package now, :mod:`schedsearch.plan`).

``import schedsearch.export.torchtitan`` still works and gives the very module :mod:`schedsearch.plan.torchtitan`,
with a :class:`DeprecationWarning`; import from :mod:`schedsearch.plan.torchtitan` instead.
"""

import sys
import warnings

from schedsearch.plan import torchtitan as _moved

warnings.warn("schedsearch.export.torchtitan is deprecated: it is schedsearch.plan.torchtitan now", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
