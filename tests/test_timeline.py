"""The free gaps of a resource: earliest start, common start on several, the
earliest-ending candidate, checked against a brute-force scan of start times."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from schedsearch.timeline import Timeline, earliest_common, earliest_finish


def brute_force(busy: list[list[tuple[int, int]]], ready: int, duration: int) -> int:
    """The least start >= ready whose interval overlaps no busy interval of any resource."""
    start = ready
    while any(s < start + duration and start < e for intervals in busy for s, e in intervals) and duration > 0:
        start += 1
    return start


@st.composite
def booked(draw, max_lines: int = 3) -> tuple[list[Timeline], list[list[tuple[int, int]]]]:
    """Timelines with disjoint busy intervals booked where they fit, and the intervals."""
    lines, busy = [], []
    for _ in range(draw(st.integers(1, max_lines))):
        line, intervals = Timeline(), []
        for _ in range(draw(st.integers(0, 6))):
            ready, duration = draw(st.integers(0, 20)), draw(st.integers(0, 5))
            start = line.earliest(ready, duration)
            line.book(start, duration)
            if duration:
                intervals.append((start, start + duration))
        lines.append(line)
        busy.append(intervals)
    return lines, busy


@settings(max_examples=200)
@given(booked(), st.integers(0, 25), st.integers(0, 6))
def test_the_earliest_common_start_is_the_least_that_fits(lines_and_busy, ready, duration):
    lines, busy = lines_and_busy
    assert earliest_common(lines, ready, duration) == brute_force(busy, ready, duration)
    for line, intervals in zip(lines, busy):
        assert line.earliest(ready, duration) == brute_force([intervals], ready, duration)
        assert line.last_end == max((e for _, e in intervals), default=0)


def test_half_open_intervals_touch_without_conflict():
    line = Timeline()
    line.book(2, 3)  # [2, 5)
    assert line.conflict(0, 2) is None and line.conflict(5, 4) is None
    assert line.conflict(4, 1) == 5 and line.conflict(1, 2) == 5
    assert line.earliest(3, 0) == 3  # nothing of zero length conflicts
    line.book(7, 0)
    assert line.starts == [2] and line.ends == [5]


def test_the_earliest_finish_breaks_ties_by_order():
    free, busy = Timeline(), Timeline()
    busy.book(0, 2)
    assert earliest_finish([("a", 3, [free]), ("b", 1, [busy])], 0) == ("a", 0, 3)  # both end at 3: the first
    assert earliest_finish([("b", 1, [busy]), ("a", 3, [free])], 0) == ("b", 2, 1)
    assert earliest_finish([], 4) is None
