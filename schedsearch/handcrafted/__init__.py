"""Handcrafted pipeline schedules: the published ones, exactly.

Every generator takes a problem built by :mod:`schedsearch.placements`,
writes the published per-device order of actions and returns the
as-soon-as-possible schedule, checked by the independent validator.
:func:`reproduce` builds, generates and measures a named schedule beside
its published closed forms.

The package is solver-free: the per-device orders of actions
(:mod:`~schedsearch.handcrafted.actions`) and their as-soon-as-possible
simulation (:mod:`~schedsearch.handcrafted.simulate`) are what the PyTorch
CSV export and the runtime read and write. Searching against a handcrafted
schedule under the same memory is a search strategy:
:func:`schedsearch.search.compare.search_against`.
"""

from schedsearch.actions import Action as Action
from schedsearch.handcrafted.actions import (
    PipelineView as PipelineView,
    pipeline_view as pipeline_view,
    run_actions as run_actions,
)
from schedsearch.handcrafted.chimera import chimera as chimera
from schedsearch.handcrafted.classic import (
    gpipe as gpipe,
    interleaved_1f1b as interleaved_1f1b,
    megatron_order as megatron_order,
    one_f_one_b as one_f_one_b,
)
from schedsearch.handcrafted.dualpipe import dualpipe as dualpipe, dualpipev as dualpipev, eight_steps as eight_steps
from schedsearch.handcrafted.families import ALL_FAMILIES as ALL_FAMILIES, Family as Family, family as family
from schedsearch.handcrafted.registry import (
    SCHEDULES as SCHEDULES,
    Reproduction as Reproduction,
    reproduce as reproduce,
    schedule_names as schedule_names,
)
from schedsearch.handcrafted.simulate import (
    DeadlockError as DeadlockError,
    Group as Group,
    schedule_from_orders as schedule_from_orders,
)
from schedsearch.handcrafted.zero_bubble import (
    interleaved_zero_bubble as interleaved_zero_bubble,
    zb_h1 as zb_h1,
    zb_v as zb_v,
)

__all__ = [
    "Action",
    "PipelineView",
    "pipeline_view",
    "run_actions",
    "chimera",
    "gpipe",
    "interleaved_1f1b",
    "megatron_order",
    "one_f_one_b",
    "dualpipe",
    "dualpipev",
    "eight_steps",
    "SCHEDULES",
    "ALL_FAMILIES",
    "Family",
    "family",
    "Reproduction",
    "reproduce",
    "schedule_names",
    "DeadlockError",
    "Group",
    "schedule_from_orders",
    "interleaved_zero_bubble",
    "zb_h1",
    "zb_v",
]


def __getattr__(name: str) -> object:
    """``Act`` and ``Pair`` of earlier releases (deprecated: :class:`~schedsearch.actions.Action`)."""
    from schedsearch.handcrafted import actions as _actions

    if name in _actions._DEPRECATED:
        return _actions._DEPRECATED[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
