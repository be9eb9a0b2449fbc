"""Model specs: the runtime's built-in models named by a string (``mlp:8x64``, ``transformer:4x32``).

A pipeline description records the model its stage times were profiled from
as a spec (:attr:`Pipeline.model_spec <schedsearch.plan.pipeline.Pipeline>`);
:func:`schedsearch.runtime.build_workload` builds the model a spec names.
Reading a spec needs no torch.
"""

from __future__ import annotations

import re

import attrs

from schedsearch.errors import InvalidProblemError

__all__ = ["MODEL_KINDS", "ModelSpec", "parse_model_spec"]

#: Model kinds of :func:`parse_model_spec`.
MODEL_KINDS = ("mlp", "transformer")

_SPEC_RE = re.compile(r"(mlp|transformer):(\d+)x(\d+)")


@attrs.frozen(kw_only=True)
class ModelSpec:
    """A model named by a spec string (``mlp:8x64``, ``transformer:4x32``)."""

    kind: str
    layers: int
    width: int

    def __str__(self) -> str:
        return f"{self.kind}:{self.layers}x{self.width}"


def parse_model_spec(spec: str) -> ModelSpec:
    """Read ``kind:LAYERSxWIDTH`` (kinds: ``mlp``, ``transformer``)."""
    m = _SPEC_RE.fullmatch(spec.strip()) if isinstance(spec, str) else None
    if m is None:
        raise InvalidProblemError(
            f"model spec: must be KIND:LAYERSxWIDTH with KIND in {MODEL_KINDS} (e.g. 'mlp:8x64'), got {spec!r}"
        )
    kind, layers, width = m.group(1), int(m.group(2)), int(m.group(3))
    if layers < 1:
        raise InvalidProblemError(f"model spec {spec!r}: 'layers' must be >= 1, got {layers}")
    if width < 1:
        raise InvalidProblemError(f"model spec {spec!r}: 'width' must be >= 1, got {width}")
    return ModelSpec(kind=kind, layers=layers, width=width)
