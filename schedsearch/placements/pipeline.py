"""Deprecated name of :mod:`schedsearch.placements.chains` (the module holds
the placement builders that chain stages over devices: chain_pipelines,
vshape, bidirectional).

``import schedsearch.placements.pipeline`` still works and gives the very module
:mod:`schedsearch.placements.chains`, with a :class:`DeprecationWarning`; import from
:mod:`schedsearch.placements.chains` instead.
"""

import sys
import warnings

import schedsearch.placements.chains as _chains

warnings.warn("schedsearch.placements.pipeline is deprecated: it is now schedsearch.placements.chains",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _chains
