"""The error hierarchy is the only source of the package's errors.

An AST scan of the package source finds every ``raise`` of a builtin
exception class; only the builtins :mod:`schedsearch.errors` documents as
raised directly (each where a protocol asks for it) may appear. The rest
checks that the errors which replaced bare builtins are still caught by
``except ValueError`` callers and carry the entity, field and value.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

import schedsearch.errors as errors
from schedsearch.errors import (
    FormatError,
    InvalidOptionsError,
    InvalidPipelineError,
    InvalidProblemError,
    SchedSearchError,
)

PACKAGE = Path(__file__).resolve().parents[1] / "schedsearch"

BUILTIN_ERRORS = {name for name in dir(builtins)
                  if isinstance(getattr(builtins, name), type) and issubclass(getattr(builtins, name), BaseException)}

#: The builtins the package may raise directly, and where (a predicate on the scan's context).
ALLOWED = {
    "KeyError": lambda ctx: True,  # look-ups by name, as a mapping does
    "AssertionError": lambda ctx: True,  # unreachable internal invariants
    "AttributeError": lambda ctx: ctx.function == "__getattr__",  # PEP 562 module attribute look-up
    "SystemExit": lambda ctx: ctx.path.parts[0] == "cli" or ctx.path.name == "__main__.py",
}


class _Context:
    def __init__(self, path: Path, function: str | None) -> None:
        self.path, self.function = path, function


def _builtin_raises(source: str, relative: Path) -> list[tuple[int, str, _Context]]:
    """Every ``raise X(...)`` / ``raise X`` of a builtin exception class in one file's source."""
    found: list[tuple[int, str, _Context]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id in BUILTIN_ERRORS:
                found.append((node.lineno, target.id, _Context(relative, function)))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(source, filename=str(relative)), None)
    return found


def _offenders(source: str, relative: Path) -> list[str]:
    out = []
    for line, name, ctx in _builtin_raises(source, relative):
        allowed = ALLOWED.get(name)
        if allowed is None or not allowed(ctx):
            out.append(f"{ctx.path}:{line}: raise {name}")
    return out


def test_the_scan_sees_what_it_forbids() -> None:
    source = ("def f(x):\n    if x:\n        raise ValueError('x')\n    raise TypeError\n\n"
              "def g():\n    raise RuntimeError('y') from None\n\n"
              "def __getattr__(name):\n    raise AttributeError(name)\n\n"
              "def h():\n    raise AttributeError('h')\n\n"
              "def k():\n    raise SystemExit(2)\n")
    assert _offenders(source, Path("search/sample.py")) == [
        "search/sample.py:3: raise ValueError", "search/sample.py:4: raise TypeError",
        "search/sample.py:7: raise RuntimeError", "search/sample.py:13: raise AttributeError",
        "search/sample.py:16: raise SystemExit"]
    assert _offenders(source, Path("cli/sample.py"))[-1] == "cli/sample.py:13: raise AttributeError"


def test_no_bare_builtin_error_in_the_package() -> None:
    offenders = [line for path in sorted(PACKAGE.rglob("*.py"))
                 for line in _offenders(path.read_text(), path.relative_to(PACKAGE))]
    assert not offenders, "raise a class of schedsearch.errors instead:\n" + "\n".join(offenders)


def test_the_allowed_builtins_are_the_documented_ones() -> None:
    for name in ALLOWED:
        assert f"``{name}``" in errors.__doc__, name


def test_every_hierarchy_error_subclasses_a_builtin_and_the_base() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        if issubclass(cls, Warning):
            continue
        assert issubclass(cls, SchedSearchError), name
        assert any(base.__module__ == "builtins" and base is not Exception for base in cls.__mro__[1:]), name


# --------------------------------------------------------------------------
# The replaced bare raises: right class, still a ValueError, message names field and value
# --------------------------------------------------------------------------


def _cases():
    from schedsearch.export.ascii import render_ascii
    from schedsearch.handcrafted import gpipe
    from schedsearch.loaders.jobshop import read_instance
    from schedsearch.placements import vshape
    from schedsearch.schedule import bubble, objective_value
    from schedsearch.search.list_scheduling import PipelineRule, heft, list_plan
    from schedsearch.testing.oracle import exact_optimum
    from schedsearch.units import choose_units

    problem = vshape(2, 2)
    plan = gpipe(problem)
    return [
        (lambda: render_ascii(problem, plan, labels="nope"), InvalidOptionsError, "'labels'.*'nope'"),
        (lambda: bubble(plan, "nope"), InvalidOptionsError, "'definition'.*'nope'"),
        (lambda: objective_value(plan, "nope"), InvalidOptionsError, "'objective'.*'nope'"),
        (lambda: PipelineRule(kind_order="FF"), InvalidOptionsError, "'kind_order'.*'FF'"),
        (lambda: list_plan(problem, deadline=1.0), InvalidOptionsError, "'deadline'.*1.0"),
        (lambda: heft(problem, rules=()), InvalidOptionsError, r"'rules'.*\(\)"),
        (lambda: read_instance("x.txt", format="nope"), InvalidOptionsError, "'format'.*'nope'"),
        (lambda: exact_optimum("not a problem"), InvalidProblemError, "'problem'.*str"),
        (lambda: exact_optimum(problem, objective="nope"), InvalidOptionsError, "'objective'.*'nope'"),
        (lambda: choose_units({"F0": 0.0}, [2**30]), InvalidPipelineError, "'times_ms'.*'F0'"),
    ]


@pytest.mark.parametrize("index", range(10))
def test_replaced_raises_are_hierarchy_value_errors(index: int) -> None:
    call, cls, message = _cases()[index]
    with pytest.raises(cls, match=message) as info:
        call()
    assert isinstance(info.value, ValueError) and isinstance(info.value, SchedSearchError)


def test_pipeline_toml_of_an_unwritable_value_is_a_format_error() -> None:
    from schedsearch.plan.pipeline import _toml_value

    with pytest.raises(FormatError, match="cannot write value .* of type object"):
        _toml_value(object())
