"""``plan`` on real PipeDream profiles under a budget that binds, against the best handcrafted schedule that fits.

Rows: gnmt, resnet50 and vgg16 (``models/pipedream``), each split by the DP
onto 4 and 8 ranks, 16 and 64 micro-batches (weight gradient taken as half
the backward: PipeDream does not measure it). Budget per rank: 80% of what
1F1B holds on its worst rank (parameters + p activations of a stage), but
at least what any plan needs; so interleaved 1F1B does not fit as is.

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


def binding_budget(pipeline: Pipeline) -> int:
    stages, _ = pipeline.stages_for(pipeline.num_ranks)
    p = pipeline.num_ranks
    one_f_one_b = max(s.parameter_bytes + (p - r) * s.activation_bytes for r, s in enumerate(stages))
    need = max(s.parameter_bytes + s.activation_bytes for s in stages)
    return max(int(0.8 * one_f_one_b), int(1.05 * need))


def row_of(model: str, ranks: int, microbatches: int, time_limit: float, engine: str = "local",
           deterministic: bool = False) -> tuple[dict, object]:
    base = Pipeline.from_profile(MODELS / model / "graph.txt", num_ranks=ranks, num_microbatches=microbatches,
                                 weight_grad_share=0.5, families=["1f1b", "interleaved", "zb-v"])
    pipeline = Pipeline.from_dict({**base.to_dict(), "memory_budget_bytes": binding_budget(base)})
    result = schedsearch.plan(pipeline, time_limit_s=time_limit, engine=engine, deterministic=deterministic)
    best = result.best
    hands = [r for r in result.rows if r.handcrafted_fits]
    hand = min(hands, key=lambda r: r.handcrafted_ms) if hands else None
    row = {
        "model": model, "ranks": ranks, "microbatches": microbatches,
        "budget_gib": round(pipeline.memory_budget_bytes / GIB, 3),
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
