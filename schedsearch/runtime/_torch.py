"""Lazy access to PyTorch: the runtime's only door to ``torch``.

``schedsearch`` installs without torch; the runtime needs the optional extra
``schedsearch[torch]`` (torch 2.13 to 2.15, the CPU build suffices). Every
function that needs torch calls :func:`require_torch` first, so importing
:mod:`schedsearch.runtime` never imports torch.

The runtime drives PyTorch's pipeline runtime through internals that are
not public API; this module is the only place that names them:
:func:`pipelining_internals` (``_PipelineScheduleRuntime``,
``_validate_schedule``, ``_add_send_recv``, ``_Action``, ``_ComputationType``, the stage-backward
helpers) checks that they are there and names the supported versions when
they are not; :func:`load_compute_csv` (``_load_csv``, no public loader in
any supported version), :func:`step_microbatches` (the public
``step(arg_mbs=..., target_mbs=...)`` where torch has it, 2.14 on;
``_step_microbatches`` on 2.13) and :func:`infer_stage_shapes`
(``_initialize_stages``) wrap the calls; :func:`instrument_stages` and
:func:`recording` time every action of the runtime's dispatch loop (through
the ``record_function`` label it opens around each action) and every
stage's forward and backward calls.
"""

from __future__ import annotations

import importlib
import inspect
import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import ModuleType, SimpleNamespace
from typing import Any

from schedsearch.actions import Action
from schedsearch.errors import ExecutionError, MissingDependencyError

__all__ = ["SUPPORTED_TORCH", "TESTED_TORCH_VERSION", "ActionRecorder", "emulated_seconds", "infer_stage_shapes",
           "instrument_stages", "load_compute_csv", "pipelining_internals", "recording", "require_torch",
           "step_microbatches", "torch_available"]

#: The torch version the runtime is built and tested against.
TESTED_TORCH_VERSION = "2.13.0"
#: The torch releases the extra allows (``torch>=2.13,<2.16``).
SUPPORTED_TORCH = ("2.13", "2.14", "2.15")

_EXTRA_HINT = (
    "install the optional extra: pip install 'schedsearch[torch]' (torch 2.13 to 2.15; "
    "the CPU build is enough)"
)


def torch_available() -> bool:
    """True when ``import torch`` works (without raising)."""
    try:
        require_torch()
    except MissingDependencyError:
        return False
    return True


def require_torch(feature: str = "the PyTorch runtime") -> ModuleType:
    """Import and return ``torch``, or raise :class:`MissingDependencyError`
    naming the extra ``schedsearch[torch]``."""
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        raise MissingDependencyError(f"{feature} needs PyTorch, which is not installed ({exc}); {_EXTRA_HINT}") from None


def pipelining_internals() -> SimpleNamespace:
    """The pieces of ``torch.distributed.pipelining`` the runtime uses."""
    torch = require_torch()
    try:
        from torch.distributed.pipelining import PipelineStage
        from torch.distributed.pipelining._backward import stage_backward, stage_backward_input, stage_backward_weight
        from torch.distributed.pipelining.schedules import (
            _Action,
            _ComputationType,
            _add_reduce_grad,
            _add_send_recv,
            _add_unshard_reshard,
            _PipelineScheduleRuntime,
            _validate_schedule,
        )
    except ImportError as exc:  # pragma: no cover - depends on the installed torch
        raise MissingDependencyError(
            f"torch {torch.__version__} lacks a pipelining internal the runtime uses ({exc}); the runtime supports "
            f"torch {', '.join(SUPPORTED_TORCH)}: {_EXTRA_HINT}"
        ) from None
    return SimpleNamespace(
        torch=torch,
        PipelineStage=PipelineStage,
        Action=_Action,
        ComputationType=_ComputationType,
        add_reduce_grad=_add_reduce_grad,
        add_send_recv=_add_send_recv,
        add_unshard_reshard=_add_unshard_reshard,
        ScheduleRuntime=_PipelineScheduleRuntime,
        validate_schedule=_validate_schedule,
        stage_backward=stage_backward,
        stage_backward_input=stage_backward_input,
        stage_backward_weight=stage_backward_weight,
    )


def load_compute_csv(schedule: Any, path: str) -> None:
    """Load a compute-only CSV into a ``_PipelineScheduleRuntime`` (torch's private ``_load_csv``; no public loader)."""
    schedule._load_csv(str(path), format="compute_only")


def _public_pre_split_step(schedule: Any) -> bool:
    """True when ``schedule.step`` takes pre-split micro-batches (``arg_mbs``, ``target_mbs``: torch 2.14 on)."""
    try:
        params = inspect.signature(schedule.step).parameters
    except (TypeError, ValueError):  # pragma: no cover - a builtin without a signature
        return False
    return "arg_mbs" in params and "target_mbs" in params


def step_microbatches(schedule: Any, stages: Sequence[Any], arg_mbs: list, target_mbs: list, losses: list) -> None:
    """One step of ``schedule`` on micro-batches split by the caller (sizes may differ).

    torch 2.14 on: the public ``step(arg_mbs=..., kwarg_mbs=..., target_mbs=...)``.
    torch 2.13 has no public form: it resets the stages as its ``step`` does
    and calls ``_step_microbatches``.
    """
    kwarg_mbs = [{} for _ in arg_mbs]
    if _public_pre_split_step(schedule):
        schedule.step(arg_mbs=list(arg_mbs), kwarg_mbs=kwarg_mbs, target_mbs=list(target_mbs), losses=losses,
                      return_outputs=False)
        return
    for st in stages:
        st.has_backward = schedule._has_backward
        st.clear_runtime_states()
    schedule._step_microbatches(list(arg_mbs), kwarg_mbs, list(target_mbs), losses, return_outputs=False)


def infer_stage_shapes(schedule: Any, stages: Sequence[Any], args: tuple, target: Any) -> None:
    """Run torch's shape inference of the stages on one micro-batch now (private ``_initialize_stages``)."""
    for st in stages:
        st.has_backward = schedule._has_backward
    schedule._initialize_stages(args, {}, target)


# --------------------------------------------------------------------------
# Timing every action
# --------------------------------------------------------------------------


class ActionRecorder:
    """Collects, on one rank, the intervals of one step (``time.perf_counter`` seconds).

    ``actions``: ``(label, start, end)`` of every action the runtime's
    dispatch loop runs (``label`` is torch's action text, e.g. ``3F0``,
    ``2SEND_F1``, ``(0F1;3B0)OVERLAP_F_B``); ``computes``: ``(stage, kind,
    microbatch, start, end)`` of every stage call (``kind`` ``F``, ``B``
    (full backward), ``I`` or ``W``), nested inside its action.
    """

    def __init__(self) -> None:
        self.actions: list[tuple[str, float, float]] = []
        self.computes: list[tuple[int, str, int, float, float]] = []

    def clear(self) -> None:
        self.actions = []
        self.computes = []


#: the recorder of the step running in this process (set by :func:`recording`)
_ACTIVE: list[ActionRecorder | None] = [None]
_PREFIX = "PP:"


class _TimedLabel:
    """torch's ``record_function(name)`` that also times the block when a recorder is active."""

    def __init__(self, original: Any, name: str) -> None:
        self._inner = original(name)
        self._name = name
        self._start = 0.0

    def __enter__(self) -> Any:
        self._start = time.perf_counter()
        return self._inner.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        out = self._inner.__exit__(*exc)
        rec = _ACTIVE[0]
        if rec is not None and self._name.startswith(_PREFIX):
            rec.actions.append((self._name[len(_PREFIX):], self._start, time.perf_counter()))
        return out


def _install_action_timer() -> None:
    """Make the runtime's per-action ``record_function`` label time the action (once per process).

    torch's ``_PipelineScheduleRuntime._step_microbatches`` runs each action
    inside ``record_function(_get_profiler_function_name(action))``
    (``"PP:" + str(action)``); the module-level name is replaced by
    :class:`_TimedLabel`, which keeps the profiler label and adds the timing.
    """
    from torch.distributed.pipelining import schedules

    current = getattr(schedules, "record_function", None)
    if isinstance(current, type) and issubclass(current, _TimedLabel):
        return
    name_of = getattr(schedules, "_get_profiler_function_name", None)
    probe = None if name_of is None else _probe_label(name_of, schedules)
    if current is None or probe is None or not probe.startswith(_PREFIX):
        torch = require_torch()
        raise MissingDependencyError(
            f"torch {torch.__version__}: the pipeline runtime does not label its actions as the runtime's timing "
            f"expects (record_function(\"{_PREFIX}<action>\")); timing supports torch {', '.join(SUPPORTED_TORCH)}: "
            f"{_EXTRA_HINT}"
        )
    original = current

    class TimedLabel(_TimedLabel):
        def __init__(self, name: str) -> None:
            super().__init__(original, name)

    schedules.record_function = TimedLabel


def _probe_label(name_of: Callable[[Any], str], schedules: ModuleType) -> str | None:
    try:
        return name_of(schedules._Action(0, schedules._ComputationType.FORWARD, 0))
    except Exception:  # pragma: no cover - depends on the installed torch
        return None


def instrument_stages(
    stages: Sequence[Any],
    emulate: Mapping[Action, float] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rank: int | None = None,
) -> None:
    """Time every forward and backward call of ``stages`` (while :func:`recording`).

    Wraps each stage's ``forward_one_chunk``, ``backward_one_chunk`` and
    ``backward_weight_one_chunk`` on the instance. With ``emulate``
    (compute action -> seconds, kinds ``F``, ``B``, ``I``, ``W``), each call, after its real (small) computation, sleeps until it
    has lasted its planned time: the process waits without using a core;
    a call ``emulate`` has no time for raises :class:`ExecutionError`
    naming ``rank`` (this process's), the stage, kind and micro-batch,
    before it computes anything.
    """
    _install_action_timer()

    def timed(stage_index: int, kind_of: Callable[..., str], original: Callable[..., Any]) -> Callable[..., Any]:
        def call(chunk: int, *args: Any, **kwargs: Any) -> Any:
            kind = kind_of(*args, **kwargs)
            planned = None if emulate is None else emulated_seconds(emulate, rank, Action(stage_index, kind, chunk))
            start = time.perf_counter()
            out = original(chunk, *args, **kwargs)
            if planned is not None:
                left = start + planned - time.perf_counter()
                if left > 0:
                    sleep(left)
            rec = _ACTIVE[0]
            if rec is not None:
                rec.computes.append((stage_index, kind, chunk, start, time.perf_counter()))
            return out

        return call

    def backward_kind(loss: Any = None, full_backward: bool = True, last_backward: bool = False) -> str:
        return "B" if full_backward else "I"

    for st in stages:
        s = int(st.stage_index)
        st.forward_one_chunk = timed(s, lambda *a, **k: "F", st.forward_one_chunk)
        st.backward_one_chunk = timed(s, backward_kind, st.backward_one_chunk)
        st.backward_weight_one_chunk = timed(s, lambda *a, **k: "W", st.backward_weight_one_chunk)


def emulated_seconds(emulate: Mapping[Action, float], rank: int | None, action: Action) -> float:
    """The planned seconds of stage call ``action`` in ``emulate``.

    Raises :class:`ExecutionError` naming the rank, stage, kind and
    micro-batch when the plan has no such call on this rank: the runtime
    ran an action the plan does not have, which an emulated run must not
    time as if it lasted nothing.
    """
    seconds = emulate.get(action)
    if seconds is None:
        where = "" if rank is None else f"rank {rank}: "
        raise ExecutionError(
            f"{where}stage {action.stage} {action.kind} of micro-batch {action.microbatch}: the plan has no such action on this rank, so "
            f"emulated compute has no planned time for it (planned here: {len(emulate)} actions)", rank=rank)
    return float(seconds)


@contextlib.contextmanager
def recording(recorder: ActionRecorder) -> Iterator[ActionRecorder]:
    """Record into ``recorder`` the actions and stage calls run inside the block."""
    _ACTIVE[0] = recorder
    try:
        yield recorder
    finally:
        _ACTIVE[0] = None
