"""``plan`` on real PipeDream profiles under a budget that binds, against the best handcrafted schedule that fits.

Rows: gnmt, resnet50 and vgg16 (``models/pipedream``), each split by the DP
onto 4 and 8 ranks, 16 and 64 micro-batches (weight gradient taken as half
the backward: PipeDream does not measure it). Budget per rank: 0.5% below
what the leanest interleaved handcrafted schedule holds on its worst rank
(``interleaved_needs_gib``, computed on the same costs), but at least what
1F1B holds: no interleaved schedule fits as is, 1F1B always does, ZB-H1 and
ZB-V where they hold little enough.

Per row: the best plan (family, makespan, peak memory per rank, proven gap),
the best handcrafted schedule that fits the same budget on the same costs,
the makespan ratio (plan / handcrafted) and the time ``plan`` took. Then the
first row again with ``engine="ray"`` beside ``engine="local"``: equal
results, both wall times.

Run: ``python -m benchmarks plan`` (``--quick``: gnmt, 4 ranks, 16
micro-batches; ``--time-limit`` per plan, default 60 s). The table's
searches are wall-clock limited (``plan``'s default); the engine
comparison runs in deterministic mode.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import schedsearch
from schedsearch import Pipeline

from benchmarks._common import print_table, write_results

MODELS = Path(__file__).resolve().parents[1] / "models" / "pipedream"
GIB = 2**30


def handcrafted_peaks(pipeline: Pipeline) -> dict[str, int]:
    """Worst-rank peak bytes of each family's handcrafted schedule on the pipeline's own costs (no budget)."""
    from schedsearch.plan.planner import _handcrafted, _prepare, build_problem
    from schedsearch.schedule import metrics

    prepared = _prepare(pipeline, time_limit_s=1.0, parallel=1, deterministic=False, seed=0)
    unit = prepared.units.memory_unit_bytes
    peaks = {}
    for c in prepared.runnable:
        if c.handcrafted_name() is None:
            continue
        stages, _ = prepared.splits[c]
        problem = build_problem(pipeline, c, stages, prepared.units)
        try:
            hand = _handcrafted(c, problem)
        except Exception:  # a published schedule's precondition not met
            continue
        peaks[c.label] = int(max(metrics(problem, hand).peak_memory.values()) * unit)
    return peaks


def binding_budget(pipeline: Pipeline) -> tuple[int, dict[str, int]]:
    """Just below what the leanest interleaved handcrafted schedule holds on its worst rank (so none of them
    fits), but at least what 1F1B holds (so one handcrafted schedule always fits)."""
    peaks = handcrafted_peaks(pipeline)
    leanest = min(v for k, v in peaks.items() if k.startswith("interleaved"))
    return max(peaks["1F1B"], int(leanest * 0.995)), peaks


def row_of(model: str, ranks: int, microbatches: int, time_limit: float, engine: str = "local",
           deterministic: bool = False) -> tuple[dict, object]:
    base = Pipeline.from_profile(MODELS / model / "graph.txt", num_ranks=ranks, num_microbatches=microbatches,
                                 weight_grad_share=0.5, families=["1f1b", "interleaved", "zb-v"])
    budget, peaks = binding_budget(base)
    pipeline = Pipeline.from_dict({**base.to_dict(), "memory_budget_bytes": budget})
    interleaved = min((v for k, v in peaks.items() if k.startswith("interleaved")), default=None)
    result = schedsearch.plan(pipeline, time_limit_s=time_limit, executor=engine, deterministic=deterministic)
    best = result.best
    hands = [r for r in result.rows if r.handcrafted_fits]
    hand = min(hands, key=lambda r: r.handcrafted_ms) if hands else None
    row = {
        "model": model, "ranks": ranks, "microbatches": microbatches,
        "budget_gib": round(pipeline.memory_budget_bytes / GIB, 3),
        "interleaved_needs_gib": None if interleaved is None else round(interleaved / GIB, 3),
        "best": best.family if best else None, "makespan_ms": best.makespan_ms if best else None,
        "peak_gib": max(best.peak_gib) if best else None, "gap": best.gap if best else None,
        "handcrafted": hand.handcrafted + f" ({hand.family})" if hand else "none fits",
        "handcrafted_ms": hand.handcrafted_ms if hand else None,
        "ratio": round(best.makespan_ms / hand.handcrafted_ms, 4) if best and hand else None,
        "plan_s": result.wall_time_s, "engine": result.engine,
        "guard_hit": any("wall-clock guard" in (r.note or "") for r in result.rows),
    }
    return row, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--no-ray", action="store_true", help="leave out the Ray comparison")
    args = parser.parse_args(argv)
    grid = [("gnmt", 4, 16)] if args.quick else [
        (m, r, n) for m in ("gnmt", "resnet50", "vgg16") for r in (4, 8) for n in (16, 64)]
    rows = []
    for model, ranks, n in grid:
        row, _ = row_of(model, ranks, n, args.time_limit)
        rows.append(row)
        print_table([row])
    print_table(rows)
    engines = []
    if not args.no_ray:
        try:
            import ray
        except ImportError:
            print("Ray not installed: pip install 'schedsearch[ray]' for the engine comparison")
        else:
            model, ranks, n = grid[0]
            # deterministic mode: the two engines must give the same table even where searches stop at their limit
            local, local_result = row_of(model, ranks, n, args.time_limit, "local", deterministic=True)
            on_ray, ray_result = row_of(model, ranks, n, args.time_limit, "ray", deterministic=True)
            ray.shutdown()
            same = ([(r.family, r.makespan_ms, r.peak_gib) for r in local_result.rows]
                    == [(r.family, r.makespan_ms, r.peak_gib) for r in ray_result.rows])
            engines = [{"engine": "local", "plan_s": local["plan_s"], "best_ms": local["makespan_ms"]},
                       {"engine": "ray", "plan_s": on_ray["plan_s"], "best_ms": on_ray["makespan_ms"],
                        "equal_to_local": same}]
            print_table(engines)
    write_results("plan", rows, engines=engines, time_limit_s=args.time_limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
