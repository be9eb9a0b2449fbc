"""Real, non-uniform stage times: ``solve`` against 1F1B, ZB-H1 and ZB-V on PipeDream profiles.

Rows: gnmt, resnet50 and vgg16 (``models/pipedream``, PipeDream's layer
profiles), split by the library's DP (:meth:`schedsearch.Pipeline.from_profile`,
least maximum forward + backward per stage) onto 4 and 8 ranks, with 32 and
128 micro-batches. PipeDream measures the backward whole; the split backward
takes ``I = W = B / 2`` per layer (``weight_grad_share=0.5``). One time unit
per row (:func:`schedsearch.units.choose_units`, every stage time within 1%)
for all three placements' stage times, so they share their costs.

Per row, each schedule runs on its own placement's problem built from the
same profile (:func:`schedsearch.plan.planner.build_problem`): 1F1B on the 1F1B
placement with the whole backward ``B``, ZB-H1 on the same placement with
``B = I + W``, ZB-V on the V placement (two stages per rank, the layers split
into twice as many stages). No memory cap: every schedule and plan may hold
as many activations as it likes (the table gives the peaks, in activations
of the worst rank, beside each makespan).

"Ours" is :func:`schedsearch.solve` (time objective only) on the split 1F1B
placement and on the V placement, each with half of the row's time limit
(60 s by default), unless its analytic bound already reaches the proven
optimum of the other (it then cannot do better and is skipped); the better
plan is the row's, with its placement. Its
bound is the proven lower bound of that placement's problem (the other
placement's plan is no proof about it); ``gap`` = plan / bound - 1. The
last two columns measure the analytic bound alone on the same plan, with and
without its flow part (:func:`schedsearch.bounds.analytic.flow_bounds`).

Run: ``python -m benchmarks real_profiles`` (``--quick``: gnmt and vgg16 on 8
ranks, 32 micro-batches, 10 s per row; ``--time-limit`` per row;
``--models``, ``--ranks``, ``--microbatches`` to pick rows).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from schedsearch import Pipeline
from schedsearch.bounds.analytic import analytic_lower_bound
from schedsearch.plan.planner import Candidate, build_problem
from schedsearch.schedule import peak_memory
from schedsearch.units import choose_units
from schedsearch.validate import validate

from benchmarks._common import print_table, write_results

MODELS = Path(__file__).resolve().parents[1] / "models" / "pipedream"

#: the placements compared: (name, candidate, handcrafted schedule run on it)
PLACEMENTS = (
    ("1F1B", Candidate(family="1f1b", chunks=1, split_backward=False), "1F1B"),
    ("1F1B split", Candidate(family="1f1b", chunks=1, split_backward=True), "ZB-H1"),
    ("V", Candidate(family="zb-v", chunks=2, split_backward=True), "ZB-V"),
)
#: the placements ``solve`` searches (the whole-backward one is the split one with I and W glued)
SEARCHED = ("1F1B split", "V")


def problems(model: str, ranks: int, microbatches: int) -> tuple[dict[str, Any], Any]:
    """Each placement's problem of one row, all in one time unit; and the units."""
    pipeline = Pipeline.from_profile(MODELS / model / "graph.txt", num_ranks=ranks, num_microbatches=microbatches,
                                     weight_grad_share=0.5)
    splits = {name: pipeline.stages_for(c.num_stages(ranks))[0] for name, c, _ in PLACEMENTS}
    times = {}
    for name, stages in splits.items():
        for k, s in enumerate(stages):
            for field in ("forward_ms", "backward_ms", "input_grad_ms", "weight_grad_ms"):
                times[f"{name} stage {k} {field}"] = getattr(s, field)
    units = choose_units(times, [], tolerance=pipeline.time_tolerance)
    return {name: build_problem(pipeline, c, splits[name], units) for name, c, _ in PLACEMENTS}, units


def handcrafted(name: str, problem: Any) -> Any:
    from schedsearch import handcrafted as hc

    return {"1F1B": hc.one_f_one_b, "ZB-H1": hc.zb_h1, "ZB-V": hc.zb_v}[name](problem)


def _peak(problem: Any, schedule: Any) -> int:
    """The worst rank's peak, in activations of its largest stage (parameters left out)."""
    peaks = peak_memory(problem, schedule)
    worst = 0.0
    for d, level in peaks.items():
        acts = [b.memory for b in problem.graph.blocks if d in b.devices and b.memory > 0]
        if acts:
            worst = max(worst, (level - problem.initial_memory_of(d)) / max(acts))
    return round(worst, 1)


def row_of(model: str, ranks: int, microbatches: int, time_limit: float, seed: int = 0) -> dict[str, Any]:
    import schedsearch

    probs, units = problems(model, ranks, microbatches)
    row: dict[str, Any] = {"model": model, "ranks": ranks, "microbatches": microbatches,
                           "unit_ms": units.time_unit_ms}
    for name, _, hand in PLACEMENTS:
        schedule = handcrafted(hand, probs[name])
        assert not validate(probs[name], schedule), (model, ranks, microbatches, hand)
        row[hand] = units.ms(schedule.makespan)
        row[f"{hand} peak"] = _peak(probs[name], schedule)
    searched = {}
    skipped = {}
    t0 = time.perf_counter()
    budget = 0.98 * time_limit  # solve overruns its limit by a little
    for i, name in enumerate(SEARCHED):
        # a placement whose analytic bound is at least a proven optimum of another cannot do better
        bound = analytic_lower_bound(probs[name]).value
        proven = [r.objective for r in searched.values() if r.status.value == "OPTIMAL"]
        if proven and bound >= min(proven):
            skipped[name] = units.ms(bound)
            continue
        # each placement gets an equal share of what is left of the row's limit
        share = max(1.0, (budget - (time.perf_counter() - t0)) / (len(SEARCHED) - i))
        result = schedsearch.solve(probs[name], objective="makespan",
                                   options=schedsearch.SearchOptions(time_limit_s=share, seed=seed))
        assert result.schedule is not None and not validate(probs[name], result.schedule)
        searched[name] = result
    seconds = time.perf_counter() - t0
    best_name = min(searched, key=lambda n: (searched[n].objective, -searched[n].lower_bound))
    best = searched[best_name]
    others = [r.lower_bound for n, r in searched.items() if n != best_name] + [
        round(v / units.time_unit_ms) for v in skipped.values()]
    analytic = analytic_lower_bound(probs[best_name])
    without_flow = max(v for k, v in analytic.parts.items() if not k.startswith("flow"))
    row.update({
        "analytic w/o flow": units.ms(without_flow), "analytic": units.ms(analytic.value),
        "analytic gap w/o flow %": round(100 * (best.objective / without_flow - 1), 2),
        "analytic gap %": round(100 * (best.objective / analytic.value - 1), 2),
        "ours": units.ms(best.objective), "placement": best_name, "ours peak": _peak(probs[best_name], best.schedule),
        "bound": units.ms(best.lower_bound), "gap %": round(100 * (best.objective / best.lower_bound - 1), 2),
        "proven": best.status.value == "OPTIMAL", "engine": best.engine, "bound by": best.bound_engine,
        # proven, and no other placement's bound is below it: the best of the placements compared
        "best of placements": best.status.value == "OPTIMAL" and all(b >= best.objective for b in others),
        "seconds": round(seconds, 1),
        "vs best handcrafted %": round(100 * (best.objective * units.time_unit_ms
                                              / min(row["1F1B"], row["ZB-H1"], row["ZB-V"]) - 1), 2),
        "per placement": {n: {"makespan": units.ms(r.objective), "bound": units.ms(r.lower_bound),
                              "status": r.status.value, "engine": r.engine, "bound_engine": r.bound_engine,
                              "seconds": round(r.wall_time_s, 1)} for n, r in searched.items()},
        "skipped (analytic bound >= a proven optimum)": skipped,
    })
    return row


COLUMNS = ["model", "ranks", "microbatches", "1F1B", "ZB-H1", "ZB-V", "ours", "placement", "bound", "gap %",
           "proven", "seconds", "analytic gap w/o flow %", "analytic gap %"]


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its milliseconds to one decimal (the table's view; the JSON keeps every digit)."""
    return {k: f"{v:.1f}" if k in ("1F1B", "ZB-H1", "ZB-V", "ours", "bound") else v for k, v in row.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per row (default 60, quick 10)")
    parser.add_argument("--models", default="gnmt,resnet50,vgg16")
    parser.add_argument("--ranks", default="4,8")
    parser.add_argument("--microbatches", default="32,128")
    parser.add_argument("--name", default=None, help="results file name (default real_profiles, quick: real_profiles_quick)")
    args = parser.parse_args(argv)
    limit = args.time_limit if args.time_limit is not None else (10.0 if args.quick else 60.0)
    if args.quick:
        grid = [("gnmt", 8, 32), ("vgg16", 8, 32)]
    else:
        grid = [(m, int(r), int(n)) for m in args.models.split(",") for r in args.ranks.split(",")
                for n in args.microbatches.split(",")]
    rows = []
    for model, ranks, n in grid:
        rows.append(row_of(model, ranks, n, limit))
        print_table([_shown(rows[-1])], COLUMNS)
    print()
    print_table([_shown(r) for r in rows], COLUMNS)
    within = sum(1 for r in rows if r["proven"] or r["gap %"] <= 2.0)
    print(f"\n{within} of {len(rows)} rows proven or within 2% of their bound ({limit:g} s per row)")
    write_results(args.name or ("real_profiles_quick" if args.quick else "real_profiles"), rows, time_limit_s=limit, weight_grad_share=0.5, memory_cap=None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
