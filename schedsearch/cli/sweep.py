"""``schedsearch sweep PIPELINE``: plan a pipeline over a grid of micro-batch counts, budgets and families."""

from __future__ import annotations

import argparse

from schedsearch.cli.plan import add_executor_arguments
from schedsearch.cli._inputs import InputKind, open_input
from schedsearch.plan.pipeline import Pipeline


def _list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="plan a pipeline description over a grid of micro-batch counts, memory budgets and families",
        description="Read a pipeline description and plan it at every point of the grid (micro-batch counts x "
        "memory budgets x family sets; an axis left out keeps the description's value). Every point's candidates "
        "run through one executor (local processes or Ray). Prints one ranked table per point, or with "
        "--combined one line per point; points that cannot be planned say why.",
    )
    p.add_argument("pipeline", metavar="PIPELINE", help="pipeline description (.toml or .json)")
    p.add_argument("--microbatches", type=_list, default=None, metavar="M,M,...",
                   help="micro-batch counts, for example 16,32,64")
    p.add_argument("--budgets", type=lambda t: [x.strip() for x in t.split(";") if x.strip()], default=None,
                   metavar="B;B;...", help="memory budgets per rank separated by ';', for example '16 GiB;24 GiB'")
    p.add_argument("--families", action="append", type=_list, default=None, metavar="F,F,...",
                   help="one family set per use of the option, for example --families 1f1b --families zb-v,dualpipev")
    p.add_argument("--combined", action="store_true", help="one line per grid point instead of one table per point")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per grid point (default 60)")
    add_executor_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from schedsearch.errors import InvalidOptionsError
    from schedsearch.plan.planner import plan_sweep

    pipeline = Pipeline.load(open_input(args.pipeline, "sweep", (InputKind.PIPELINE,)).path)
    counts = None
    if args.microbatches is not None:
        try:
            counts = [int(x) for x in args.microbatches]
        except ValueError:
            raise InvalidOptionsError(f"sweep: '--microbatches' must be integers, got {args.microbatches!r}") from None
    result = plan_sweep(pipeline, num_microbatches=counts, memory_budgets=args.budgets, families=args.families,
                        time_limit_s=args.time_limit, executor=args.executor, parallel=args.parallel, address=args.address,
                        deterministic=args.deterministic, seed=args.seed)
    print(result.combined() if args.combined else result.table())
    return 0 if any(pt.best is not None for pt in result.points) else 1
