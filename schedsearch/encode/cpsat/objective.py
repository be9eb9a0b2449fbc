"""CP-SAT objective (family 9) and ties (family 10).

``"makespan"``: the makespan is at least every end; minimise it.
``"max_span"``: per device ``d``, ``first(d) <= start`` and ``last(d) >=
end`` of every task that runs on ``d`` (enforced by the literal of an
option occupying ``d``), ``span(d) = last(d) - first(d)``, and the
objective ``>= span(d)`` for every device; minimise it. A device no task
runs on has no constraint, so its span can be 0.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from schedsearch.encode.cpsat.variables import Variables, or_literal
from schedsearch.encode.structure import TaskStructure, resolve_ties


def add_objective(model: cp_model.CpModel, st: TaskStructure, var: Variables, objective: str, horizon: int) -> None:
    for t in st.tasks:
        model.add(var.makespan >= var.tasks[t.index].end)
    if objective == "max_span":
        spans = []
        for d in st.problem.cluster.device_names:
            tasks = st.tasks_on(d)
            if not tasks:
                continue
            first = model.new_int_var(0, horizon, f"first_any[{d}]")
            last = model.new_int_var(0, horizon, f"last_any[{d}]")
            span = model.new_int_var(0, horizon, f"span[{d}]")
            on_lits = {}
            for t in tasks:
                tv = var.tasks[t]
                lit = or_literal(model, var.true, [tv.present[i] for i in st.option_on(t, d)], f"on[{t}/{d}]")
                on_lits[t] = lit
                model.add(first <= tv.start).only_enforce_if(lit)
                model.add(last >= tv.end).only_enforce_if(lit)
            model.add(span == last - first)
            var.spans[d] = (first, last, span, on_lits)
            spans.append(span)
        var.objective = model.new_int_var(0, horizon, "max_span")
        model.add_max_equality(var.objective, spans or [0])
    else:
        var.objective = var.makespan
    if objective in ("makespan", "max_span"):
        model.minimize(var.objective)


def add_ties(model: cp_model.CpModel, st: TaskStructure, var: Variables, ties: tuple) -> None:
    """Family 10: ``start(b) = start(a) + offset`` for each tie."""
    for a, b, offset in resolve_ties(st, ties):
        model.add(var.tasks[b].start == var.tasks[a].start + offset)
