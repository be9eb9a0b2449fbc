"""The closed forms of the handcrafted schedules hold over grids of (p, m, v) and durations.

Each test draws parameters inside the range where the published formula is
claimed (see :mod:`schedsearch.handcrafted.registry`), generates the
schedule, and checks every figure the formula gives against the measured
one. The exhaustive grids are behind ``-m slow``.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedsearch.handcrafted import reproduce


def check(name: str, **params) -> dict:
    rep = reproduce(name, **params)
    assert rep.formula, f"no closed form for {name} {params}"
    got = rep.measured
    for key, value in rep.formula.items():
        assert got[key] == value, (name, params, key, got[key], value)
    return got


durations = st.integers(min_value=1, max_value=4)


@given(p=st.integers(1, 6), m=st.integers(1, 12), F=durations, B=durations)
def test_gpipe_and_1f1b(p, m, F, B):
    for name in ("gpipe", "1f1b"):
        got = check(name, devices=p, microbatches=m, forward=F, backward=B)
        assert got["makespan"] == (m + p - 1) * (F + B)


@given(p=st.integers(2, 5), v=st.integers(2, 4), k=st.integers(1, 3), F=durations, B=durations)
def test_interleaved_1f1b(p, v, k, F, B):
    got = check("interleaved", devices=p, chunks=v, microbatches=k * p, forward=F, backward=B)
    assert got["bubble"] * v == (p - 1) * (F + B)


@given(p=st.integers(1, 6), extra=st.integers(0, 6), W=st.integers(1, 2), dF=st.integers(0, 2), dI=st.integers(0, 2))
def test_zb_h1(p, extra, W, dF, dI):
    F, I = W + dF, W + dI  # the formula's range: W <= F, W <= I
    check("zb-h1", devices=p, microbatches=p + extra, forward=F, input_grad=I, weight_grad=W)


@given(p=st.integers(2, 4), v=st.integers(2, 3), k=st.integers(1, 2), W=st.integers(1, 2), dF=st.integers(0, 1),
       dI=st.integers(0, 1))
def test_interleaved_zero_bubble(p, v, k, W, dF, dI):
    check("interleaved-zb", devices=p, chunks=v, microbatches=k * p, forward=W + dF, input_grad=W + dI, weight_grad=W)


@given(p=st.integers(1, 6), extra=st.integers(0, 8), F=durations)
def test_zb_v(p, extra, F):
    got = check("zb-v", devices=p, microbatches=2 * p - 1 + extra, forward=F, input_grad=F, weight_grad=F)
    assert got["bubble_span"] == 0


@given(half=st.integers(1, 5), k=st.integers(1, 3), F=durations, B=durations)
def test_chimera(half, k, F, B):
    D = 2 * half
    got = check("chimera", devices=D, microbatches=k * D, forward=F, backward=B)
    if F == B and k == 1:
        assert got["bubble"] == (D - 2) * F  # the paper's D - 2 slots, half of 1F1B's 2(D - 1)


@given(half=st.integers(1, 5), extra=st.integers(0, 4), F=st.integers(1, 2), shorten=st.integers(0, 2))
def test_dualpipe(half, extra, F, shorten):
    PP, B, W = 2 * half, 2 * F, F
    FB = max(F + B - shorten, B)
    got = check("dualpipe", devices=PP, microbatches=2 * PP + 2 * extra, forward=F, backward=B, weight_grad=W,
                overlap=FB)
    peaks = got["peak_memory"]
    assert max(peaks) == PP + 1


@given(p=st.integers(1, 5), extra=st.integers(0, 6), F=st.integers(1, 2), shorten=st.integers(0, 2))
def test_dualpipev(p, extra, F, shorten):
    B, W = 2 * F, F
    check("dualpipev", devices=p, microbatches=2 * p + extra, forward=F, backward=B, weight_grad=W,
          overlap=max(F + B - shorten, B))


def test_outside_the_claimed_range_no_formula_is_stated():
    # W > F: the ZB-H1 bubble formula does not hold (measured 2 here, formula would say 1)
    rep = reproduce("zb-h1", devices=2, microbatches=2, forward=1, input_grad=2, weight_grad=2)
    assert "bubble" not in rep.formula and rep.measured["bubble"] == 2
    rep = reproduce("dualpipe", devices=4, microbatches=8, forward=1, backward=3, weight_grad=1, overlap=4)
    assert "bubble" not in rep.formula


@pytest.mark.slow
def test_exhaustive_grids():
    grids = {
        "gpipe": [dict(devices=p, microbatches=m, forward=F, backward=B)
                  for p, m, F, B in itertools.product(range(1, 8), range(1, 16), range(1, 4), range(1, 4))],
        "1f1b": [dict(devices=p, microbatches=m, forward=F, backward=B)
                 for p, m, F, B in itertools.product(range(1, 8), range(1, 16), range(1, 4), range(1, 4))],
        "zb-h1": [dict(devices=p, microbatches=m, forward=F, input_grad=I, weight_grad=W)
                  for p, m, F, I, W in itertools.product(range(1, 7), range(1, 12), range(1, 4), range(1, 4), range(1, 4))
                  if W <= min(F, I) and m >= p],
        "interleaved": [dict(devices=p, chunks=v, microbatches=k * p, forward=F, backward=B)
                        for p, v, k, F, B in itertools.product(range(2, 6), range(2, 5), range(1, 4), range(1, 3),
                                                               range(1, 4))],
        "zb-v": [dict(devices=p, microbatches=m, forward=F, input_grad=F, weight_grad=F)
                 for p, m, F in itertools.product(range(1, 7), range(1, 20), range(1, 3)) if m >= 2 * p - 1],
        "chimera": [dict(devices=D, microbatches=k * D, forward=F, backward=B)
                    for D, k, F, B in itertools.product((2, 4, 6, 8, 10), (1, 2, 3), range(1, 4), range(1, 4))],
        "dualpipe": [dict(devices=PP, microbatches=2 * PP + 2 * e, forward=F, backward=2 * F, weight_grad=F, overlap=fb)
                     for PP, e, F in itertools.product((2, 4, 6, 8, 10), (0, 1, 2, 5), (1, 2))
                     for fb in range(2 * F, 3 * F + 1)],
        "dualpipev": [dict(devices=p, microbatches=2 * p + e, forward=F, backward=2 * F, weight_grad=F, overlap=fb)
                      for p, e, F in itertools.product(range(1, 6), (0, 1, 3, 7), (1, 2))
                      for fb in range(2 * F, 3 * F + 1)],
    }
    for name, cases in grids.items():
        for params in cases:
            check(name, **params)
