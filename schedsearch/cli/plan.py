"""``schedsearch plan PIPELINE --out DIR``: the best plan of a pipeline description, ready for torchtitan."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from schedsearch.cli._inputs import InputKind, open_input
from schedsearch.errors import InvalidOptionsError, SchedSearchError
from schedsearch.plan.pipeline import Pipeline


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="search every schedule family for a pipeline description (TOML or JSON)",
        description="Read a pipeline description (ranks, stage times in ms, memory in bytes or '80 GiB', "
        "micro-batches, families), search every allowed schedule family under the memory budget, print the "
        "ranked table and write the best plan the runtime can execute: schedule.csv (torch compute-only), "
        "torchtitan.args (torchtitan's command-line overrides, one per line), train.sh (the torchrun launch line), "
        "trace.json (Perfetto), gantt.png, plan.json, plan.txt.",
    )
    p.add_argument("pipeline", metavar="PIPELINE", help="pipeline description (.toml or .json), or a model in "
                   "layers: then the split, micro-batching and recomputation are chosen with the schedule, on each "
                   "of its pipeline degrees, within --time-limit for each degree")
    p.add_argument("--out", default="out", help="folder to write the plan into (default out/; '' writes nothing)")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds for the whole search (default 60)")
    p.add_argument("--runtime", choices=("torch", "any"), default="torch",
                   help="what the plan is for: torch (default: torch's CSV runtime, as torchtitan runs it; a better "
                   "plan it cannot execute stays in the table with the reason) or any (the best plan of every family)")
    p.add_argument("--microbatch-size", type=int, default=None,
                   help="samples per micro-batch, for torchtitan's batch settings (default: the description's "
                   "microbatch_sizes when all equal, else 1)")
    p.add_argument("--torchtitan-config", default=None, metavar="CONFIG",
                   help="the torchtitan config function the plan is for (e.g. llama3_8b, llama3_debugmodel): the "
                   "description's entries are checked against its layers before the search, and train.sh runs it")
    p.add_argument("--torchtitan-module", default="llama3", metavar="MODULE",
                   help="the torchtitan model module of --torchtitan-config (default llama3)")
    p.add_argument("--layers-per-entry", type=int, default=None, metavar="N",
                   help="transformer layers each entry of the description stands for (the description's "
                   "layers_per_entry; given either way, the description is planned as a model in layers: its split, "
                   "stages per rank and recomputation searched with the schedule). Not given: each entry is one "
                   "layer of the files written (entries named after torchtitan's modules, tok_embeddings, layers.N, "
                   "norm, lm_head, hold what they name)")
    p.add_argument("--end-layers", default=None, metavar="LIST",
                   help="with --layers-per-entry: what the end entries hold beyond their layers, 'embedding,head', "
                   "either, or '' (the description's end_layers)")
    add_executor_arguments(p)
    p.set_defaults(func=run)


class _Renamed(argparse.Action):
    """Store the value; its second spelling is the deprecated one, and using it prints a note on stderr."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if option_string == self.option_strings[1]:
            print(f"schedsearch {parser.prog.split()[-1]}: {option_string} is deprecated: use {self.option_strings[0]}",
                  file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    """--executor, --address, --parallel: where the candidates run (plan and sweep); --deterministic, --seed.

    ``--engine`` and ``--workers`` are the deprecated spellings of ``--executor`` and ``--parallel``.
    """
    p.add_argument("--executor", "--engine", dest="executor", choices=("local", "ray"), default="local",
                   action=_Renamed, help="what runs the candidates: local processes (default) or a Ray cluster "
                                         "(--engine: deprecated)")
    p.add_argument("--address", default=None, help="Ray cluster address to join (default: start Ray locally)")
    p.add_argument("--parallel", "--workers", dest="parallel", type=int, default=None, action=_Renamed,
                   help="candidates searched at once, each with one solver thread (default: one per CPU; "
                        "--workers: deprecated)")
    p.add_argument("--deterministic", action="store_true",
                   help="read each search's share of the time as solver work, so that every run and executor gives "
                   "the same table (the wall time then depends on the machine)")
    p.add_argument("--seed", type=int, default=0, help="the searches' random seed (default 0)")


def run(args: argparse.Namespace) -> int:
    from schedsearch.plan.planner import RUNTIMES, plan

    if args.microbatch_size is not None and args.microbatch_size < 1:
        raise SchedSearchError(f"plan: --microbatch-size must be a positive integer, got {args.microbatch_size}")
    inp = open_input(args.pipeline, "plan", (InputKind.PIPELINE, InputKind.LAYER_MODEL))
    if inp.kind is InputKind.LAYER_MODEL:
        from schedsearch.plan.layers import LayerModel

        if args.layers_per_entry is not None or args.end_layers is not None:
            raise SchedSearchError("plan: --layers-per-entry and --end-layers apply to a per-stage description; a "
                                   "model in layers gives its layers")
        return _run_layers(args, LayerModel.load(inp.path))
    pipeline = _entries(args, Pipeline.load(inp.path))
    if pipeline.layers_per_entry is not None:
        return _run_layers(args, pipeline)
    if args.out:  # the torchtitan settings' model, checked before the search
        from schedsearch.plan.torchtitan import entry_modules, torchtitan_model

        model = None if args.torchtitan_config is None else torchtitan_model(args.torchtitan_config,
                                                                             args.torchtitan_module)
        entry_modules(pipeline, model=model)
    result = plan(pipeline, time_limit_s=args.time_limit, executor=args.executor, parallel=args.parallel,
                  address=args.address, deterministic=args.deterministic, seed=args.seed, runtime=args.runtime,
                  progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(result.table())
    if result.best is None:
        print(f"no plan that {RUNTIMES[args.runtime]} can execute was found: nothing written")
        return 1
    if args.out:
        from schedsearch.plan.torchtitan import not_written

        paths = result.write(args.out, microbatch_size=args.microbatch_size, torchtitan_config=args.torchtitan_config,
                             torchtitan_module=args.torchtitan_module)
        print(f"plan written: {result.best.family} ({result.best.makespan_ms:g} ms), for {RUNTIMES[args.runtime]}")
        for kind, path in paths.items():
            print(f"wrote {path}  ({_WHAT.get(kind, kind)})")
        for line in not_written(paths["table"]):
            print(f"not written: {line}")
    return 0


def _entries(args: argparse.Namespace, pipeline: Pipeline) -> Pipeline:
    """``pipeline`` with ``--layers-per-entry`` and ``--end-layers`` in place of its own fields, when given."""
    import attrs

    fields: dict[str, Any] = {}
    if args.layers_per_entry is not None:
        fields["layers_per_entry"] = args.layers_per_entry
    if args.end_layers is not None:
        fields["end_layers"] = [n.strip() for n in args.end_layers.split(",") if n.strip()]
    return attrs.evolve(pipeline, **fields) if fields else pipeline


def _run_layers(args: argparse.Namespace, described: Any) -> int:
    """``schedsearch plan MODEL``: a model in layers (or a description whose entries stand for layers), its
    configuration chosen with the schedule."""
    from schedsearch.plan.planner import plan, plan_layers
    from schedsearch.plan.layers import LayerModel
    from schedsearch.plan.planner import RUNTIMES

    if args.microbatch_size is not None:
        raise SchedSearchError("plan: --microbatch-size applies to a pipeline description planned stage by stage; "
                               "for a model in layers the micro-batch size is chosen with the schedule")
    titan = None
    if args.out and args.torchtitan_config is not None:  # the torchtitan settings' model, checked before the search
        from schedsearch.plan.torchtitan import torchtitan_model

        titan = torchtitan_model(args.torchtitan_config, args.torchtitan_module)
    model = described if isinstance(described, LayerModel) else LayerModel.from_pipeline(described)
    if titan is not None:
        blocks = model.kinds().count("layer")
        if blocks != titan.num_layers:
            given = ("its layers" if model is described else f"the {len(described.stages)} entries "
                     f"(layers_per_entry = {described.to_dict()['layers_per_entry']})")
            raise InvalidOptionsError(f"plan: torchtitan {titan.config} has {titan.num_layers} transformer layers, "
                                      f"{given} stand for {blocks}: "
                                      + (f"set layers_per_entry = {titan.num_layers // len(described.stages)}"
                                         if model is not described and titan.num_layers % len(described.stages) == 0
                                         else "describe the model that runs"))
    options = dict(time_limit_s=args.time_limit, executor=args.executor, parallel=args.parallel, address=args.address,
                   deterministic=args.deterministic, seed=args.seed, runtime=args.runtime,
                   progress=lambda line: print(line, file=sys.stderr, flush=True))
    for degree in model.num_ranks:  # a description's entries in layers: its one degree, by plan()
        result = plan_layers(model, num_ranks=degree, **options) if model is described else plan(described, **options)
        print(result.table())
        if args.out:
            from pathlib import Path

            out = Path(args.out) / f"p{degree}" if len(model.num_ranks) > 1 else Path(args.out)
            from schedsearch.plan.torchtitan import not_written

            paths = result.write(out, torchtitan_config=args.torchtitan_config,
                                 torchtitan_module=args.torchtitan_module)
            print(f"plan written: {result.best.candidate.label} on {result.configuration.label()} "
                  f"({result.best.makespan_ms:g} ms), for {RUNTIMES[args.runtime]}")
            for kind, where in paths.items():
                print(f"wrote {where}  ({_WHAT.get(kind, kind)})")
            for line in not_written(paths["table"]):
                print(f"not written: {line}")
    return 0


_WHAT = {
    "csv": "torch's compute-only schedule",
    "torchtitan": "torchtitan's command-line overrides, one per line",
    "train": "the torchtitan launch line: MODULE=... CONFIG=... ./train.sh",
    "trace": "Perfetto trace, real time",
    "json": "problem, schedule and plan metadata",
    "gantt": "Gantt picture",
    "table": "the ranked table",
}
