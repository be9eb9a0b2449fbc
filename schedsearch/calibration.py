"""Deprecated name of :mod:`schedsearch.plan.calibration` (the planner's floor is one package now, :mod:`schedsearch.plan`).

``import schedsearch.calibration`` still works and gives the very module :mod:`schedsearch.plan.calibration`,
with a :class:`DeprecationWarning`; import from :mod:`schedsearch.plan.calibration` instead.
"""

import sys
import warnings

from schedsearch.plan import calibration as _moved

warnings.warn("schedsearch.calibration is deprecated: it is schedsearch.plan.calibration now", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
