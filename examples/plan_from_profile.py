"""Plan from a profile: a PipeDream profile -> 4 and 8 ranks -> the best plan -> torch CSV + torchtitan overrides.

Run: ``python examples/plan_from_profile.py [--profile models/pipedream/gnmt/graph.txt --ranks 4,8
--microbatches 16 --budget "2 GiB" --time-limit 30 --out out/plan]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import schedsearch
from schedsearch import Pipeline

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=str(ROOT / "models" / "pipedream" / "gnmt" / "graph.txt"),
                        help="a PipeDream graph.txt (layers: forward/backward ms, activation and parameter bytes)")
    parser.add_argument("--ranks", default="4,8", help="pipeline ranks to plan for, comma-separated")
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--budget", default=None, help='memory per rank, e.g. "2 GiB" (default unbounded)')
    parser.add_argument("--families", default="1f1b,interleaved,zb-v", help="schedule families to search")
    parser.add_argument("--time-limit", type=float, default=6.0, help="seconds per rank count")
    parser.add_argument("--out", default="", help="write each best plan into OUT/ranks-N (default: nothing)")
    args = parser.parse_args(argv)

    for ranks in [int(r) for r in args.ranks.split(",")]:
        # PipeDream measures no split backward: take the weight gradient as half of it
        pipeline = Pipeline.from_profile(args.profile, num_ranks=ranks, num_microbatches=args.microbatches,
                                         memory_budget_bytes=args.budget, weight_grad_share=0.5,
                                         families=args.families.split(","))
        result = schedsearch.plan(pipeline, time_limit_s=args.time_limit)
        print(result.table())
        best = result.best
        print(f"best: {best.family}, {best.makespan_ms:.2f} ms ({best.mark}); handcrafted {best.handcrafted}: "
              f"{best.handcrafted_ms} ms")
        assert schedsearch.validate(result.problem, result.schedule) == ()
        if args.out:
            paths = result.write(Path(args.out) / f"ranks-{ranks}")
            print("wrote", ", ".join(str(p) for p in paths.values()))
        else:
            from schedsearch.plan.torchtitan import torchtitan_overrides
            from schedsearch.export.torch_csv import to_torch_csv

            print(to_torch_csv(result.problem, result.schedule).splitlines()[0][:100], "...")
            for words in torchtitan_overrides(result, "schedule.csv"):
                print(" ".join(words))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
