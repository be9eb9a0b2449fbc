"""The memory-forced idle before a device's first free and the memory-forced tail after its last
allocation (:func:`memory_idle`, :func:`memory_tails`), and the memory-area bound
(:func:`memory_area_bounds`), against optima proven without them."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from schedsearch import placements
from schedsearch.bounds import memory_area_bounds
from schedsearch.bounds.analytic import analytic_lower_bound, device_bounds, memory_idle, memory_tails
from schedsearch.encode import SolveOptions
from schedsearch.encode import solve as solve_model
from schedsearch.handcrafted.v_capped import v_capped
from schedsearch.result import Status
from schedsearch.validate import validate

#: a few drawn problems take CP-SAT long to prove without the bounds: past 5 s they are set aside (assume)
PLAIN = SolveOptions(time_limit_s=5, workers=1, seed=0, redundant=False, symmetry_breaking=False)


def test_unit_v_at_p_plus_one_is_bounded_by_6m_plus_3p_minus_4():
    # the middle device starts at p - 1, idles p - 1 more before its first W (p + 1 forwards and one I
    # fit in the 2p + 1 it waits), and after its last forward at most p + 1 W's and their I's remain
    # of the 3p that must follow it: 6m + (p - 1) + (p - 1) + (3p - (2p + 2))
    for p in range(3, 9):
        for m in (p, 2 * p, 4 * p):
            problem = placements.vshape_chunks(p, m, memory=p + 1)
            middle = f"d{p - 1}"
            assert memory_idle(problem)[middle] == p - 1
            assert memory_tails(problem)[middle] == 3 * p - (2 * p + 2)
            assert analytic_lower_bound(problem).value == 6 * m + 3 * p - 4


def test_the_capped_v_construction_meets_the_bound_on_five_devices():
    # p = 5, m = 20 at 6 chunk activations: the bound 131 is reached, so 131 is proven optimal
    problem = placements.vshape_chunks(5, 20, memory=6)
    schedule = v_capped(problem)
    assert not validate(problem, schedule)
    assert schedule.makespan == analytic_lower_bound(problem).value == 131


def test_without_a_capacity_nothing_is_forced():
    problem = placements.vshape_chunks(4, 8)
    assert set(memory_idle(problem).values()) == {0} and set(memory_tails(problem).values()) == {0}


def test_allocations_that_all_fit_force_no_tail():
    # 2 micro-batches x 2 chunks fit in 4: the last allocation may come before any free
    problem = placements.vshape_chunks(2, 2, memory=4)
    assert set(memory_tails(problem).values()) == {0}


@st.composite
def capped_v(draw):
    """V placements with uneven F / I / W (or fused B) per stage, 2-3 devices, 2-4 micro-batches,
    forward memory 1 or 2, frees at the start or the end, a cap from the least that fits one
    micro-batch to p + 3 chunk activations."""
    p = draw(st.integers(2, 3))
    m = draw(st.integers(2, 4))
    n = 2 * p

    def times():
        return [draw(st.integers(1, 3)) for _ in range(n)]

    fmem = draw(st.sampled_from([1, 2, [draw(st.integers(1, 2)) for _ in range(n)]]))
    top = max(fmem) if isinstance(fmem, list) else fmem
    memory = draw(st.integers(2 * top, (p + 3) * top))
    if draw(st.booleans()):
        return placements.vshape_chunks(p, m, forward=times(), input_grad=times(), weight_grad=times(),
                                        forward_memory=fmem, memory=memory, free_at_end=draw(st.booleans()))
    return placements.vshape_chunks(p, m, forward=times(), split_backward=False, backward=times(),
                                    forward_memory=fmem, memory=memory)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(capped_v())
def test_memory_bounds_never_exceed_an_optimum_proven_without_them(problem):
    # CP-SAT on the plain model, told no bound (none of the analytic bounds enters its proof)
    result = solve_model(problem, "cpsat", PLAIN)
    assume(result.status is Status.OPTIMAL)
    event("a forced tail" if any(
        v > 0 for v in memory_tails(problem).values()) else "no forced tail")
    assert max(device_bounds(problem).values()) <= result.objective
    assert analytic_lower_bound(problem).value <= result.objective


@st.composite
def capped_pipeline(draw):
    """1F1B (one stage per device) or interleaved (two) placements, 2-3 devices, 3-5 micro-batches, uneven
    stage times and forward memory, a fused or a split backward, a cap from the largest stage's
    activation to all of them."""
    p, v, m = draw(st.integers(2, 3)), draw(st.integers(1, 2)), draw(st.integers(3, 5))
    n = p * v

    def figures(low, high):
        return [draw(st.integers(low, high)) for _ in range(n)]

    forward, held = figures(1, 3), figures(1, 3)
    memory = draw(st.integers(max(held), sum(held)))
    if v == 1:
        return placements.vshape(p, m, memory=memory, forward=forward, backward=figures(1, 4))
    if draw(st.booleans()):
        return placements.interleaved(p, v, m, split_backward=True, memory=memory, forward=forward,
                                      forward_memory=held, input_grad=figures(1, 3), weight_grad=figures(1, 3))
    return placements.interleaved(p, v, m, memory=memory, forward=forward, forward_memory=held,
                                  backward=figures(1, 4))


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(capped_pipeline())
def test_the_memory_area_bound_never_exceeds_an_optimum_proven_without_it(problem):
    result = solve_model(problem, "cpsat", PLAIN)
    assume(result.status is Status.OPTIMAL)
    bounds = memory_area_bounds(problem)
    event("above the analytic bound" if max(bounds.values(), default=0) > analytic_lower_bound(problem).value
          else "not above the analytic bound")
    assert max(bounds.values(), default=0) <= result.objective


def test_the_memory_area_bound_sees_what_the_analytic_bound_does_not():
    # interleaved, 2 devices x 2 stages, 6 micro-batches, activations 3/2/3/2 in a cap of 6: device d0 holds
    # stage 0's 3 units from F0 to B0 (at least 3+1+2+2+4+4+3 = 19) and stage 2's from F2 to B2 (at least
    # 2+2+4 = 8), 6 x (3 x 19 + 3 x 8) = 486 unit-times in 6 units: 81, then its last backward (2)
    problem = placements.interleaved(2, 2, 6, memory=6, forward=[3, 1, 2, 2], forward_memory=[3, 2, 3, 2],
                                     backward=[2, 3, 4, 4])
    area = memory_area_bounds(problem)
    assert area["d0"] == 83
    assert area["d0"] > analytic_lower_bound(problem).value
    result = solve_model(problem, "cpsat", SolveOptions(time_limit_s=60, workers=1, seed=0))
    assert result.status is Status.OPTIMAL and area["d0"] <= result.objective == 106


def test_the_memory_area_bound_claims_nothing_where_a_free_has_no_allocation_before_it():
    # without a cap, or where every allocation fits at once, it may be low but never wrong; a problem whose
    # device frees before it allocates (a negative first delta) gets no bound on that device
    from schedsearch import Block, Cluster, Device, Graph, Problem

    problem = Problem(graph=Graph(blocks=[Block(name="B", options=[("d0", 2)], memory=-1),
                                          Block(name="F", options=[("d0", 1)], memory=1)],
                                  edges=[("B", "F")]),
                      num_microbatches=2, cluster=Cluster(devices=[Device(name="d0", memory=1)]),
                      initial_memory={"d0": 1})
    assert memory_area_bounds(problem) == {}
    assert memory_area_bounds(placements.vshape(2, 4)) == {}
