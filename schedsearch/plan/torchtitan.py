"""The files a torchtitan user launches, for a plan of :func:`schedsearch.plan`.

torchtitan (checked: :data:`TORCHTITAN_VERSION` with torch
:data:`TORCH_VERSION`) reads no settings file: its trainer takes
``--module NAME --config FUNCTION`` (a Python config function of the model)
and command-line overrides that its ``ConfigManager().parse_args`` reads.
:func:`torchtitan_overrides` gives those overrides for a plan, one per
line in ``torchtitan.args``:

* ``--parallelism.pipeline_parallel_degree``: the plan's ranks;
* ``--parallelism.pipeline_parallel_schedule``: a class that places the
  stages on the ranks as the plan does. torchtitan places them "V"-style
  (rank ``r`` holds stages ``r`` and ``2P-1-r``) only for ``ZBVZeroBubble``
  and ``DualPipeV``, and "loop"-style (rank ``r`` holds ``r, r+P, ...``)
  for every other name; with a CSV it runs torch's CSV-loading runtime
  whatever the name, so the name only chooses the placement:
  ``PipelineScheduleSingle`` (one stage per rank), ``PipelineScheduleMulti``
  (several, loop) or the V class of the plan's family (its record's
  ``torchtitan_schedule``, :mod:`schedsearch.handcrafted.families`);
* ``--parallelism.pipeline_parallel_schedule_csv``: the absolute path of
  ``schedule.csv`` (torchtitan resolves a relative one against the launch
  folder);
* ``--parallelism.pipeline_parallel_microbatch_size`` and
  ``--training.local_batch_size`` (= micro-batches x micro-batch size: the
  real per-rank batch);
* ``--training.disable_cuda_graphs``: torchtitan refuses to start a
  pipeline of more than one rank without it;
* ``activation_checkpoint:none`` (last: torchtitan's parser reads what
  follows a subcommand as its options) for a split backward (``I`` and
  ``W``): torchtitan's default selective activation checkpointing allows
  one backward per checkpointed region and fails on the second; the stage
  times of the description are those of a step without recomputation, as
  ``schedsearch profile`` measures them;
* the split in torchtitan's terms. torchtitan counts the layers of a stage
  as its transformer layers plus one for the embedding (first stage) and one
  for the output (last stage), less
  ``pipeline_parallel_first_stage_less_layers`` /
  ``..._last_stage_less_layers``. When its rule gives exactly the plan's
  split, the overrides set ``pipeline_parallel_layers_per_stage`` and both
  adjustments; otherwise ``module_fqns_per_model_part`` lists each stage's
  modules (``tok_embeddings``, ``layers.i``, ``norm``, ``lm_head``).

The split reads each entry of the pipeline description (a layer with
``partition = "dp"``, a stage otherwise) as one transformer layer of the
model, the first also holding the embedding and the last the norm and the
output; ``train.sh`` checks that the model's layer count matches before it
launches. A plan that torchtitan cannot run as written (two model
replicas, micro-batches of different sizes) gets no ``torchtitan.args``
and the reason is given instead.

:func:`write_plan_outputs` writes everything: ``schedule.csv``,
``torchtitan.args``, ``train.sh``, a Perfetto trace and a Gantt picture in
milliseconds, the plan JSON (with the units in its metadata) and the table.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any

from schedsearch.errors import FormatError, InvalidOptionsError, SchedSearchError, UnsupportedFeatureError
from schedsearch.handcrafted.families import family as family_record

__all__ = ["TORCHTITAN_VERSION", "TORCH_VERSION", "not_written", "torchtitan_overrides", "torchtitan_schedule_name",
           "torchtitan_split", "train_script", "write_plan_outputs"]

#: The torchtitan release whose configuration these files are written for (read and run in the integration test).
TORCHTITAN_VERSION = "0.3.0"
#: The torch release the integration test ran torchtitan with.
TORCH_VERSION = "2.13.0"


def torchtitan_schedule_name(family: str, layout: str, stages_per_rank: int) -> str:
    """The ``pipeline_parallel_schedule`` name that makes torchtitan place the stages as the plan does.

    Examples
    --------
    >>> from schedsearch.plan.torchtitan import torchtitan_schedule_name
    >>> torchtitan_schedule_name("1f1b", "loop", 1), torchtitan_schedule_name("interleaved", "loop", 2)
    ('PipelineScheduleSingle', 'PipelineScheduleMulti')
    >>> torchtitan_schedule_name("zb-v", "v", 2)
    'ZBVZeroBubble'
    """
    if layout == "v":
        if stages_per_rank != 2:
            raise FormatError(f"torchtitan: its V placement holds 2 stages per rank, the plan has {stages_per_rank}")
        name = family_record(family).torchtitan_schedule
        if name is None:
            raise FormatError(f"torchtitan: family {family!r} names no schedule that places its stages 'v' style")
        return name
    if layout != "loop":
        raise FormatError(f"torchtitan: it places stages 'loop' or 'v' style, not {layout!r}")
    return "PipelineScheduleSingle" if stages_per_rank == 1 else "PipelineScheduleMulti"


def _stage_modules(groups: list[list[int]]) -> list[list[str]]:
    """Each stage's torchtitan modules: entry ``i`` is ``layers.i``; embedding first, norm and output last."""
    out = []
    for k, group in enumerate(groups):
        names = [f"layers.{i}" for i in group]
        if k == 0:
            names.insert(0, "tok_embeddings")
        if k == len(groups) - 1:
            names += ["norm", "lm_head"]
        out.append(names)
    return out


def _rule_counts(num_stages: int, num_layers: int, less_first: int, less_last: int) -> list[int] | None:
    """Transformer layers per stage under torchtitan's even split, or None when it refuses these numbers."""
    effective = num_layers + less_first + less_last
    base, extra = divmod(effective, num_stages)
    if base == 0 or less_first > base or less_last > base:
        return None
    counts = [base + (k < extra) for k in range(num_stages)]
    counts[0] -= less_first
    counts[-1] -= less_last
    return counts if min(counts) >= 0 and sum(counts) == num_layers else None


def torchtitan_split(groups: list[list[int]]) -> list[str]:
    """The split overrides for stages holding the description entries ``groups`` (one transformer layer each).

    ``pipeline_parallel_layers_per_stage`` with both end adjustments when
    torchtitan's own rule gives exactly these stages (the defaults of 1 are
    tried first), else ``module_fqns_per_model_part``.

    Examples
    --------
    >>> from schedsearch.plan.torchtitan import torchtitan_split
    >>> torchtitan_split([[0, 1], [2, 3], [4, 5]])  # 2 layers per stage: the ends count embedding and output
    ['--parallelism.pipeline_parallel_layers_per_stage=2', '--parallelism.pipeline_parallel_first_stage_less_layers=0', '--parallelism.pipeline_parallel_last_stage_less_layers=0']
    >>> torchtitan_split([[0, 1, 2], [3], [4, 5]])  # no layers-per-stage setting gives 3, 1, 2
    ['--parallelism.module_fqns_per_model_part', 'tok_embeddings,layers.0,layers.1,layers.2', 'layers.3', 'layers.4,layers.5,norm,lm_head']
    """
    S, L = len(groups), sum(len(g) for g in groups)
    if S > 1 and [i for g in groups for i in g] == list(range(L)):
        want = [len(g) for g in groups]
        for less_first, less_last in [(1, 1)] + [(a, b) for a in range(L + 1) for b in range(L + 1) if (a, b) != (1, 1)]:
            if _rule_counts(S, L, less_first, less_last) != want:
                continue
            effective = L + less_first + less_last
            # torchtitan derives the stage count as ceil(effective / layers_per_stage)
            per_stage = next((n for n in range(1, effective + 1) if math.ceil(effective / n) == S), None)
            if per_stage is not None:
                return [f"--parallelism.pipeline_parallel_layers_per_stage={per_stage}",
                        f"--parallelism.pipeline_parallel_first_stage_less_layers={less_first}",
                        f"--parallelism.pipeline_parallel_last_stage_less_layers={less_last}"]
    return ["--parallelism.module_fqns_per_model_part", *(",".join(m) for m in _stage_modules(groups))]


def _microbatch_size(pipeline: Any, microbatch_size: int | None) -> int:
    sizes = pipeline.microbatch_sizes
    if sizes is not None and len(set(sizes)) > 1:
        raise FormatError(
            "torchtitan cuts the per-rank batch into equal micro-batches of pipeline_parallel_microbatch_size; "
            f"the description's micro-batches differ in size ({', '.join(f'{s:g}' for s in sizes)})")
    if microbatch_size is None:
        return int(sizes[0]) if sizes is not None and float(sizes[0]).is_integer() else 1
    _check_microbatch_size(microbatch_size)
    return microbatch_size


def _check_microbatch_size(microbatch_size: Any) -> None:
    if microbatch_size is not None and (isinstance(microbatch_size, bool) or not isinstance(microbatch_size, int)
                                        or microbatch_size < 1):
        raise InvalidOptionsError(f"torchtitan settings: microbatch_size must be a positive integer (samples per "
                                  f"micro-batch), got {microbatch_size!r}")


def torchtitan_overrides(result: Any, csv_path: str | Path, *, microbatch_size: int | None = None) -> list[list[str]]:
    """torchtitan's command-line overrides for the best plan of ``result`` (a :class:`~schedsearch.plan.planner.PlanResult`).

    One list of argument words per override (the flag, then its values), in
    the order ``torchtitan.args`` lists them; ``csv_path`` is made absolute.
    Raises :class:`~schedsearch.errors.FormatError` saying why when
    torchtitan cannot run the plan as written.

    Examples
    --------
    >>> import schedsearch
    >>> from schedsearch.plan.torchtitan import torchtitan_overrides
    >>> pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"],
    ...     stages=[{"forward_ms": 1.0, "backward_ms": 2.0}] * 2)
    >>> result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1)
    >>> for words in torchtitan_overrides(result, "/plans/schedule.csv", microbatch_size=2):
    ...     print(" ".join(words))
    --parallelism.pipeline_parallel_degree=2
    --parallelism.pipeline_parallel_schedule=PipelineScheduleSingle
    --parallelism.pipeline_parallel_schedule_csv=/plans/schedule.csv
    --parallelism.pipeline_parallel_microbatch_size=2
    --training.local_batch_size=8
    --parallelism.pipeline_parallel_layers_per_stage=2
    --parallelism.pipeline_parallel_first_stage_less_layers=1
    --parallelism.pipeline_parallel_last_stage_less_layers=1
    --training.disable_cuda_graphs
    """
    best = result.best
    if best is None:
        raise SchedSearchError("torchtitan settings: the plan has no schedule (no candidate fitted in time)")
    cand, pipeline = best.candidate, result.pipeline
    if cand.record.two_pipelines:
        raise FormatError("torchtitan runs one model replica with each stage on one rank; "
                          f"{best.family} needs two copies of every stage's parameters")
    P = pipeline.num_ranks
    name = torchtitan_schedule_name(cand.family, cand.layout, len(result.layers) // P)
    mbs = _microbatch_size(pipeline, microbatch_size)
    m = pipeline.num_microbatches
    words = [
        [f"--parallelism.pipeline_parallel_degree={P}"],
        [f"--parallelism.pipeline_parallel_schedule={name}"],
        [f"--parallelism.pipeline_parallel_schedule_csv={Path(csv_path).resolve()}"],
        [f"--parallelism.pipeline_parallel_microbatch_size={mbs}"],
        [f"--training.local_batch_size={m * mbs}"],
    ]
    split = torchtitan_split([list(g) for g in result.layers])
    if split[0].startswith("--parallelism.module_fqns_per_model_part"):
        words.append(split)
    else:
        words += [[w] for w in split]
    # a flag after module_fqns_per_model_part ends its list of values (else a subcommand would join it)
    words.append(["--training.disable_cuda_graphs"])
    if cand.split_backward:
        # torchtitan's selective checkpointing allows one backward per region, a split backward runs two;
        # a subcommand ends the options, so it goes last
        words.append(["activation_checkpoint:none"])
    return words


def train_script(result: Any, overrides: list[list[str]]) -> str:
    """``train.sh``: torchtitan's whole launch line for the plan, with a check of the model's layer count.

    ``MODULE`` and ``CONFIG`` (environment) name the torchtitan model module
    and config function; extra arguments are passed on to torchtitan.
    """
    best, pipeline = result.best, result.pipeline
    P = pipeline.num_ranks
    layers = sum(len(g) for g in result.layers)
    flat = " \\\n  ".join(" ".join(shlex.quote(w) for w in o) for o in overrides)
    return f"""#!/usr/bin/env bash
# torchtitan {TORCHTITAN_VERSION} (with torch {TORCH_VERSION}) launch for the schedsearch plan {best.family!r}:
# makespan {best.makespan_ms:g} ms, peak {max(best.peak_gib):.3g} GiB on the worst rank, {len(result.layers)} stages on {P} ranks.
# Set MODULE and CONFIG to your torchtitan model module and config function (e.g. MODULE=llama3
# CONFIG=llama3_8b); its model must have {layers} transformer layers, one per entry of the pipeline
# description. Arguments to this script go to torchtitan before the plan's settings (which win).
set -euo pipefail
: "${{MODULE:?set MODULE to your torchtitan model module, e.g. MODULE=llama3}}"
: "${{CONFIG:?set CONFIG to its config function, e.g. CONFIG=llama3_8b}}"
python - "$MODULE" "$CONFIG" <<'EOF'
import sys
from torchtitan.config import ConfigManager
config = ConfigManager().parse_args(["--module", sys.argv[1], "--config", sys.argv[2]])
n = len(config.model_spec.model.layers)
if n != {layers}:
    sys.exit(f"train.sh: {{sys.argv[1]}} {{sys.argv[2]}} has {{n}} transformer layers; this plan splits {layers} "
             "(one per entry of the pipeline description)")
EOF
exec torchrun --nproc_per_node={P} --rdzv_backend c10d --rdzv_endpoint=localhost:0 \\
  -m torchtitan.train --module "$MODULE" --config "$CONFIG" "$@" \\
  {flat}
"""


def write_plan_outputs(result: Any, out_dir: str | Path, *, microbatch_size: int | None = None) -> dict[str, Path]:
    """Write the best plan of ``result`` into ``out_dir``; return the paths by kind.

    ``schedule.csv`` (``csv``: compute-only, torch's format),
    ``torchtitan.args`` (``torchtitan``: torchtitan's overrides, one per
    line), ``train.sh`` (``train``: the launch line), ``trace.json``
    (Perfetto, real microseconds), ``gantt.png`` (when matplotlib is
    installed), ``plan.json`` (problem, schedule and the plan's metadata:
    units, family, stages, table) and ``plan.txt`` (the table). A file that
    cannot be written for this plan is left out and ``plan.txt`` ends with
    ``not written: FILE: why`` for it; :func:`not_written` reads those back.
    """
    from schedsearch.export.chrome import chrome_trace
    from schedsearch.export.json import write_json
    from schedsearch.export.torch_csv import write_torch_csv

    _check_microbatch_size(microbatch_size)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    notes: list[str] = []
    text = result.table()
    if result.best is None:
        (out / "plan.txt").write_text(text + "\n")
        return {"table": out / "plan.txt"}
    problem, schedule, units = result.problem, result.schedule, result.units
    meta = result.metadata()
    gap = result.best.candidate.record.runtime_gap("torch")
    try:
        if gap:
            raise FormatError(gap)
        paths["csv"] = write_torch_csv(problem, schedule, out / "schedule.csv")
    except SchedSearchError as exc:
        notes.append(f"schedule.csv, torchtitan.args, train.sh: {result.best.family} {exc}" if gap else
                     f"schedule.csv, torchtitan.args, train.sh: {result.best.family} cannot be written as torch's "
                     f"CSV: {exc}")
    else:
        try:
            overrides = torchtitan_overrides(result, paths["csv"], microbatch_size=microbatch_size)
        except SchedSearchError as exc:
            notes.append(f"torchtitan.args, train.sh: {exc}")
        else:
            paths["torchtitan"] = out / "torchtitan.args"
            paths["torchtitan"].write_text("".join(" ".join(shlex.quote(w) for w in o) + "\n" for o in overrides))
            paths["train"] = out / "train.sh"
            paths["train"].write_text(train_script(result, overrides))
            paths["train"].chmod(0o755)
    trace = chrome_trace(problem, schedule, time_unit_us=units.time_unit_ms * 1000.0, name=problem.name)
    trace.setdefault("otherData", {}).update({"units": units.to_dict(), "family": result.best.family})
    paths["trace"] = out / "trace.json"
    paths["trace"].write_text(json.dumps(trace))
    paths["json"] = write_json(problem, schedule, out / "plan.json", meta=meta)
    try:
        paths["gantt"] = _gantt(result, out / "gantt.png")
    except (ImportError, UnsupportedFeatureError):
        notes.append("gantt.png: matplotlib is not installed (pip install 'schedsearch[plot]')")
    paths["table"] = out / "plan.txt"
    paths["table"].write_text(text + "\n" + "".join(f"not written: {n}\n" for n in notes))
    return paths


def not_written(table_path: str | Path) -> list[str]:
    """The ``not written: FILE: why`` lines of a ``plan.txt`` written by :func:`write_plan_outputs`, without the prefix."""
    return [line[len("not written: "):] for line in Path(table_path).read_text().splitlines()
            if line.startswith("not written: ")]


def _gantt(result: Any, path: Path) -> Path:
    from schedsearch.export.plot import plot_schedule

    fig = plot_schedule(result.problem, result.schedule, title=f"{result.best.family}: {result.best.makespan_ms:g} ms",
                        fold_channels=True)  # the transfers of every channel in one row: 8 ranks stay readable
    from matplotlib.ticker import FuncFormatter

    unit = result.units.time_unit_ms
    ax = fig.axes[0]
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x * unit:g}"))
    ax.set_xlabel("time (ms)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
