"""The registry of solver backends by name, below every layer that names one.

The options (:mod:`schedsearch.options`) check a backend's name against it,
the encoders (:mod:`schedsearch.encode.backends`) load the backend it names;
this module imports no solver and nothing of the package but its errors,
so both sides read it downward. A backend is imported only when
:func:`load_registered` loads it, so a missing solver package only matters
when that backend is used.

Examples
--------
>>> from schedsearch.registry import BACKENDS, available_backends
>>> available_backends()
('cpsat', 'z3')
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from schedsearch.errors import UnsupportedFeatureError

__all__ = ["BACKENDS", "available_backends", "load_registered"]

#: name -> "module:attribute" of the backend class, imported lazily.
BACKENDS: dict[str, str] = {
    "cpsat": "schedsearch.encode.cpsat.model:CpSatBackend",
    "z3": "schedsearch.encode.z3.model:Z3Backend",
}


def available_backends() -> tuple[str, ...]:
    """The names of the registered backends (what ``get_backend`` and the ``backend`` option accept)."""
    return tuple(BACKENDS)


def load_registered(name: str, registry: Mapping[str, str]) -> Any:
    """The object ``registry[name]`` names (``"module:attribute"``), imported now.

    The one lazy loader of the backends and of the repetend encoders
    (:data:`schedsearch.encode.repetend.REPETEND_BACKENDS`): a missing solver
    package raises :class:`~schedsearch.errors.UnsupportedFeatureError`
    naming the other entries of ``registry``.
    """
    module, attr = registry[name].split(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise UnsupportedFeatureError(
            f"backend {name!r} needs a solver package that is not installed ({exc}); "
            f"try one of {sorted(set(registry) - {name})}"
        ) from exc
