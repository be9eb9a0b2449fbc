"""The files a torchtitan user drops in, for a plan of :func:`schedsearch.plan`.

:func:`torchtitan_settings` gives the TOML snippet of torchtitan's
``[parallelism]`` settings that go with the compute-only CSV
(``pipeline_parallel_degree``, ``pipeline_parallel_schedule`` naming a
schedule class that loads a CSV, ``pipeline_parallel_schedule_csv``,
``pipeline_parallel_layers_per_stage`` when every stage holds as many layers,
the micro-batch count through ``[training] local_batch_size``), with the
layers of each stage and the stage-to-rank style in comments.
:func:`write_plan_outputs` writes everything: the CSV, the snippet, a
Perfetto trace and a Gantt picture in milliseconds, the plan JSON (with the
units in its metadata) and the table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schedsearch.errors import SchedSearchError, UnsupportedFeatureError

__all__ = ["torchtitan_settings", "write_plan_outputs"]


def torchtitan_settings(result: Any, *, csv_name: str = "schedule.csv", microbatch_size: int = 1) -> str:
    """The torchtitan TOML snippet for ``result`` (a :class:`~schedsearch.planner.PlanResult`) and its CSV.

    Examples
    --------
    >>> import schedsearch
    >>> from schedsearch.export.torchtitan import torchtitan_settings
    >>> pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"],
    ...     stages=[{"forward_ms": 1.0, "backward_ms": 2.0}] * 2)
    >>> print(torchtitan_settings(schedsearch.plan(pipeline, time_limit_s=20, workers=1)))  # doctest: +ELLIPSIS
    # torchtitan settings for the schedsearch plan '1F1B' (makespan 15 ms, ...)
    ...
    [parallelism]
    pipeline_parallel_degree = 2
    pipeline_parallel_schedule = "PipelineScheduleSingle"
    pipeline_parallel_schedule_csv = "schedule.csv"
    pipeline_parallel_microbatch_size = 1
    pipeline_parallel_layers_per_stage = 1
    <BLANKLINE>
    [training]
    local_batch_size = 4  # 4 micro-batches of 1
    """
    best = result.best
    if best is None:
        raise SchedSearchError("torchtitan settings: the plan has no schedule (no candidate fitted in time)")
    pipeline, cand = result.pipeline, best.candidate
    P = pipeline.num_ranks
    per_rank = len(result.stages) // P
    schedule_class = "PipelineScheduleSingle" if per_rank == 1 else "PipelineScheduleMulti"
    layer_names = [s.name or f"layer{i}" for i, s in enumerate(pipeline.stages)]
    lines = [
        f"# torchtitan settings for the schedsearch plan {best.family!r} (makespan {best.makespan_ms:g} ms, "
        f"peak {max(best.peak_gib):.3g} GiB on the worst rank, status {best.status})",
        f"# units: {result.units}",
        f"# {len(result.stages)} stages on {P} ranks, stage-to-rank style {cand.layout!r}:",
    ]
    from schedsearch.export.torch_csv import stage_to_rank

    ranks = stage_to_rank(result.problem)
    for k, group in enumerate(result.layers):
        names = layer_names[group[0]] if len(group) == 1 else f"{layer_names[group[0]]} .. {layer_names[group[-1]]}"
        lines.append(f"#   stage {k} on rank {ranks.get(k, '?')}: {len(group)} layer(s) ({names})")
    if cand.layout == "v":
        lines.append(
            "# torchtitan derives the stage-to-rank style from the schedule class ('v' for its V schedules, "
            "'loop' otherwise): build each rank's stages with style 'v' (stage_ids_this_rank(..., style='v'))"
        )
    lines += [
        "",
        "[parallelism]",
        f"pipeline_parallel_degree = {P}",
        f'pipeline_parallel_schedule = "{schedule_class}"',
        f'pipeline_parallel_schedule_csv = "{csv_name}"',
        f"pipeline_parallel_microbatch_size = {microbatch_size}",
    ]
    sizes = {len(g) for g in result.layers}
    if len(sizes) == 1:
        lines.append(f"pipeline_parallel_layers_per_stage = {sizes.pop()}")
    else:
        lines.append("# stages hold different numbers of layers: list each stage's modules in "
                     "module_fqns_per_model_part (one list per stage, in the order above)")
    m = pipeline.num_microbatches
    lines += ["", "[training]", f"local_batch_size = {m * microbatch_size}  # {m} micro-batches of {microbatch_size}"]
    return "\n".join(lines)


def write_plan_outputs(result: Any, out_dir: str | Path) -> dict[str, Path]:
    """Write the best plan of ``result`` into ``out_dir``; return the paths by kind.

    ``schedule.csv`` (compute-only, torch's format; left out, with the
    reason in ``plan.txt``, for a placement torch cannot express),
    ``torchtitan.toml``, ``trace.json`` (Perfetto, real microseconds),
    ``gantt.png`` (when matplotlib is installed), ``plan.json`` (problem,
    schedule and the plan's metadata: units, family, stages, table) and
    ``plan.txt`` (the table).
    """
    from schedsearch.export.chrome import chrome_trace
    from schedsearch.export.json import write_json
    from schedsearch.export.torch_csv import write_torch_csv

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
    try:
        paths["csv"] = write_torch_csv(problem, schedule, out / "schedule.csv")
        paths["torchtitan"] = out / "torchtitan.toml"
        paths["torchtitan"].write_text(torchtitan_settings(result) + "\n")
    except SchedSearchError as exc:
        notes.append(f"no torch CSV for {result.best.family}: {exc}")
    trace = chrome_trace(problem, schedule, time_unit_us=units.time_unit_ms * 1000.0, name=problem.name)
    trace.setdefault("otherData", {}).update({"units": units.to_dict(), "family": result.best.family})
    paths["trace"] = out / "trace.json"
    paths["trace"].write_text(json.dumps(trace))
    paths["json"] = write_json(problem, schedule, out / "plan.json", meta=meta)
    try:
        paths["gantt"] = _gantt(result, out / "gantt.png")
    except (ImportError, UnsupportedFeatureError) as exc:  # plotting without matplotlib
        notes.append(f"no Gantt picture: {exc}")
    paths["table"] = out / "plan.txt"
    paths["table"].write_text(text + "\n" + "".join(f"note: {n}\n" for n in notes))
    return paths


def _gantt(result: Any, path: Path) -> Path:
    from schedsearch.export.plot import plot_schedule

    fig = plot_schedule(result.problem, result.schedule, title=f"{result.best.family}: {result.best.makespan_ms:g} ms")
    from matplotlib.ticker import FuncFormatter

    unit = result.units.time_unit_ms
    ax = fig.axes[0]
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x * unit:g}"))
    ax.set_xlabel("time (ms)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
