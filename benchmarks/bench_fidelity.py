"""Predicted against measured: plans executed on PyTorch's runtime, step time compared with the makespan.

(a) Emulated compute (``run(..., emulate=True)``): every forward, backward,
input and weight gradient sleeps its planned duration while PyTorch's
``_PipelineScheduleRuntime`` orders the actions and moves real tensors
(``--activation-bytes`` per micro-batch, gloo on loopback). 4 and 8 ranks,
uneven stage times drawn from 20-60 ms (backward twice the forward, input
and weight gradient one forward each; seeded), ``--microbatches``
micro-batches (default 16), point-to-point time ``--p2p-ms`` per
transfer. Rows: 1F1B and ZB-H1 (one stage per rank), interleaved 1F1B
v=2 and ZB-V (two stages per rank, stage times drawn alike), and the plan
:func:`schedsearch.plan` finds for the two-stage-per-rank pipeline (every
family torch runs).

(b) Real compute, before calibration: the built-in transformer
(``--model``, default ``transformer:8x128``) split into one stage per rank,
on 2 and 4 ranks (``--real-ranks``) of one thread each (gloo on loopback). Profile (each stage alone, one
thread: :func:`schedsearch.runtime.profile`) -> pipeline -> plans -> run
-> compare, for 1F1B and ZB-H1 (the published schedules,
:func:`~schedsearch.runtime.calibrate.family_plan`) and the plan
:func:`schedsearch.plan` finds (deterministic, one worker).

(c) Real compute, after calibration: the 1F1B runs of (b)'s first
``--rounds`` rounds are the measured runs the model is calibrated on
(:func:`~schedsearch.runtime.calibrate.calibration_from_trace`: each
stage's F and B as the pipelined run computed them, the transfer of the
receives that waited, the gap per action, and the cost per step that
the calibrated 1F1B plan needs to predict those runs' median step), the
three plans are made again from the calibrated pipeline, and every
distinct plan of (b) and (c) runs ``--rounds`` more rounds, interleaved
(each round runs every plan once, in turn, so a drift of the load hits
all alike). Only those later runs are measured: the calibration does not
see the runs it predicts. When 1F1B then measures more than 5% off what
it took in the runs calibrated on (the machine's load moved in between),
the model is calibrated again on those latest 1F1B runs and every plan
is measured again (``--retries`` times, default 1); the ratio is printed. Each prediction is the library's, as ``run.json``
reports it: the plan's makespan in the pipeline's unrounded times (the
plan table's figure) plus the pipeline's cost per step (0 in (b), the
calibrated one in (c)); the columns give both parts.

For each row: predicted step time (makespan plus cost per step), measured (median
over the steps after the first: the slowest rank's step call), the ratio,
the median and 95th percentile of the actions' start error, the median
excess of a stage call over its planned duration (emulated: how late a
sleeping rank woke up), the breakdown
of the difference on the rank that finished last (compute, communication,
receive wait, overhead; ms, measured less planned), whether the measured
order was the plan's (the validator's order checks) and whether the
gradients equal a one-process reference. Goals: emulated within 3%,
real within 10%; where two plans' predictions differ by more than 5%, the
measured times order them alike (checked per part and printed).

The machine is shared: the load average (1, 5, 15 min) is printed and
recorded before and after each part and round. Run: ``python -m benchmarks
fidelity`` (``--part a`` or ``bc`` for one part; ``--quick``: (a) 4 ranks
only, 8 micro-batches, (b, c) a smaller model, fewer steps, one round).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from typing import Any

import attrs

from benchmarks._common import print_table, write_results

COLUMNS = ["part", "ranks", "microbatches", "plan", "predicted_ms", "makespan_ms", "step_overhead_ms", "measured_ms",
           "ratio", "start_err_med_ms",
           "start_err_p95_ms", "call_excess_ms", "d_compute_ms", "d_comm_ms", "d_recv_wait_ms", "d_overhead_ms", "order_ok",
           "grads_equal"]


def _row(part: str, label: str, problem: Any, result: Any) -> dict[str, Any]:
    fid = result.fidelity
    b = fid.median_step.breakdown
    return {
        "part": part,
        "ranks": result.num_processes,
        "microbatches": result.num_microbatches,
        "plan": label,
        "predicted_ms": 1e3 * fid.predicted_step_s,
        "makespan_ms": None if fid.prediction is None else fid.prediction.makespan_ms,
        "step_overhead_ms": None if fid.prediction is None else fid.prediction.step_overhead_ms,
        "measured_ms": 1e3 * fid.step_time_s,
        "ratio": fid.ratio,
        "start_err_med_ms": 1e3 * fid.start_error_median_s,
        "start_err_p95_ms": 1e3 * fid.start_error_p95_s,
        "call_excess_ms": 1e3 * fid.median_step.call_excess_median_s,
        "d_compute_ms": 1e3 * b.compute_s,
        "d_comm_ms": 1e3 * b.communication_s,
        "d_recv_wait_ms": 1e3 * b.receive_wait_s,
        "d_overhead_ms": 1e3 * b.overhead_s,
        "order_ok": result.order_as_planned,
        "grads_equal": result.grads_equal,
        "steps_ms": [round(1e3 * s.measured_s, 2) for s in fid.steps],
    }


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def emulated_pipelines(ranks: int, microbatches: int, seed: int, p2p_ms: float,
                       activation_bytes: int) -> dict[int, Any]:
    """Per stages-per-rank (1, 2), the pipeline description with seeded uneven stage times of 20-60 ms."""
    from schedsearch.plan.pipeline import Pipeline

    out = {}
    for chunks in (1, 2):
        rng = random.Random(f"{seed}-{ranks}-{chunks}")
        stages = []
        for s in range(ranks * chunks):
            f = float(rng.randint(20, 60))
            stages.append({"name": f"stage{s}", "forward_ms": f, "backward_ms": 2 * f, "input_grad_ms": f,
                           "weight_grad_ms": f, "activation_bytes": activation_bytes,
                           "parameter_bytes": 0})
        out[chunks] = Pipeline.from_dict({
            "name": f"emulated {ranks}x{chunks}", "num_ranks": ranks, "num_microbatches": microbatches,
            "stages": stages, "p2p": {"time_ms": p2p_ms},
            "families": ["1f1b"] if chunks == 1 else ["1f1b", "interleaved", "zb-v", "dualpipev"],
        })
    return out


def _family_problem(pipeline: Any, family: str, chunks: int, split: bool) -> Any:
    from schedsearch.plan.planner import Candidate, build_problem
    from schedsearch.plan.times import named_times
    from schedsearch.units import choose_units

    units = choose_units(named_times(pipeline, [pipeline.stages]), [s.activation_bytes for s in pipeline.stages])
    return build_problem(pipeline, Candidate(family=family, chunks=chunks, split_backward=split), pipeline.stages,
                         units)


def part_a(ranks_list: list[int], microbatches: int, seed: int, steps: int, p2p_ms: float, activation_bytes: int,
           plan_limit_s: float) -> list[dict[str, Any]]:
    from schedsearch import handcrafted as hc
    from schedsearch import plan
    from schedsearch.runtime import run_schedule

    rows = []
    for ranks in ranks_list:
        pipes = emulated_pipelines(ranks, microbatches, seed, p2p_ms, activation_bytes)
        cases = [
            ("1F1B", lambda: _family_problem(pipes[1], "1f1b", 1, False), hc.one_f_one_b),
            ("ZB-H1", lambda: _family_problem(pipes[1], "1f1b", 1, True), hc.zb_h1),
            ("interleaved 1F1B v=2", lambda: _family_problem(pipes[2], "interleaved", 2, False), hc.interleaved_1f1b),
            ("ZB-V", lambda: _family_problem(pipes[2], "zb-v", 2, True), hc.zb_v),
        ]
        for label, make, construct in cases:
            problem = make()
            schedule = construct(problem)
            result = run_schedule(problem, schedule, emulate=True, steps=steps, timeout_s=600)
            rows.append(_row("a emulated", label, problem, result))
            print(f"  {ranks} ranks {label}: {result.fidelity}", flush=True)
        found = plan(pipes[2], time_limit_s=plan_limit_s, parallel=1, runtime="torch")
        result = run_schedule(found.problem, found.schedule, emulate=True, steps=steps, timeout_s=600)
        rows.append(_row("a emulated", f"searched: {found.best.family}", found.problem, result))
        print(f"  {ranks} ranks searched ({found.best.family}): {result.fidelity}", flush=True)
    return rows


def _real_plans(pipeline: Any, time_limit_s: float) -> dict[str, tuple[Any, Any, Any]]:
    """(problem, schedule, :class:`~schedsearch.runtime.trace.Prediction`) of 1F1B, ZB-H1 and the searched plan
    of ``pipeline``: the plan's makespan in the pipeline's own times plus its cost per step (0 before the
    calibration), the prediction a plan document records (the searched plan's is read from it)."""
    from schedsearch import plan
    from schedsearch.runtime.calibrate import family_plan
    from schedsearch.runtime.trace import Prediction

    out = {}
    for name in ("1F1B", "ZB-H1"):
        problem, schedule, makespan_ms = family_plan(pipeline, name)
        out[name] = (problem, schedule, Prediction(makespan_ms=makespan_ms, source="plan table",
                                                   step_overhead_ms=pipeline.step_overhead_ms))
    result = plan(pipeline, time_limit_s=time_limit_s, parallel=1, deterministic=True, seed=0)
    out[f"searched ({result.best.family})"] = (result.problem, result.schedule,
                                               Prediction.from_plan_document(result.metadata()))
    return out


def _run_rounds(runnable: dict[str, tuple[Any, Any, Any]], workload: Any, steps: int, rounds: int, tag: str,
                loads: dict[str, list[float]]) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Every plan once per round, in turn: each plan's step times after each run's first, and its runs."""
    from schedsearch.runtime import run

    times: dict[str, list[float]] = {text: [] for text in runnable}
    results: dict[str, list[Any]] = {text: [] for text in runnable}
    for k in range(rounds):
        for text, (p, problem, schedule) in runnable.items():
            result = run(p, workload, problem=problem, schedule=schedule, steps=steps, timeout_s=600)
            times[text].extend(result.step_times_s[1:] if steps > 1 else result.step_times_s)
            results[text].append(result)
        loads[f"{tag} round {k + 1}"] = _load()
        print(f"  {tag}: round {k + 1} of {rounds} done, load {loads[f'{tag} round {k + 1}']}", flush=True)
    return times, results


def part_bc(model: str, microbatches: int, mb_size: int, steps: int, rounds: int, plan_limit_s: float,
            loads: dict[str, list[float]], retries: int = 1, drifts: list[float] | None = None,
            ranks: int = 2) -> tuple[list[dict[str, Any]], Any]:
    """(b) the profiled pipeline's plans, (c) the plans of the pipeline calibrated on measured 1F1B runs, on
    ``ranks`` processes (the model split into as many stages).

    First the (b) plans run ``rounds`` rounds (each round every plan once, in turn): the 1F1B runs among
    them are what the model is calibrated on (:func:`~schedsearch.runtime.calibrate.calibration_from_trace`
    of their traces, spread over the rounds). Then every distinct plan of (b) and (c) runs ``rounds`` more
    rounds, and those runs alone are the measured figures: the calibration never sees the runs it predicts.
    When 1F1B then measures more than 5% off what it took in the runs calibrated on (the machine's load moved),
    the model is calibrated again on those latest 1F1B runs and every plan measured again, up to ``retries``
    times; ``drifts`` receives each attempt's ratio. A row's prediction is the library's
    (:func:`~schedsearch.runtime.trace.compare` with the plan's
    :class:`~schedsearch.runtime.trace.Prediction`, as ``run.json`` reports it).
    """
    drifts = [] if drifts is None else drifts
    from schedsearch import Pipeline
    from schedsearch.runtime import build_workload, plan_from_schedule, profile
    from schedsearch.runtime.calibrate import calibration_from_trace
    from schedsearch.runtime.trace import compare

    workload = build_workload(model, ranks, batch_size=microbatches * mb_size, dtype="float32")
    prof = profile(workload.stages, workload.inputs, target=workload.target, loss_fn=workload.loss_fn,
                   sizes=[mb_size], repeats=7, warmup=2, threads=1)
    print(prof.table())
    base = Pipeline.from_profile(prof, num_ranks=ranks, num_microbatches=microbatches, families=["1f1b"],
                                 name=f"{model} {ranks} ranks")
    made = {"b real": _real_plans(base, plan_limit_s)}
    runnable: dict[str, tuple[Any, Any, Any]] = {}  # CSV text -> (plan, problem, schedule); a plan made twice runs once
    key: dict[tuple[str, str], str] = {}

    def add(part: str) -> None:
        for name, (problem, schedule, _) in made[part].items():
            p = plan_from_schedule(problem, schedule, name=f"{name} ({part})")
            runnable.setdefault(p.text, (p, problem, schedule))
            key[(part, name)] = p.text

    add("b real")
    plans_b = dict(runnable)
    tag = f"{ranks} ranks"
    _, first = _run_rounds(plans_b, workload, steps, rounds, f"{tag} calibrating", loads)
    traces = [r.trace for r in first[key[("b real", "1F1B")]]]
    for attempt in range(1 + retries):
        calibrated = calibration_from_trace(base, traces, family="1F1B")
        print(calibrated.table())
        made["c calibrated"] = _real_plans(calibrated.pipeline, plan_limit_s)
        runnable = dict(plans_b)
        add("c calibrated")
        times, results = _run_rounds(runnable, workload, steps, rounds, f"{tag} measuring {attempt + 1}", loads)
        drift = 1e3 * statistics.median(times[key[("b real", "1F1B")]]) / calibrated.step_time_ms
        drifts.append(drift)
        print(f"  {tag}: 1F1B measured {drift:.3f}x what it took in the runs calibrated on", flush=True)
        if abs(drift - 1) <= 0.05 or attempt == retries:
            break
        # the machine's load moved between calibrating and measuring: calibrate again on the latest runs
        traces = [r.trace for r in results[key[("b real", "1F1B")]]]
    rows = []
    for part, plans in made.items():
        for name, (problem, schedule, prediction) in plans.items():
            text = key[(part, name)]
            runs = results[text]
            # the run against this part's prediction (one run may serve both parts)
            result = attrs.evolve(runs[-1], fidelity=compare(problem, schedule, runs[-1].trace, prediction=prediction))
            row = _row(part, name, problem, result)
            measured = 1e3 * statistics.median(times[text])
            ok = all(r.order_as_planned for r in runs)
            row.update(measured_ms=measured, ratio=measured / row["predicted_ms"],
                       makespan_ms=prediction.makespan_ms, step_overhead_ms=prediction.step_overhead_ms,
                       steps_ms=[round(1e3 * t, 2) for t in times[text]], order_ok=ok,
                       grads_equal=all(r.grads_equal for r in runs))
            rows.append(row)
    return rows, calibrated


def order_agreement(rows: list[dict[str, Any]], threshold: float = 0.05) -> list[str]:
    """Within each (part, ranks) group, every pair of plans whose predictions differ by more than
    ``threshold``: whether the measured times order them alike."""
    out = []
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["part"], r["ranks"]), []).append(r)
    for (part, ranks), rs in groups.items():
        for i, x in enumerate(rs):
            for y in rs[i + 1:]:
                a, b = x["predicted_ms"], y["predicted_ms"]
                if abs(a - b) <= threshold * min(a, b):
                    continue
                agree = (a < b) == (x["measured_ms"] < y["measured_ms"])
                out.append(f"{part}, {ranks} ranks: {x['plan']} ({a:.1f}) vs {y['plan']} ({b:.1f}) predicted; "
                           f"measured {x['measured_ms']:.1f} vs {y['measured_ms']:.1f}: "
                           f"{'agrees' if agree else 'DISAGREES'}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="(a) 4 ranks, 8 micro-batches; (b, c) transformer:4x64, 4 steps, one round")
    parser.add_argument("--part", choices=("a", "bc", "all"), default="all",
                        help="(a) emulated, (bc) real before and after calibration, or all (default)")
    parser.add_argument("--microbatches", type=int, default=16, help="micro-batches of part (a) (default 16)")
    parser.add_argument("--steps", type=int, default=4, help="steps per row in (a), the first not counted (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the stage times (default 0)")
    parser.add_argument("--p2p-ms", type=float, default=0.5, help="planned time per transfer in (a) (default 0.5)")
    parser.add_argument("--activation-bytes", type=int, default=64 * 1024,
                        help="bytes per micro-batch an emulated stage sends (default 65536)")
    parser.add_argument("--plan-limit", type=float, default=20.0, help="plan()'s time limit, s (default 20)")
    parser.add_argument("--model", default="transformer:8x128", help="model of (b, c) (default transformer:8x128)")
    parser.add_argument("--real-microbatches", type=int, default=8, help="micro-batches of (b, c) (default 8)")
    parser.add_argument("--mb-size", type=int, default=8, help="samples per micro-batch in (b, c) (default 8)")
    parser.add_argument("--real-steps", type=int, default=6, help="steps per run in (b, c) (default 6)")
    parser.add_argument("--retries", type=int, default=1, help="calibrations again when the load moved (default 1)")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved runs of each plan in (b, c) (default 4)")
    parser.add_argument("--real-ranks", default="2,4", help="CPU ranks of (b, c), comma-separated (default 2,4)")
    args = parser.parse_args(argv)

    from schedsearch.runtime import torch_available

    if not torch_available():
        print("bench_fidelity needs PyTorch: install the optional extra schedsearch[torch]")
        return 0
    if args.quick:
        args.model, args.real_steps, args.rounds = "transformer:4x64", 4, 1
    rows: list[dict[str, Any]] = []
    loads: dict[str, list[float]] = {"start": _load()}
    print(f"load average at start (1, 5, 15 min): {loads['start']} on {os.cpu_count()} cores")
    t0 = time.perf_counter()
    calibrations: dict[int, Any] = {}
    drifts: list[float] = []
    if args.part in ("a", "all"):
        ranks = [4] if args.quick else [4, 8]
        mb = 8 if args.quick else args.microbatches
        rows += part_a(ranks, mb, args.seed, args.steps, args.p2p_ms, args.activation_bytes, args.plan_limit)
        loads["after (a)"] = _load()
        print(f"load average after (a): {loads['after (a)']}")
    if args.part in ("bc", "all"):
        calibrations = {}
        for ranks in [int(r) for r in args.real_ranks.split(",")]:
            real, calibrated = part_bc(args.model, args.real_microbatches, args.mb_size, args.real_steps,
                                       args.rounds, args.plan_limit, loads, args.retries, drifts, ranks=ranks)
            rows += real
            calibrations[ranks] = calibrated
        loads["after (b, c)"] = _load()
    goal = {"a emulated": 0.03, "b real": 0.10, "c calibrated": 0.10}
    agreement = order_agreement(rows)
    for part in goal:
        part_rows = [r for r in rows if r["part"] == part]
        if not part_rows:
            continue
        print(f"\n({part}) ratio = measured / predicted, measured = median over the steps after each run's first; "
              f"load averages {loads}")
        print_table(part_rows, COLUMNS)
        within = sum(abs(r["ratio"] - 1) <= goal[part] for r in part_rows)
        print(f"within {goal[part]:.0%}: {within} of {len(part_rows)}")
        for line in agreement:
            if line.startswith(part):
                print("  " + line)
    for ranks, calibrated in calibrations.items():
        print(f"\n{ranks} ranks: calibrated on the 1F1B runs of (b)'s first rounds:\n{calibrated.table()}")
    print(f"load averages: {loads}; wall {time.perf_counter() - t0:.0f} s")
    if drifts:
        print(f"1F1B measured over its calibration runs, per calibration: {[round(d, 3) for d in drifts]}")
    write_results("fidelity", rows, loads=loads, order_agreement=agreement, args=vars(args), drifts=drifts,
                  calibration={r: c.calibration.to_dict() for r, c in calibrations.items()},
                  calibrated_pipeline={r: c.pipeline.to_dict() for r, c in calibrations.items()})
    return 0 if all(r["order_ok"] and r["grads_equal"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
