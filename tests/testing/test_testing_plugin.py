"""The pytest plugin: idempotent profiles, HYPOTHESIS_PROFILE, fixtures, life without hypothesis."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import settings

from schedsearch.testing import plugin

ROOT = Path(__file__).resolve().parents[2]

#: Makes ``import hypothesis`` fail, as if it were not installed.
NO_HYPOTHESIS = textwrap.dedent(
    """
    import sys

    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name == "hypothesis" or name.startswith("hypothesis."):
                raise ImportError("hypothesis is not installed (simulated)")
            return None

    sys.meta_path.insert(0, _Block())
    """
)


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None, prelude: str = "") -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.pop("HYPOTHESIS_PROFILE", None)
    full_env.update(env or {})
    if prelude:
        (cwd / "sitecustomize.py").write_text(prelude)
        full_env["PYTHONPATH"] = os.pathsep.join([str(cwd), full_env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=120)


def test_profiles_are_registered_once_and_match_the_suite():
    assert plugin.register_profiles() == ()  # already done at start-up (plugin and conftest agree)
    ci = settings.get_profile("ci")
    if plugin.profile_from_environment("ci") == "ci":  # this suite selected ci: ours replaced hypothesis's
        assert ci.max_examples == 60 and ci.derandomize and ci.deadline is None
    else:  # another profile selected: hypothesis's own ci is left alone
        assert ci.max_examples == 100 and ci.database is None
    assert settings.get_profile("thorough").max_examples == 500
    assert settings.get_profile("dev").max_examples == 50


def test_registration_never_overrides_an_existing_profile(monkeypatch):
    monkeypatch.setitem(plugin.PROFILES, "schedsearch-test-new", {"max_examples": 7, "suppress_health_check": ()})
    monkeypatch.setitem(plugin.PROFILES, "schedsearch-test-mine", {"max_examples": 8, "suppress_health_check": ()})
    settings.register_profile("schedsearch-test-mine", max_examples=3)  # the user's own
    assert plugin.register_profiles() == ("schedsearch-test-new",)
    assert plugin.register_profiles() == ()
    assert settings.get_profile("schedsearch-test-new").max_examples == 7
    assert settings.get_profile("schedsearch-test-mine").max_examples == 3
    assert plugin.load_profile("no-such-profile") is None


def test_users_select_a_profile_with_the_environment_and_get_the_fixtures(tmp_path):
    (tmp_path / "test_user.py").write_text(textwrap.dedent(
        """
        from hypothesis import given, settings

        from schedsearch.testing import pipeline_problems, schedules


        def test_profile_and_fixtures(schedsearch_checks, schedsearch_problems, schedsearch_oracle):
            assert settings().max_examples == 500  # HYPOTHESIS_PROFILE=thorough
            problem = schedsearch_problems["1f1b"]
            from schedsearch.testing import serial_schedule
            plan = schedsearch_checks.assert_valid(problem, serial_schedule(problem))
            small = schedsearch_problems["flexible"]
            assert schedsearch_oracle(small) is schedsearch_oracle(small)  # cached
            schedsearch_checks.assert_optimal(small, schedsearch_oracle(small).schedule)
            for name, p in schedsearch_problems.items():
                assert schedsearch_checks.assert_valid(p, serial_schedule(p)), name
        """
    ))
    done = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"], tmp_path,
               env={"HYPOTHESIS_PROFILE": "thorough"})
    assert done.returncode == 0, done.stdout + done.stderr
    header = run(["-m", "pytest", "-p", "no:cacheprovider", "--co", "test_user.py"], tmp_path,
                 env={"HYPOTHESIS_PROFILE": "thorough"})
    assert "schedsearch.testing: hypothesis profile 'thorough'" in header.stdout
    # without the variable, hypothesis's settings are left alone, its own ci profile included
    (tmp_path / "test_default.py").write_text(textwrap.dedent(
        """
        from hypothesis import settings

        def test_default():
            assert settings().max_examples == 100
            assert settings.get_profile("ci").max_examples == 100  # hypothesis's built-in ci
            from schedsearch.testing.plugin import register_profiles
            assert set(register_profiles()) == {"dev", "thorough"}  # on request
            assert settings.get_profile("thorough").max_examples == 500
            assert settings.get_profile("ci").max_examples == 100  # still hypothesis's
        """
    ))
    done = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_default.py"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # hypothesis's own option may name these profiles too
    (tmp_path / "test_option.py").write_text(
        "from hypothesis import settings\n\ndef test_option():\n    assert settings().max_examples == 50\n")
    done = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-profile", "dev", "test_option.py"],
               tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # selecting ci asks for this project's
    (tmp_path / "test_ci.py").write_text(
        "from hypothesis import settings\n\ndef test_ci():\n    assert settings().max_examples == 60\n")
    done = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_ci.py"], tmp_path, env={"HYPOTHESIS_PROFILE": "ci"})
    assert done.returncode == 0, done.stdout + done.stderr


def test_without_hypothesis_the_plugin_and_the_checks_still_work(tmp_path):
    script = textwrap.dedent(
        """
        import schedsearch.testing as testing
        from schedsearch.errors import MissingDependencyError
        from schedsearch.testing import plugin

        assert plugin.register_profiles() == () and plugin.load_profile("ci") is None
        try:
            testing.problems
        except MissingDependencyError as exc:
            assert "pip install -e '.[testing]'" in str(exc)
        else:
            raise AssertionError("problems imported without hypothesis")
        print("ok")
        """
    )
    done = run(["-c", script], tmp_path, prelude=NO_HYPOTHESIS)
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr
    (tmp_path / "test_plain.py").write_text(textwrap.dedent(
        """
        def test_checks(schedsearch_checks, schedsearch_problems):
            from schedsearch.testing import serial_schedule
            p = schedsearch_problems["zero_bubble"]
            schedsearch_checks.assert_valid(p, serial_schedule(p))
        """
    ))
    done = run(["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "test_plain.py"], tmp_path,
               env={"HYPOTHESIS_PROFILE": "thorough"}, prelude=NO_HYPOTHESIS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hypothesis not installed" in done.stdout


def test_a_pytest_run_without_the_profiles_does_not_import_hypothesis(tmp_path):
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\ndef test_plain(schedsearch_checks):\n    assert 'hypothesis' not in sys.modules\n")
    done = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_importing_the_package_needs_neither_hypothesis_nor_a_solver(tmp_path):
    script = ("import sys, schedsearch.testing as t; t.assert_valid; t.serial_schedule; t.exact_optimum;"
              "bad = [m for m in sys.modules if m.split('.')[0] in ('hypothesis', 'ortools', 'z3')];"
              "print(bad); assert not bad")
    done = run(["-c", script], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
