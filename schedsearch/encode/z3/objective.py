"""Z3 objective (family 9): the makespan is at least every end; it is
minimised by bisection over ``makespan <= bound`` assumptions (Z3's
``Optimize`` is much slower on these models)."""

from __future__ import annotations

import z3

from schedsearch.encode.structure import Structure
from schedsearch.encode.z3.variables import Variables


def add_objective(solver: z3.Solver, st: Structure, var: Variables) -> None:
    solver.add(var.makespan >= 0)
    for t in st.tasks:
        solver.add(var.makespan >= var.tasks[t.index].end)
