"""Predicted against measured step time on real compute, before and after calibrating the model on this machine.

Two ranks of one thread each (gloo on loopback) run the built-in
transformer (``--model``, split into two stages) with torch's pipeline
runtime. The model is profiled (each stage's F, B, I, W on one
micro-batch: :func:`~schedsearch.runtime.profile`), and three plans are
made from the profiled pipeline: 1F1B and ZB-H1 (the published
schedules) and the searched plan (:func:`schedsearch.plan`, deterministic,
one worker). Then the machine is calibrated
(:func:`~schedsearch.runtime.calibrate.calibrate`: the gloo link's latency
and bandwidth, the runtime's overhead per action and per step) and the
three plans are made again from the calibrated pipeline.

Every distinct plan runs ``--rounds`` times ``--steps`` steps
(:func:`~schedsearch.runtime.run`, gradients checked against one
process); its measured step time is the median over the steps after each
run's first. The predicted step time is the plan's makespan in ms of the
pipeline's own times (:func:`~schedsearch.runtime.calibrate.family_plan`,
``plan()``'s ``makespan_ms``), after calibration plus the fixed cost per
step. The table gives, before and after side by side, predicted,
measured and their ratio; and for each pair of plans whose predictions
differ by more than 5%, whether the measured order agrees.

Where the rest of the difference comes from: the 1F1B plan runs once
more under ``torch.profiler``
(:func:`~schedsearch.runtime.profiler_traces.record_traces`) and each
stage's F and B as the run computes them (from the data's arrival,
:func:`~schedsearch.runtime.profiler_traces.pipeline_from_traces`) are
printed against the profiled ones (the profiler itself slows each
operator: an upper bound).

Goals: every ratio within 10% of 1 after calibration; every pair whose
predictions differ by more than 5% measured in the predicted order. The
machine's load average is printed before and after: on a shared machine
the wall times move with it; read the ratios measured in one run.
Run: ``python -m benchmarks calibration`` (``--quick``: fewer steps and
a smaller model).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time
from typing import Any

from benchmarks._common import print_table, write_results

PLANS = ("1F1B", "ZB-H1", "searched")


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _plans(pipeline: Any, time_limit_s: float) -> dict[str, tuple[Any, Any, float]]:
    """(problem, schedule, predicted makespan ms) of 1F1B, ZB-H1 and the searched plan of ``pipeline``."""
    from schedsearch import plan
    from schedsearch.runtime.calibrate import family_plan

    out = {name: family_plan(pipeline, name) for name in ("1F1B", "ZB-H1")}
    result = plan(pipeline, time_limit_s=time_limit_s, parallel=1, deterministic=True, seed=0)
    out["searched"] = (result.problem, result.schedule, float(result.best.makespan_ms))
    return out


def _compute_in_run(made: tuple[Any, Any, float], workload: Any, base: Any) -> list[tuple[float, float]]:
    """Per stage, (F, B) as the run computes them (traced) over the profiled times."""
    import tempfile

    from schedsearch.runtime import plan_from_schedule
    from schedsearch.runtime.profiler_traces import pipeline_from_traces, record_traces

    with tempfile.TemporaryDirectory(prefix="bench-calibration-") as folder:
        record_traces(plan_from_schedule(made[0], made[1]), workload, folder, steps=3, warmup_steps=1)
        traced = pipeline_from_traces(folder)
    return [(t.forward_ms / s.forward_ms, t.backward_ms / s.backward_ms) for t, s in zip(traced.stages, base.stages)]


def _agreement(rows: list[dict[str, Any]], predicted: str, measured: str) -> tuple[int, int, list[str]]:
    """Pairs whose predictions differ by more than 5%: how many, how many measured in that order, which not."""
    pairs = agree = 0
    wrong = []
    for a, b in itertools.combinations(rows, 2):
        pa, pb = a[predicted], b[predicted]
        if abs(pa - pb) <= 0.05 * min(pa, pb):
            continue
        pairs += 1
        if (pa < pb) == (a[measured] < b[measured]):
            agree += 1
        else:
            wrong.append(f"{a['plan']} vs {b['plan']}")
    return pairs, agree, wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="transformer:8x128", help="built-in model (default transformer:8x128)")
    parser.add_argument("--microbatches", type=int, default=8, help="micro-batches per step (default 8)")
    parser.add_argument("--microbatch-size", type=int, default=8, help="samples per micro-batch (default 8)")
    parser.add_argument("--steps", type=int, default=8, help="steps per run (default 8; the first is left out)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each plan, interleaved (default 2)")
    parser.add_argument("--time-limit", type=float, default=20.0, help="plan()'s deterministic time (default 20)")
    parser.add_argument("--quick", action="store_true", help="transformer:4x64, 4 steps, one round")
    args = parser.parse_args(argv)

    from schedsearch import Pipeline
    from schedsearch.runtime import build_workload, plan_from_schedule, profile, run, torch_available
    from schedsearch.runtime.calibrate import calibrate

    if not torch_available():
        print("bench_calibration needs PyTorch: install the optional extra schedsearch[torch]")
        return 0
    if args.quick:
        args.model, args.steps, args.rounds = "transformer:4x64", 4, 1
    load_before = _load()
    print(f"load average (1/5/15 min) before: {load_before}")
    m, n = args.microbatches, args.microbatch_size
    workload = build_workload(args.model, 2, batch_size=m * n, dtype="float32")
    prof = profile(workload.stages, workload.inputs, target=workload.target, loss_fn=workload.loss_fn, sizes=[n],
                   repeats=7)
    print(prof.table())
    base = Pipeline.from_profile(prof, num_ranks=2, num_microbatches=m, families=["1f1b"],
                                 name=f"{args.model} 2 ranks")
    t0 = time.perf_counter()
    calibration, overhead = calibrate()
    print(f"{calibration} (measured in {time.perf_counter() - t0:.1f} s)")
    calibrated = calibration.apply(base)
    before = _plans(base, args.time_limit)
    after = _plans(calibrated, args.time_limit)

    plans: dict[str, Any] = {}  # CSV text -> runnable plan; plans that are the same run once
    key: dict[tuple[str, str], str] = {}
    for side, made in (("before", before), ("after", after)):
        for name, (problem, schedule, _) in made.items():
            runnable = plan_from_schedule(problem, schedule, name=f"{name} ({side})")
            plans.setdefault(runnable.text, runnable)
            key[(side, name)] = runnable.text
    times: dict[str, list[float]] = {text: [] for text in plans}
    equal = True
    for _ in range(args.rounds):
        for text, runnable in plans.items():
            result = run(runnable, workload, steps=args.steps, timeout_s=300)
            equal &= result.grads_equal
            times[text].extend(result.step_times_s[1:] if args.steps > 1 else result.step_times_s)
    measured = {text: 1e3 * statistics.median(ts) for text, ts in times.items()}
    in_run = _compute_in_run(before["1F1B"], workload, base)
    load_after = _load()

    rows = []
    for name in PLANS:
        pb, pa = before[name][2], calibration.step_ms(after[name][2])
        mb, ma = measured[key[("before", name)]], measured[key[("after", name)]]
        rows.append({"plan": name, "pred_before_ms": pb, "meas_before_ms": mb, "ratio_before": mb / pb,
                     "pred_after_ms": pa, "meas_after_ms": ma, "ratio_after": ma / pa,
                     "same_plan": key[("before", name)] == key[("after", name)]})
    print(f"\n{args.model}, 2 ranks x 1 thread, {m} micro-batches of {n}; {args.rounds} x {args.steps} steps per plan; "
          f"ratio = measured / predicted")
    print_table(rows, ["plan", "pred_before_ms", "meas_before_ms", "ratio_before", "pred_after_ms", "meas_after_ms",
                       "ratio_after", "same_plan"])
    verdicts = {}
    for side in ("before", "after"):
        pairs, agree, wrong = _agreement(rows, f"pred_{side}_ms", f"meas_{side}_ms")
        within = sum(abs(r[f"ratio_{side}"] - 1) <= 0.10 for r in rows)
        verdicts[side] = {"within_10pct": within, "pairs_over_5pct": pairs, "pairs_in_order": agree}
        print(f"{side} calibration: {within}/{len(rows)} plans within 10%; {agree}/{pairs} pairs whose predictions "
              f"differ by > 5% measured in that order" + (f" (not: {', '.join(wrong)})" if wrong else ""))
    print(f"overhead fit: {[(s[0], round(s[1], 3), round(s[2] + overhead.step_ms, 3)) for s in overhead.samples]} "
          f"(micro-batches, measured ms, fitted ms)")
    print("compute in the run (1F1B traced) over the profiled: " + ", ".join(
        f"stage {k} F x{f:.2f} B x{b:.2f}" for k, (f, b) in enumerate(in_run)))
    print(f"load average (1/5/15 min) before: {load_before}, after: {load_after}")
    print(f"every run's gradients equal to one process's: {equal}")
    write_results("calibration", rows, model=args.model, microbatches=m, microbatch_size=n, steps=args.steps,
                  rounds=args.rounds, calibration=calibration.to_dict(), verdicts=verdicts,
                  load_before=load_before, load_after=load_after, profile=prof.to_dict(),
                  compute_in_run_over_profiled=[list(x) for x in in_run])
    return 0 if equal else 1


if __name__ == "__main__":
    raise SystemExit(main())
