"""Memory-capped V schedules: the V-Half / V-Min greedy against ``scale_search`` at the same cap.

The ZB-V placement (``vshape_chunks``: two chunks per device, the ``"v"``
mapping; per chunk F +1 at its start, I 0, W -1 at its start). For each
size and cost triple, and each named cap (V-Half ``p + 2``, V-Min
``2 ceil((p + 2) / 3)`` chunk activations):

* ``before``: :func:`~schedsearch.handcrafted.v_capped.v_capped` at the cap
  without the stable patterns (``stable_patterns=False``: the blocks and
  the greedy variants only), its makespan;
* ``pattern``: :func:`~schedsearch.handcrafted.v_capped.v_stable_pattern`
  (the paper's stable pattern, squeezed; V-Half's for the V-Half row,
  V-Min's for the V-Min row) with no cap: its makespan, its own peak and
  its longest device span (first forward's start to last W's end);
* ``greedy``: :func:`~schedsearch.handcrafted.v_capped.v_capped` at the cap
  (the library's V-Half / V-Min, the patterns included), its makespan, peak
  and time;
* ``search``: :func:`~schedsearch.search.scale.scale_search` on the problem
  with that cap as every device's capacity, its makespan, lower bound, gap
  and status;
* ``published``: the figure the public greedy of the paper's authors gives
  where one is known (context only, not measured here).

Then, per size up to ``p = 8`` (unless ``--no-least``), the least cap at
which ``scale_search`` (half the time limit) reaches V-Half's makespan
(the published one where known and shorter, else the greedy's): caps tried upward from V-Min's less 2; proven when the cap below
has a lower bound above that makespan.

Run: ``python -m benchmarks vhalf`` or ``python benchmarks/bench_vhalf.py [--quick] [--limit 20]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, write_results
from schedsearch import metrics
from schedsearch.handcrafted.v_capped import v_capped, v_half_cap, v_min_cap, v_stable_pattern
from schedsearch.placements import vshape_chunks
from schedsearch.search.scale import scale_search

#: Published greedy figures (makespan @ peak) for V-Half / V-Min, where known: context only.
PUBLISHED = {
    (4, 8, (1, 1, 1)): ((53, 6), (59, 4)),
    (4, 16, (1, 1, 1)): ((101, 6), (107, 4)),
    (8, 16, (1, 1, 1)): ((113, 10), (123, 8)),
    (8, 32, (1, 1, 1)): ((209, 10), (219, 8)),
    (4, 8, (2, 2, 1)): ((95, 6), (117, 4)),
}

QUICK = [(4, 8, (1, 1, 1)), (4, 8, (2, 2, 1)), (8, 16, (1, 1, 1))]
FULL = list(PUBLISHED) + [(8, 16, (2, 2, 1)), (16, 32, (1, 1, 1)), (16, 64, (1, 1, 1)), (16, 128, (1, 1, 1)),
                          (16, 64, (2, 2, 1))]


def _problem(p: int, m: int, costs: tuple[int, int, int], memory: int | None = None):
    F, I, W = costs
    return vshape_chunks(p, m, forward=F, input_grad=I, weight_grad=W, memory=memory)


def _device_span(schedule):
    """The longest device span: on each device, its first start to its last end."""
    first, last = {}, {}
    for task in schedule.tasks:
        for d in task.devices:
            first[d] = min(first.get(d, task.start), task.start)
            last[d] = max(last.get(d, task.end), task.end)
    return max(last[d] - first[d] for d in first)


def _search(p, m, costs, cap, limit):
    t0 = time.perf_counter()
    result = scale_search(_problem(p, m, costs, cap), time_limit_s=limit, seed=0, workers=2)
    return result, time.perf_counter() - t0


def _least_memory(p, m, costs, target, limit):
    """The least cap (from V-Min's less 2) at which scale_search reaches ``target``, and whether that is
    proven: a cap of 2, or the cap below has a lower bound above ``target`` (then so has every smaller
    cap: a plan under a smaller cap fits a larger one)."""
    below = None
    for cap in range(max(2, v_min_cap(p) - 2), v_half_cap(p) + 1):
        result, _ = _search(p, m, costs, cap, limit)
        if result.objective is not None and result.objective <= target:
            proven = cap == 2 or (below is not None and below > target)
            return cap, proven, result.objective
        below = result.lower_bound
    return None, False, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three sizes, 5 s searches")
    parser.add_argument("--limit", type=float, default=None, help="scale_search time limit per run (s)")
    parser.add_argument("--no-least", action="store_true", help="skip the least-memory search")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    limit = args.limit or (5.0 if args.quick else 20.0)
    rows, least_rows = [], []
    for p, m, costs in sizes:
        published = PUBLISHED.get((p, m, costs))
        half_makespan = None
        for k, (label, cap) in enumerate((("V-Half", v_half_cap(p)), ("V-Min", v_min_cap(p)))):
            problem = _problem(p, m, costs)
            before = v_capped(problem, cap, stable_patterns=False)
            pattern = v_stable_pattern(problem, "half" if k == 0 else "min")
            pattern_peak = max(metrics(problem, pattern).peak_memory.values())
            t0 = time.perf_counter()
            greedy = v_capped(problem, cap)
            greedy_s = time.perf_counter() - t0
            peak = max(metrics(problem, greedy).peak_memory.values())
            if k == 0:
                half_makespan = greedy.makespan
            result, search_s = _search(p, m, costs, cap, limit)
            gap = None
            if result.objective is not None and result.lower_bound:
                gap = round(100 * (result.objective - result.lower_bound) / result.lower_bound, 1)
            rows.append({
                "p": p, "m": m, "F/I/W": "/".join(map(str, costs)), "schedule": label, "cap": cap,
                "published": f"{published[k][0]} @ {published[k][1]}" if published else None,
                "before": before.makespan, "pattern": f"{pattern.makespan} @ {pattern_peak}",
                "pattern_span": _device_span(pattern), "greedy": greedy.makespan, "greedy_peak": peak, "greedy_s": round(greedy_s, 2),
                "search": result.objective, "bound": result.lower_bound, "gap_%": gap,
                "status": result.status.value, "search_s": round(search_s, 1),
                "search<=greedy": result.objective is not None and result.objective <= greedy.makespan,
            })
            print_table(rows[-1:])
        if not args.no_least and p <= 8:
            target = min(half_makespan, published[0][0]) if published else half_makespan
            cap, proven, reached = _least_memory(p, m, costs, target, limit / 2)
            least_rows.append({"p": p, "m": m, "F/I/W": "/".join(map(str, costs)),
                               "V-Half": target, "from": "published" if target != half_makespan else "greedy",
                               "V-Half cap": v_half_cap(p), "least cap": cap, "makespan there": reached,
                               "proven least": proven})
            print_table(least_rows[-1:])
    print()
    print_table(rows)
    if least_rows:
        print()
        print_table(least_rows)
    write_results("vhalf_quick" if args.quick else "vhalf", rows, least_memory=least_rows, limit_s=limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
