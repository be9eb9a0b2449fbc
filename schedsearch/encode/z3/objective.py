"""Z3 objective (family 9) and ties (family 10).

The objective is minimised by bisection over ``objective <= bound``
assumptions (Z3's ``Optimize`` is much slower on these models).
``"makespan"``: the makespan is at least every end. ``"max_span"``: per
device ``d``, ``first(d) <= start`` and ``last(d) >= end`` of every task
running on ``d``, and the objective is at least ``last(d) - first(d)``
for every device (the least such values are the real spans, so the bound
``objective <= b`` holds exactly when some schedule's longest span is at
most ``b``).
"""

from __future__ import annotations

import z3

from schedsearch.encode.structure import TaskStructure, resolve_ties
from schedsearch.encode.z3.variables import Variables, on_device


def add_objective(solver: z3.Solver, st: TaskStructure, var: Variables, objective: str) -> None:
    solver.add(var.makespan >= 0)
    for t in st.tasks:
        solver.add(var.makespan >= var.tasks[t.index].end)
    if objective != "max_span":
        var.objective = var.makespan
        return
    var.objective = z3.Int("max_span")
    solver.add(var.objective >= 0)
    for d in st.problem.cluster.device_names:
        tasks = st.tasks_on(d)
        if not tasks:
            continue
        first, last = z3.Int(f"first_any[{d}]"), z3.Int(f"last_any[{d}]")
        solver.add(first >= 0)
        for t in tasks:
            on = on_device(st, var, t, d)
            tv = var.tasks[t]
            solver.add(z3.Implies(on, z3.And(first <= tv.start, last >= tv.end)))
        var.spans[d] = last - first
        solver.add(var.objective >= last - first)


def add_ties(solver: z3.Solver, st: TaskStructure, var: Variables, ties: tuple) -> None:
    """Family 10: ``start(b) = start(a) + offset`` for each tie."""
    for a, b, offset in resolve_ties(st, ties):
        solver.add(var.tasks[b].start == var.tasks[a].start + offset)
