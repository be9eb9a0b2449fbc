"""The bounds' own flow routines against networkx (another implementation, used here as the oracle only)."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from schedsearch.bounds._flows import least_cost_transport, max_flow_value
from schedsearch.errors import SolverError


@st.composite
def cut_graphs(draw):
    n = draw(st.integers(1, 7))
    arcs = []
    for _ in range(draw(st.integers(0, 16))):
        a, b = draw(st.integers(-1, n - 1)), draw(st.integers(0, n))
        tail = "s" if a < 0 else a
        head = "t" if b == n else b
        if tail == head:
            continue
        unbounded = draw(st.booleans()) and tail != "s" and head != "t"
        arcs.append((tail, head, None if unbounded else draw(st.integers(0, 9))))
    return arcs


@given(cut_graphs())
@settings(max_examples=300, deadline=None)
def test_max_flow_is_networkx_minimum_cut(arcs):
    g = nx.DiGraph()
    g.add_nodes_from(["s", "t"])
    for a, b, cap in arcs:  # parallel arcs: one arc with the sum of their capacities
        if g.has_edge(a, b):
            old = g[a][b].get("capacity")
            if old is None or cap is None:
                g[a][b].pop("capacity", None)
            else:
                g[a][b]["capacity"] = old + cap
        elif cap is None:
            g.add_edge(a, b)
        else:
            g.add_edge(a, b, capacity=cap)
    try:
        want = nx.maximum_flow_value(g, "s", "t")
    except nx.NetworkXUnbounded:
        want = None
    if want is None:
        try:
            max_flow_value(arcs, "s", "t")
        except SolverError:
            return
        raise AssertionError("an unbounded flow was given a value")
    assert max_flow_value(arcs, "s", "t") == want


@st.composite
def transports(draw):
    supply = {f"a{i}": draw(st.integers(0, 6)) for i in range(draw(st.integers(1, 4)))}
    demand = {f"f{i}": draw(st.integers(1, 6)) for i in range(draw(st.integers(1, 4)))}
    arcs = [(a, f, draw(st.integers(-20, 5))) for a in supply for f in demand if draw(st.booleans())]
    return supply, demand, arcs


@given(transports())
@settings(max_examples=300, deadline=None)
def test_transport_is_networkx_min_cost_flow(case):
    supply, demand, arcs = case
    g = nx.DiGraph()
    need = sum(demand.values())
    g.add_node("s", demand=-need)
    g.add_node("t", demand=need)
    for a, amount in supply.items():
        g.add_edge("s", ("a", a), capacity=amount, weight=0)
    for a, f, cost in arcs:
        g.add_edge(("a", a), ("f", f), weight=cost)
    for f, amount in demand.items():
        g.add_edge(("f", f), "t", capacity=amount, weight=0)
    try:
        want = nx.min_cost_flow_cost(g)
    except nx.NetworkXUnfeasible:
        want = None
    assert least_cost_transport(supply, demand, arcs) == want
