"""Time-memory Pareto fronts of DualPipe, DualPipeV, ZB-V, interleaved 1F1B and 1F1B placements.

For each placement, walks the activation limit per device down from unbounded (at each step:
list scheduling, and when it does not reach the analytic bound, an exact search warm-started
from the best schedule so far) and keeps the non-dominated (bubble, peak activations) points,
each with its proof status: "proven" (optimal under its memory, and one activation less proven
to need a longer schedule), "optimal" (optimal under its memory), "feasible" (time limit).
The handcrafted schedule of each placement is marked beside its front.

Common unit (see ``schedsearch pareto --help``): the same model in 2p equal chunks; one chunk's
forward, input gradient or weight gradient = 1 time unit; one chunk's activation = 1 memory
unit. DualPipe holds two model replicas (twice the parameters), the others one.

Writes the points as JSON and, with matplotlib, one plot with every front under --out-dir.
The defaults are small; try --devices 4 --microbatches 8 --time-limit 10.

Run: python examples/pareto_dualpipe.py --help
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from schedsearch.cli.pareto import COMPARABLE, comparable, front_rows
from schedsearch.search.dualpipe import list_heuristic
from schedsearch.search.pareto_front import pareto

PLACEMENTS = ["dualpipe", "dualpipev", "zb-v", "interleaved", "1f1b"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Pareto fronts (bubble, peak activations) of pipeline placements.")
    parser.add_argument("--devices", type=int, default=2, help="pipeline devices p (even for DualPipe)")
    parser.add_argument("--microbatches", type=int, default=4, help="micro-batches m (>= 2p for DualPipe(V))")
    parser.add_argument("--placements", nargs="+", default=PLACEMENTS, choices=sorted(COMPARABLE),
                        help="placements to walk")
    parser.add_argument("--time-limit", type=float, default=2.0, help="limit of each exact step, seconds")
    parser.add_argument("--workers", type=int, default=2, help="search workers")
    parser.add_argument("--out-dir", default="out/pareto_dualpipe", help="where the JSON and the plot go")
    return parser


def plot(fronts: dict[str, list[dict]], path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, rows) in enumerate(fronts.items()):
        colour = f"C{i}"
        found = sorted((r for r in rows if r["schedule"] == "searched"), key=lambda r: r["peak_activations"])
        hand = [r for r in rows if r["schedule"] == "handcrafted"]
        xs, ys = [r["peak_activations"] for r in found], [r["bubble"] for r in found]
        ax.step(xs, ys, where="post", color=colour, alpha=0.6)
        for r in found:
            ax.plot(r["peak_activations"], r["bubble"], "o" if r["status"] in ("proven", "optimal") else "o",
                    color=colour, fillstyle="full" if r["status"] in ("proven", "optimal") else "none")
        ax.plot([], [], "o-", color=colour, label=f"{name} (searched)")
        for r in hand:
            ax.plot(r["peak_activations"], r["bubble"], "*", color=colour, markersize=14, markeredgecolor="black",
                    label=f"{name} (handcrafted)")
    ax.set_xlabel("peak activations per device (chunk activations)")
    ax.set_ylabel("bubble (chunk forwards)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fronts: dict[str, list[dict]] = {}
    for name in args.placements:
        spec, rep = comparable(name, args.devices, args.microbatches)
        front = pareto(rep.problem, time_limit_s=None, step_time_limit_s=args.time_limit, warm_starts=[rep.schedule],
                       heuristic=list_heuristic(), workers=args.workers, seed=0)
        rows = front_rows(spec, rep, front)
        fronts[spec.title] = rows
        print(f"{spec.title} ({spec.param_copies}x parameters): walk stopped ({front.stop_reason}) "
              f"after {front.wall_time_s:.1f} s")
        print(f"  {'schedule':<12} {'makespan':>8} {'bubble':>6} {'peak act.':>9}  status")
        for r in rows:
            print(f"  {r['schedule']:<12} {r['makespan']:>8} {r['bubble']:>6} {r['peak_activations']:>9}  {r['status']}")
    data = out / "fronts.json"
    data.write_text(json.dumps({"devices": args.devices, "microbatches": args.microbatches, "fronts": fronts},
                               indent=2) + "\n")
    print(f"wrote {data}")
    title = f"{args.devices} devices, {args.microbatches} micro-batches: bubble vs activations"
    picture = out / "fronts.png"
    if plot(fronts, picture, title):
        print(f"wrote {picture}")
    else:
        print("(matplotlib not installed: no plot)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
