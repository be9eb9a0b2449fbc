"""The job-shop benchmark's whole-process comparison (:mod:`benchmarks.bench_jobshop`): its children read the
same instance and agree on the answer; the PyJobShop side is skipped with a reason when no interpreter has it.
Only what the children answer is checked, never their times."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from benchmarks.bench_jobshop import fjsplib_text, pyjobshop_python, whole_processes
from schedsearch.loaders import flexible_jobshop_problem

#: two jobs on two machines; job 0: a (m0, 3) then b (m1, 2); job 1: c (m1, 4 or m0, 5) then d (m0 or m1, 1).
#: With c on m1 over [0, 4), b (after a, which ends at 3) runs over [4, 6) and d over [4, 5) on m0: 6. With c on
#: m0, c and a share m0 and c ends no earlier than 8. The optimum is 6.
JOBS = [[[(0, 3)], [(1, 2)]], [[(1, 4), (0, 5)], [(0, 1), (1, 1)]]]
OPTIMUM = 6


def test_the_fjsplib_text_lists_every_alternative_with_machines_from_one():
    problem = flexible_jobshop_problem(JOBS, 2).problem
    assert fjsplib_text(problem).split("\n") == ["2 2 1", "2 1 1 3 1 2 2", "2 2 2 4 1 5 2 1 1 2 1", ""]


def test_each_side_answers_the_same_optimum(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("2 2\n2 1 0 3 1 1 2\n2 2 1 4 0 5 2 0 1 1 1\n")  # JOBS in the flexible format, machines from 0
    rows = whole_processes({"tiny": SimpleNamespace(path=path)}, ["tiny"], reps=1, workers=1, limit=30,
                           pyjobshop=None)
    assert [r["instance"] for r in rows] == ["(import)", "tiny"]
    tiny = rows[1]
    assert (tiny["ours_status"], tiny["ours_makespan"]) == ("OPTIMAL", OPTIMUM)
    assert (tiny["plain_status"], tiny["plain_makespan"]) == ("OPTIMAL", OPTIMUM)
    assert tiny["agree"] and "pyjobshop_s" not in tiny


def test_the_pyjobshop_side_is_skipped_with_its_reason(monkeypatch):
    monkeypatch.delenv("PYJOBSHOP_PYTHON", raising=False)
    python, note = pyjobshop_python(None)
    assert python is None and "--pyjobshop" in note
    python, note = pyjobshop_python(sys.executable + "-no-such-interpreter")
    assert python is None and note
