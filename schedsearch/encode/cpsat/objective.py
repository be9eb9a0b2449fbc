"""CP-SAT objective (family 9): the makespan is the last end; minimise it."""

from __future__ import annotations

from ortools.sat.python import cp_model

from schedsearch.encode.cpsat.variables import Variables
from schedsearch.encode.structure import Structure


def add_objective(model: cp_model.CpModel, st: Structure, var: Variables, minimise: bool) -> None:
    for t in st.tasks:
        model.add(var.makespan >= var.tasks[t.index].end)
    if minimise:
        model.minimize(var.makespan)
