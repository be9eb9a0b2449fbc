"""``python -m benchmarks NAME``: which benchmark modules a name selects."""

from __future__ import annotations

import doctest

import benchmarks.__main__ as entry
from benchmarks.__main__ import selected

NAMES = ["bench_repetend", "bench_repetend_scaling", "bench_scaling", "bench_zb_auto"]


def test_a_modules_own_name_selects_it_alone():
    # "scaling" also occurs in bench_repetend_scaling, whose options differ (flags would be refused there)
    assert selected(NAMES, ["scaling"]) == ["bench_scaling"]
    assert selected(NAMES, ["repetend"]) == ["bench_repetend"]


def test_other_names_select_every_module_holding_them():
    assert selected(NAMES, ["repetend_s"]) == ["bench_repetend_scaling"]
    assert selected(NAMES, ["zb", "scal"]) == ["bench_repetend_scaling", "bench_scaling", "bench_zb_auto"]
    assert selected(NAMES, []) == NAMES
    assert selected(NAMES, ["nothing"]) == []


def test_the_examples():
    assert doctest.testmod(entry).failed == 0
