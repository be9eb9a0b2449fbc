"""pytest plugin of schedsearch: hypothesis profiles and fixtures.

Installed with the package (entry point ``pytest11``: ``schedsearch``), so
every pytest run in an environment with schedsearch loads it; disable it
with ``-p no:schedsearch``.

Profiles
--------
The hypothesis settings profiles this project's own suite uses:

* ``ci``: 60 examples, no deadline, derandomized (reproducible runs), the
  ``too_slow`` and ``data_too_large`` health checks off;
* ``dev``: 50 examples, no deadline;
* ``thorough``: 500 examples, no deadline (nightly-sized).

Select one the way this project does: ``HYPOTHESIS_PROFILE=thorough
pytest``. The plugin loads the named profile at start-up; hypothesis's own
``--hypothesis-profile`` option takes precedence and may name these
profiles too. When neither is given, hypothesis's settings stay untouched.

Registration is idempotent and never fights your own: a profile you
register yourself (before or after the plugin) is kept. The profiles are
registered at start-up when ``HYPOTHESIS_PROFILE`` is set or hypothesis is
already imported (otherwise hypothesis is not even imported: call
:func:`register_profiles` or :func:`load_profile` yourself to use them).
Hypothesis ships a ``ci`` profile of its own (which it loads by itself on
CI machines); it is replaced by this one only when ``ci`` is *selected*
through ``HYPOTHESIS_PROFILE`` or :func:`load_profile`, so merely having
schedsearch installed changes nothing.

Fixtures
--------
* ``schedsearch_checks``: the checks of :mod:`schedsearch.testing.checks`
  as attributes (``schedsearch_checks.assert_valid(problem, plan)``);
* ``schedsearch_problems``: a dict of small named problems (a 1F1B pipeline
  with a memory cap, zero bubble, DualPipe with its overlapped groups, a
  flexible two-device problem with transfers on channels, Tessel's M) for
  quick checks without hypothesis;
* ``schedsearch_oracle``: :func:`~schedsearch.testing.oracle.exact_optimum`
  with a per-session cache.

Safe without hypothesis: the profiles are then skipped and the fixtures
still work (only the strategies need hypothesis).
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Any

import pytest

__all__ = ["PROFILES", "register_profiles", "load_profile", "profile_from_environment"]

#: The profiles' settings (keyword arguments of ``hypothesis.settings``); the
#: health checks to suppress are named, resolved when hypothesis is present.
PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"max_examples": 60, "deadline": None, "derandomize": True,
           "suppress_health_check": ("too_slow", "data_too_large")},
    "dev": {"max_examples": 50, "deadline": None, "suppress_health_check": ("too_slow",)},
    "thorough": {"max_examples": 500, "deadline": None, "suppress_health_check": ("too_slow",)},
}

#: Environment variable naming the profile to load.
ENVIRONMENT_VARIABLE = "HYPOTHESIS_PROFILE"

_loaded: dict[str, str | None] = {"profile": None}  # the last profile loaded here
_ours: dict[str, Any] = {}  # name -> the settings object registered here
_builtin: dict[str, Any] = {}  # name -> hypothesis's own profile of that name, as found on first use


def _hypothesis() -> Any:
    try:
        import hypothesis
    except ImportError:
        return None
    return hypothesis


def _registered(hypothesis: Any, name: str) -> bool:
    try:
        hypothesis.settings.get_profile(name)
    except Exception:  # hypothesis raises InvalidArgument for an unknown name
        return False
    return True


def _note_builtins(hypothesis: Any) -> None:
    """Remember hypothesis's own profiles (its ``ci``) before anything here replaces them."""
    for name in PROFILES:
        if name not in _builtin and name not in _ours and _registered(hypothesis, name):
            _builtin[name] = hypothesis.settings.get_profile(name)


def register_profiles(
    overwrite: bool = False, replace_builtin: bool = False, names: Any = None
) -> tuple[str, ...]:
    """Register :data:`PROFILES` (or those of ``names``); returns the names registered now.

    Idempotent: a name registered by an earlier call is skipped, and so is
    one registered by you (unless ``overwrite``) or by hypothesis itself
    (its built-in ``ci``, unless ``replace_builtin``). Returns ``()``
    without hypothesis.
    """
    hypothesis = _hypothesis()
    if hypothesis is None:
        return ()
    _note_builtins(hypothesis)
    done = []
    for name, options in PROFILES.items():
        if names is not None and name not in names:
            continue
        if _registered(hypothesis, name):
            current = hypothesis.settings.get_profile(name)
            if current is _ours.get(name):
                continue
            if current is _builtin.get(name):
                if not (replace_builtin or overwrite):
                    continue
            elif not overwrite:
                continue
        kwargs = dict(options)
        kwargs["suppress_health_check"] = [getattr(hypothesis.HealthCheck, h) for h in options["suppress_health_check"]]
        hypothesis.settings.register_profile(name, **kwargs)
        _ours[name] = hypothesis.settings.get_profile(name)
        done.append(name)
    return tuple(done)


def profile_from_environment(default: str | None = None) -> str | None:
    """The profile named by ``HYPOTHESIS_PROFILE`` (or ``default``)."""
    return os.environ.get(ENVIRONMENT_VARIABLE) or default


def load_profile(name: str | None = None, default: str | None = None) -> str | None:
    """Register the profiles and load ``name`` (default: ``HYPOTHESIS_PROFILE``,
    else ``default``); returns the profile loaded, or None (no name, a name
    hypothesis does not know, or no hypothesis). Selecting ``ci`` this way
    replaces hypothesis's built-in ``ci`` by this project's (a ``ci`` you
    registered yourself is kept)."""
    hypothesis = _hypothesis()
    if hypothesis is None:
        return None
    name = name or profile_from_environment(default)
    register_profiles()
    if name in PROFILES:
        register_profiles(replace_builtin=True, names=[name])  # selected: ours, not hypothesis's own ci
    if not name or not _registered(hypothesis, name):
        return None
    hypothesis.settings.load_profile(name)
    _loaded["profile"] = name
    return name


# --------------------------------------------------------------------------
# pytest hooks
# --------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)  # before hypothesis's own plugin loads --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    explicit = config.getoption("hypothesis_profile", default=None)
    if explicit:  # hypothesis's plugin loads it next: make this project's profiles known
        register_profiles()
        if explicit in PROFILES:
            register_profiles(replace_builtin=True, names=[explicit])
        _loaded["profile"] = explicit
        return
    # otherwise hypothesis is imported only when a profile is asked for (or it
    # is already loaded): a pytest run that does not use the profiles pays nothing
    if "hypothesis" in sys.modules:
        register_profiles()
    if profile_from_environment():
        load_profile()


def pytest_report_header(config: pytest.Config) -> str | None:
    if profile_from_environment() and _hypothesis() is None:
        return "schedsearch.testing: hypothesis not installed (strategies unavailable; checks and fixtures work)"
    name = _loaded["profile"]
    wanted = profile_from_environment()
    if name:
        return f"schedsearch.testing: hypothesis profile {name!r}"
    if wanted:
        return f"schedsearch.testing: {ENVIRONMENT_VARIABLE}={wanted!r} is not a profile registered at start-up"
    return None


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def schedsearch_checks() -> SimpleNamespace:
    """The checks of :mod:`schedsearch.testing.checks` as attributes."""
    from schedsearch.testing import checks

    return SimpleNamespace(**{name: getattr(checks, name) for name in checks.__all__})


@pytest.fixture(scope="session")
def schedsearch_problems() -> dict[str, Any]:
    """Small named problems covering the main features (see the module notes)."""
    from schedsearch.placements import dualpipe, tessel_m, vshape, zero_bubble
    from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem

    flexible = Problem(
        graph=Graph(
            blocks=[
                Block(name="a", options=[Option(devices=("d0",), duration=2), Option(devices=("d1",), duration=3)],
                      memory=1),
                Block(name="b", options=[Option(devices=("d1",), duration=1)], memory=-1, workspace=1),
            ],
            edges=[Edge(src="a", dst="b", size=2)],
        ),
        num_microbatches=2,
        cluster=Cluster(devices=[Device(name="d0", memory=2), Device(name="d1", memory=3)],
                        channels=[Channel(name="link", endpoints=("d0", "d1"), latency=1)]),
        name="flexible-transfers",
    )
    return {
        "1f1b": vshape(2, 3, memory=2),
        "zero_bubble": zero_bubble(2, 2),
        "dualpipe": dualpipe(2, 2),
        "flexible": flexible,
        "tessel_m": tessel_m(2, 2),
    }


@pytest.fixture(scope="session")
def schedsearch_oracle() -> Any:
    """``exact_optimum`` with a per-session cache keyed by the problem (and options)."""
    from schedsearch.testing.oracle import exact_optimum

    cache: dict[Any, Any] = {}

    def oracle(problem: Any, **options: Any) -> Any:
        key = (problem.to_json(indent=None), tuple(sorted(options.items())))
        if key not in cache:
            cache[key] = exact_optimum(problem, **options)
        return cache[key]

    return oracle
