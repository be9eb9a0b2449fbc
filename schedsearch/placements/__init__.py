"""Builders of pipeline Problems (placements).

* :mod:`~schedsearch.placements.chains`: chains of stages over devices
  (``chain_pipelines``, ``vshape``, ``bidirectional``), with the optional
  zero-bubble split and overlapped groups; ``chimera`` is ``bidirectional``
  under Chimera's name (the same function);
* :mod:`~schedsearch.placements.stages`: a pipeline from a stage-to-device
  mapping (``"loop"``, ``"v"`` or explicit) and the published placements
  (zero bubble, interleaved, ZB-V's V, DualPipe, DualPipeV);
* :mod:`~schedsearch.placements.tessel`: Tessel's V, X, M, NN and K shapes.
"""

from schedsearch.placements.chains import (
    bidirectional as bidirectional,
    chain_pipelines as chain_pipelines,
    device_names as device_names,
    vshape as vshape,
)
from schedsearch.placements.stages import (
    MAPPING_STYLES as MAPPING_STYLES,
    chimera as chimera,
    dualpipe as dualpipe,
    dualpipev as dualpipev,
    interleaved as interleaved,
    mapping_style as mapping_style,
    stage_mapping as stage_mapping,
    stage_pipeline as stage_pipeline,
    vshape_chunks as vshape_chunks,
    zero_bubble as zero_bubble,
)
from schedsearch.placements.tessel import (
    TESSEL_SHAPES as TESSEL_SHAPES,
    tessel_k as tessel_k,
    tessel_m as tessel_m,
    tessel_nn as tessel_nn,
    tessel_shape as tessel_shape,
    tessel_v as tessel_v,
    tessel_x as tessel_x,
)

__all__ = [
    "bidirectional",
    "chain_pipelines",
    "device_names",
    "vshape",
    "MAPPING_STYLES",
    "chimera",
    "dualpipe",
    "dualpipev",
    "interleaved",
    "mapping_style",
    "stage_mapping",
    "stage_pipeline",
    "vshape_chunks",
    "zero_bubble",
    "TESSEL_SHAPES",
    "tessel_k",
    "tessel_m",
    "tessel_nn",
    "tessel_shape",
    "tessel_v",
    "tessel_x",
]
