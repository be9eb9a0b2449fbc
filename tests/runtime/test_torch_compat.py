"""The private torch APIs the runtime uses are where :mod:`schedsearch.runtime._torch` expects them.

One test per supported torch release (2.13, 2.14, 2.15): each checks, on the
installed torch when it is that release (skipped otherwise), that every
private name the wrapper calls exists with the arguments it passes, and that
the wrapper takes the public pre-split ``step`` where the release has it.
The runtime's gradient tests (``test_runtime_torch.py``) then run through
the same wrapper on the installed release.
"""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")

from schedsearch.runtime import _torch as compat  # noqa: E402

INSTALLED = ".".join(torch.__version__.split("+")[0].split(".")[:2])


def test_the_installed_release_is_supported():
    assert INSTALLED in compat.SUPPORTED_TORCH, torch.__version__


def _params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def _check_common() -> None:
    from torch.distributed.pipelining import schedules

    tp = compat.pipelining_internals()
    runtime = tp.ScheduleRuntime
    assert runtime is schedules._PipelineScheduleRuntime
    assert _params(runtime._load_csv)[:3] == ["self", "filename", "format"]
    assert len(_params(runtime._initialize_stages)) >= 4  # (self, args, kwargs, target), passed by position
    assert "self._has_backward =" in inspect.getsource(schedules._PipelineSchedule.__init__)
    assert hasattr(tp.PipelineStage, "clear_runtime_states")
    assert _params(tp.validate_schedule)[:4] == ["actions", "pp_group_size", "num_stages", "num_microbatches"]
    assert "stage_to_rank" in _params(tp.add_send_recv)
    assert tp.Action.from_str("0F1").stage_index == 0


@pytest.mark.skipif(INSTALLED != "2.13", reason=f"torch {torch.__version__} installed, not 2.13")
def test_torch_2_13():
    """2.13 has no public pre-split step: the wrapper uses ``_step_microbatches``."""
    _check_common()
    runtime = compat.pipelining_internals().ScheduleRuntime
    assert "arg_mbs" not in _params(runtime.step)
    assert _params(runtime._step_microbatches)[:6] == ["self", "arg_mbs", "kwarg_mbs", "target_mbs", "losses",
                                                       "return_outputs"]


@pytest.mark.skipif(INSTALLED != "2.14", reason=f"torch {torch.__version__} installed, not 2.14")
def test_torch_2_14():
    """2.14 takes pre-split micro-batches in the public ``step``: the wrapper uses it."""
    _check_common()
    runtime = compat.pipelining_internals().ScheduleRuntime
    assert {"arg_mbs", "kwarg_mbs", "target_mbs", "losses", "return_outputs"} <= set(_params(runtime.step))


@pytest.mark.skipif(INSTALLED != "2.15", reason=f"torch {torch.__version__} installed, not 2.15")
def test_torch_2_15():
    """2.15: as 2.14 (public pre-split ``step``)."""
    _check_common()
    runtime = compat.pipelining_internals().ScheduleRuntime
    assert {"arg_mbs", "kwarg_mbs", "target_mbs", "losses", "return_outputs"} <= set(_params(runtime.step))
