"""The PyTorch runtime matrix: every schedule torch can express, executed, gradients checked.

Each row builds a plan, checks it (this library's checks and PyTorch's
``_validate_schedule`` / ``_add_send_recv``), runs ``--steps`` training
steps of a float64 model on one process per rank (fork, gloo on loopback)
with PyTorch's ``_PipelineScheduleRuntime`` loading the compute-only CSV,
and compares every gradient with a one-process reference step.

Rows: the handcrafted GPipe, 1F1B, interleaved 1F1B, interleaved ZB,
ZB-H1, ZB-V and DualPipeV (with its overlapped F&B pairs) through the
project's CSV export; PyTorch's own DualPipeV artifact; fewer micro-batches
than stages; micro-batches of different sizes; schedules found by the
optimal search (and the repetend search when this build has it) on the
1F1B, zero-bubble, interleaved, ZB-V and DualPipeV placements under a
memory limit; and the placements torch cannot run (Chimera, DualPipe: two
model replicas), which must be rejected before any process starts.

Target: every runnable row has ``grads_equal`` with max difference
<= 1e-12; every rejected row names the reason. Step time is the median of
steps 2.. (the slowest rank's), on a shared 2-core machine: read it as
a relative figure. Run: ``python -m benchmarks runtime`` (``--quick``: a
subset).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from benchmarks._common import print_table, write_results


def _cases(quick: bool) -> list[tuple[str, str, Callable[[], Any], dict[str, Any]]]:
    """(schedule, placement, builder of a CsvPlan or (problem, schedule), run options)."""
    from pathlib import Path

    from schedsearch.handcrafted import reproduce
    from schedsearch.placements import dualpipev, interleaved, vshape, vshape_chunks, zero_bubble
    from schedsearch.runtime import read_plan

    def handcrafted(name: str, **params: Any) -> Callable[[], Any]:
        def build() -> Any:
            rep = reproduce(name, **params)
            return rep.problem, rep.schedule

        return build

    def searched(make_problem: Callable[[], Any], strategy: str) -> Callable[[], Any]:
        def build() -> Any:
            problem = make_problem()
            if strategy == "optimal":
                from schedsearch.search import optimal

                result = optimal(problem, time_limit_s=30, workers=2, seed=0)
            else:
                from schedsearch.search.repetend_search import repetend  # type: ignore[import-not-found]

                result = repetend(problem, time_limit_s=60, workers=2, seed=0)
            if result.schedule is None:
                raise RuntimeError(f"{strategy} search found no schedule: {result}")
            return problem, result.schedule

        return build

    artifact = Path(__file__).resolve().parents[1] / "tests" / "export" / "data" / "dualpipev_4rank_10mb.csv"
    cases: list[tuple[str, str, Callable[[], Any], dict[str, Any]]] = [
        ("1F1B", "V-shape (loop)", handcrafted("1f1b"), {}),
        ("DualPipeV", "DualPipeV (v, F&B pairs)", handcrafted("dualpipev"), {}),
    ]
    if artifact.exists():
        cases.append(("DualPipeV (PyTorch artifact)", "v", lambda: read_plan(artifact), {}))
    if quick:
        return cases
    cases += [
        ("GPipe", "V-shape (loop)", handcrafted("gpipe"), {}),
        ("interleaved 1F1B", "interleaved v=2 (loop)", handcrafted("interleaved"), {}),
        ("interleaved ZB", "interleaved v=2 (loop), I/W", handcrafted("interleaved-zb"), {}),
        ("ZB-H1", "zero bubble (loop), I/W", handcrafted("zb-h1"), {}),
        ("ZB-V", "V chunks (v), I/W", handcrafted("zb-v"), {}),
        ("1F1B, m < p", "V-shape (loop)", handcrafted("1f1b", microbatches=2), {}),
        ("ZB-V, m < p", "V chunks (v), I/W", handcrafted("zb-v", microbatches=3), {}),
        ("ZB-H1, sizes 2..6", "zero bubble (loop), I/W", handcrafted("zb-h1"),
         {"microbatch_sizes": [2, 6, 3, 5, 4, 4, 2, 6]}),
        ("optimal, mem 2", "V-shape (loop)", searched(lambda: vshape(4, 8, memory=2), "optimal"), {}),
        ("optimal, mem 3", "zero bubble (loop), I/W",
         searched(lambda: zero_bubble(4, 8, input_grad=1, weight_grad=1, memory=3), "optimal"), {}),
        ("optimal, mem 4", "interleaved v=2 (loop)",
         searched(lambda: interleaved(4, 2, 8, memory=4), "optimal"), {}),
        ("optimal, mem 6", "V chunks (v), I/W", searched(lambda: vshape_chunks(4, 8, memory=6), "optimal"), {}),
        ("optimal, mem 8", "DualPipeV (v, F&B pairs)", searched(lambda: dualpipev(4, 6, memory=8), "optimal"), {}),
    ]
    try:
        from schedsearch.search.repetend_search import repetend  # type: ignore[import-not-found]  # noqa: F401

        cases += [
            ("repetend, mem 3", "V-shape (loop)", searched(lambda: vshape(4, 16, memory=3), "repetend"), {}),
            ("repetend, mem 6", "V chunks (v), I/W", searched(lambda: vshape_chunks(4, 16, memory=6), "repetend"), {}),
        ]
    except ImportError:
        pass
    cases += [
        ("Chimera", "two replicas (bidirectional)", handcrafted("chimera"), {}),
        ("DualPipe", "two replicas (bidirectional)", handcrafted("dualpipe"), {}),
    ]
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1F1B and DualPipeV only")
    parser.add_argument("--steps", type=int, default=3, help="training steps per row (default 3)")
    parser.add_argument("--model", default="mlp", choices=("mlp", "transformer"), help="model kind (default mlp)")
    parser.add_argument("--width", type=int, default=32, help="model width (default 32)")
    args = parser.parse_args(argv)

    from schedsearch.errors import PlanError
    from schedsearch.runtime import CsvPlan, build_workload, plan_from_schedule, run, torch_available

    if not torch_available():
        print("bench_runtime needs PyTorch: install the optional extra schedsearch[torch]")
        return 0
    rows = []
    for schedule_name, placement, build, options in _cases(args.quick):
        row: dict[str, Any] = {"schedule": schedule_name, "placement": placement}
        t0 = time.perf_counter()
        try:
            built = build()
            plan = built if isinstance(built, CsvPlan) else plan_from_schedule(*built)
        except PlanError as exc:
            row.update(status="rejected before start", reason=str(exc))
            rows.append(row)
            continue
        sizes = options.get("microbatch_sizes")
        batch = sum(sizes) if sizes else 4 * plan.num_microbatches
        layers = max(8, plan.num_stages)
        workload = build_workload(f"{args.model}:{layers}x{args.width}", plan.num_stages, batch_size=batch)
        result = run(plan, workload, steps=args.steps, timeout_s=120, **options)
        row.update(
            status="ran",
            processes=plan.num_ranks,
            stages=plan.num_stages,
            stage_map=plan.style or ",".join(map(str, plan.stage_to_rank)),
            microbatches=plan.num_microbatches,
            sizes="even" if len(set(result.microbatch_sizes)) == 1 else ",".join(map(str, result.microbatch_sizes)),
            max_grad_diff=result.max_grad_diff,
            grads_equal=result.grads_equal,
            step_time_ms=1e3 * result.step_time_s,
            wall_s=time.perf_counter() - t0,
        )
        rows.append(row)
    print_table(
        [r for r in rows if r["status"] == "ran"],
        ["schedule", "placement", "processes", "stages", "stage_map", "microbatches", "sizes", "max_grad_diff",
         "grads_equal", "step_time_ms", "wall_s"],
    )
    for r in rows:
        if r["status"] != "ran":
            print(f"{r['schedule']} ({r['placement']}): {r['status']}: {r['reason']}")
    ok = all(r["grads_equal"] for r in rows if r["status"] == "ran")
    print(f"every executed row has equal gradients: {ok}")
    write_results("runtime", rows, steps=args.steps, model=args.model, width=args.width)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
