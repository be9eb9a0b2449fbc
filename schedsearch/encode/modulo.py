"""Deprecated name of :mod:`schedsearch.encode.repetend` (the module holds the
repetend entry of the encoders; its old names (ModuloOptions, solve_modulo,
...) are kept there).

``import schedsearch.encode.modulo`` still works and gives the very module
:mod:`schedsearch.encode.repetend`, with a :class:`DeprecationWarning`; import from
:mod:`schedsearch.encode.repetend` instead.
"""

import sys
import warnings

import schedsearch.encode.repetend as _repetend

warnings.warn("schedsearch.encode.modulo is deprecated: it is now schedsearch.encode.repetend",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _repetend
