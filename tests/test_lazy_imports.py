"""What a fresh process loads: ``import schedsearch`` and reading a job shop load no solver, no search and no
planner; the first ``jobshop()`` call loads CP-SAT's encoder and nothing of the other faces; the names
loaded on first use resolve to the same objects as their modules' (machine-independent facts: module sets,
never timings)."""

from __future__ import annotations

import ast
import subprocess
import sys

#: third-party packages none of these entries needs
HEAVY = ("ortools", "z3", "torch", "networkx", "numpy", "pandas", "scipy", "matplotlib", "hypothesis")


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (which may print nothing)."""
    script = f"{code}\nimport sys\nprint(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    return set(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


def within(modules: set[str], *packages: str) -> set[str]:
    return {m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)}


TWO_JOBS = "jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem"
FLEXIBLE = "flexible_jobshop_problem([[[(0, 3), (1, 4)], [(1, 2)]], [[(1, 4), (0, 5)], [(0, 1)]]], 2).problem"


def test_importing_the_package_loads_no_solver_search_or_planner():
    loaded = loaded_after("import schedsearch")
    assert not heavy(loaded)
    assert not within(loaded, "schedsearch.plan", "schedsearch.search", "schedsearch.encode", "schedsearch.partition",
                      "schedsearch.handcrafted", "schedsearch.loaders", "schedsearch.bounds")


def test_reading_a_job_shop_loads_no_partitioner():
    loaded = loaded_after(f"from schedsearch.loaders import jobshop_problem\nproblem = {TWO_JOBS}")
    assert not heavy(loaded)
    assert not within(loaded, "schedsearch.partition", "schedsearch.loaders.opgraph", "schedsearch.plan")


def test_the_first_jobshop_call_loads_cp_sat_and_no_other_face():
    loaded = loaded_after("from schedsearch.loaders import jobshop_problem\nfrom schedsearch.search import jobshop\n"
                          f"assert jobshop({TWO_JOBS}, time_limit_s=10, workers=1).objective == 6")
    assert "ortools.sat.python.cp_model" in loaded
    assert {m.split(".")[0] for m in heavy(loaded)} <= {"ortools", "numpy", "pandas"}  # what cp_model imports
    assert not within(loaded, "ortools.math_opt", "ortools.linear_solver", "schedsearch.plan",
                      "schedsearch.handcrafted", "schedsearch.partition", "schedsearch.encode.z3")


def test_a_flexible_job_shop_loads_only_the_lp_solver_of_its_bound():
    # the assignment LP (HiGHS through MathOpt) bounds a flexible job shop; CBC's interface stays unloaded
    loaded = loaded_after("from schedsearch.loaders import flexible_jobshop_problem\n"
                          "from schedsearch.search import jobshop\n"
                          f"jobshop({FLEXIBLE}, time_limit_s=10, workers=1)")
    assert "ortools.math_opt.python.mathopt" in loaded
    assert not within(loaded, "ortools.linear_solver", "z3", "networkx", "schedsearch.handcrafted", "schedsearch.plan")


def test_the_names_loaded_on_first_use_are_their_modules_objects():
    done = subprocess.run([sys.executable, "-c", """
import schedsearch
assert "plan" in dir(schedsearch) and "Pipeline" in schedsearch.__all__
import schedsearch.plan.pipeline  # the subpackage, imported first, does not replace the entry point
from schedsearch.plan.pipeline import Pipeline
from schedsearch.plan.planner import plan, plan_sweep
from schedsearch.search.portfolio import solve
assert schedsearch.plan is plan and schedsearch.plan_sweep is plan_sweep and schedsearch.Pipeline is Pipeline
assert schedsearch.solve is solve
from schedsearch import plan as entry
assert entry is plan
import schedsearch.loaders as loaders
from schedsearch.loaders.opgraph import read_split
assert loaders.read_split is read_split and "read_split" in dir(loaders)
try:
    schedsearch.no_such_name
except AttributeError as exc:
    assert "no_such_name" in str(exc)
else:
    raise AssertionError("no AttributeError")
print("ok")
"""], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok"]
