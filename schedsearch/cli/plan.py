"""``schedsearch plan PIPELINE --out DIR``: the best plan of a pipeline description, ready for torchtitan."""

from __future__ import annotations

import argparse

from schedsearch.pipeline import Pipeline


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="search every schedule family for a pipeline description (TOML or JSON)",
        description="Read a pipeline description (ranks, stage times in ms, memory in bytes or '80 GiB', "
        "micro-batches, families), search every allowed schedule family under the memory budget, print the "
        "ranked table and write the best plan: schedule.csv (torch compute-only), torchtitan.toml, trace.json "
        "(Perfetto), gantt.png, plan.json, plan.txt.",
    )
    p.add_argument("pipeline", metavar="PIPELINE", help="pipeline description (.toml or .json)")
    p.add_argument("--out", default="out", help="folder to write the plan into (default out/; '' writes nothing)")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds for the whole search (default 60)")
    add_engine_arguments(p)
    p.set_defaults(func=run)


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """--engine, --address, --workers: where the candidates run (plan and sweep); --deterministic, --seed."""
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="where candidates run: local processes (default) or a Ray cluster")
    p.add_argument("--address", default=None, help="Ray cluster address to join (default: start Ray locally)")
    p.add_argument("--workers", type=int, default=None, help="candidates searched at once (default: one per CPU)")
    p.add_argument("--deterministic", action="store_true",
                   help="read each search's share of the time as solver work, so that every run and engine gives "
                   "the same table (the wall time then depends on the machine)")
    p.add_argument("--seed", type=int, default=0, help="the searches' random seed (default 0)")


def run(args: argparse.Namespace) -> int:
    from schedsearch.planner import plan

    pipeline = Pipeline.load(args.pipeline)
    result = plan(pipeline, time_limit_s=args.time_limit, engine=args.engine, workers=args.workers,
                  address=args.address, deterministic=args.deterministic, seed=args.seed)
    print(result.table())
    if args.out and result.best is not None:
        paths = result.write(args.out)
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0 if result.best is not None else 1
