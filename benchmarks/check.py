"""The benchmark gate: a quick, reproducible subset of every benchmark against recorded figures.

``python -m benchmarks check`` runs one small case per benchmark module
(``bench_*.py``) and compares what does not depend on the machine with the
figures recorded in ``benchmarks/results/check.json``: answers found
(makespans, periods, max-loads: never worse), bounds (never lower), proofs
(never lost) and work counts (DP ideals and pairs, CP-SAT deterministic time,
branches and conflicts, heuristic evaluations: never more than
:data:`WORK_FACTOR` times the recorded count plus a small floor). It exits
non-zero with a table of what regressed. Wall time is printed beside each
case and never gated.

Every search in it is reproducible on any machine and under any load: one
solver worker, a fixed seed, and limits in deterministic time (the library's
``deterministic=True``), heuristics with fixed iteration budgets instead of
time limits. A case whose solver was stopped by its wall-clock guard (a
search far slower than its deterministic budget says) fails: its figures
would not be reproducible.

``python -m benchmarks check --record`` runs the cases and writes the
figures as the new record (after an improvement, or when a case is added).
``--baseline PATH`` compares with (or records to) another file;
``--only NAME ...`` runs the cases whose names contain one of the words;
``--data DIR`` is the folder of the shared instance data (default
``../shared/data`` beside the repository).

A change to ``search/``, ``encode/``, ``bounds/`` or ``partition/`` is not
done until the gate passes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks._common import RESULTS_DIR, machine, print_table

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
BASELINE = RESULTS_DIR / "check.json"

#: a work count may grow to this many times its recorded value (plus its floor) before the gate fails
WORK_FACTOR = 2.0
#: relative tolerance of value comparisons (max-loads are floats summed in different orders)
REL_TOL = 1e-9

#: kind -> what it means; "lower" / "higher": the better direction of an answer; "proof": a boolean
#: capability (proven, found, equal); "work": a count that must not grow more than WORK_FACTOR times
KINDS = ("lower", "higher", "proof", "work")


class Figures:
    """The gated figures of one case, by name: ``lower`` answers (less is better), ``higher``
    bounds, ``proof`` booleans and ``work`` counts (with an absolute floor)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []

    def lower(self, name: str, value: float | None) -> None:
        self.rows[name] = {"kind": "lower", "value": value}

    def higher(self, name: str, value: float | None) -> None:
        self.rows[name] = {"kind": "higher", "value": value}

    def proof(self, name: str, value: bool) -> None:
        self.rows[name] = {"kind": "proof", "value": bool(value)}

    def work(self, name: str, value: float, floor: float) -> None:
        self.rows[name] = {"kind": "work", "value": value, "floor": floor}

    def search(self, prefix: str, result: Any) -> None:
        """The figures of a search result: objective, bound, proven, and CP-SAT's work counts when it ran."""
        from schedsearch.result import Status

        self.lower(f"{prefix}objective", result.objective)
        self.higher(f"{prefix}lower_bound", result.lower_bound)
        self.proof(f"{prefix}proven", result.status is Status.OPTIMAL)
        if result.deterministic_s is not None:
            self.work(f"{prefix}deterministic_s", round(float(result.deterministic_s), 4), floor=0.2)
        stats = result.stats or {}
        for count in ("branches", "conflicts"):
            if count in stats:
                self.work(f"{prefix}{count}", int(stats[count]), floor=2000)
        if result.wall_guard_hit:
            self.notes.append(f"{prefix}the solver's wall-clock guard stopped it: not reproducible")


#: the common settings of every search of the gate: reproducible on any machine
DET = {"workers": 1, "seed": 0, "deterministic": True}


def _validated(problem: Any, schedule: Any) -> bool:
    from schedsearch.validate import validate

    return schedule is not None and validate(problem, schedule) == ()


# ----------------------------------------------------------------------------------------- the cases
# One function per benchmark module, named after it; each fills a Figures. ``data`` is the shared data folder.


def case_autoplan(f: Figures, data: Path) -> None:
    """bench_autoplan: the planner's configuration and schedule for a small model in layers (4 blocks, 2 ranks,
    memory-bound: recomputation or more stages needed), against torchtitan's default 1F1B, deterministic; and
    a 12-block model whose best interleaved count (6) is one only the equal-split rule lists."""
    from schedsearch.plan.planner import plan_configuration, plan_layers
    from schedsearch.plan.candidates import Candidate
    from schedsearch.plan.layers import LayerModel
    from schedsearch.plan.peers import torchtitan_default

    at = [{"microbatch_size": b, "forward_ms": 1.0 * b, "backward_ms": 2.0 * b, "input_grad_ms": 1.0 * b,
           "weight_grad_ms": 1.0 * b, "activation_bytes": f"{b} GiB", "checkpoint_bytes": f"{b / 8} GiB"}
          for b in (1, 2)]
    edge = [dict(m, forward_ms=0.5 * m["microbatch_size"], backward_ms=1.0 * m["microbatch_size"],
                 input_grad_ms=0.5 * m["microbatch_size"], weight_grad_ms=0.5 * m["microbatch_size"]) for m in at]
    model = LayerModel(global_batch=4, num_ranks=2, memory_budget_bytes="7 GiB", layers=[
        {"name": "embed", "kind": "embedding", "measured": edge, "parameter_bytes": "1 GiB"},
        {"name": "block", "repeat": 4, "measured": at, "parameter_bytes": "0.5 GiB"},
        {"name": "head", "kind": "head", "measured": edge, "parameter_bytes": "1 GiB"}])
    titan = plan_configuration(model, torchtitan_default(model, num_ranks=2), Candidate(family="1f1b"),
                               time_limit_s=1, deterministic=True)
    result = plan_layers(model, time_limit_s=20, parallel=1, deterministic=True)
    f.lower("titan_1f1b_ms", titan.makespan_ms)
    f.lower("planner_ms", result.best.makespan_ms)
    f.higher("planner_bound_ms", result.bound_ms)
    f.proof("planner_proven", result.gap == 0)
    f.work("searched", result.searched, floor=4)
    # 12 equal blocks on 2 ranks, two micro-batches: the bubble dominates, and interleaved at 6 stages per rank
    # (a count the family lists only where the blocks split equally) is the shortest step
    one = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    even = LayerModel(global_batch=2, num_ranks=2, layers=[{"name": "block", "repeat": 12, "measured": one}])
    deep = plan_layers(even, time_limit_s=20, parallel=1, deterministic=True, families=["interleaved"])
    f.lower("equal_split_interleaved_ms", deep.best.makespan_ms)


def case_bounds(f: Figures, data: Path) -> None:
    """bench_bounds: Tarnawski et al.'s non-contiguous IP on a small workload, HiGHS, one thread."""
    from schedsearch.loaders.opgraph import read_dnn_partitioning
    from schedsearch.partition import noncontiguous_ip

    w = read_dnn_partitioning(data / "dnn-partitioning" / "throughput-inputs" / "LayerGraphs/bert24_training.json")
    _ip_figures(f, "", noncontiguous_ip(w, solver="highs", time_limit_s=120, threads=1))


def _ip_figures(f: Figures, prefix: str, b: Any) -> None:
    """A partitioning IP's figures: value, bound, proven, and HiGHS's branch-and-bound nodes (one thread)."""
    from schedsearch.result import Status

    f.lower(f"{prefix}value", round(b.value, 6) if b.value is not None else None)
    f.higher(f"{prefix}bound", round(b.lower_bound, 6) if b.lower_bound is not None else None)
    f.proof(f"{prefix}proven", b.status is Status.OPTIMAL)
    nodes = (b.mip.stats or {}).get("nodes") if b.mip is not None else None
    if nodes is not None:
        f.work(f"{prefix}nodes", int(nodes), floor=50)


def case_bounds_archer(f: Figures, data: Path) -> None:
    """bench_bounds_archer: the simple bound and the three-superblock MIP on a seeded random DAG, k = 2."""
    from benchmarks.bench_bounds_archer import random_dag
    from schedsearch.partition import simple_bound, three_superblock_mip
    from schedsearch.result import Status

    graph = random_dag(50, seed=1)
    f.higher("simple_bound", round(simple_bound(graph, 2), 6))
    tsb = three_superblock_mip(graph, 2, time_limit_s=120, threads=1)
    f.higher("three_superblock_bound", round(tsb.lower_bound, 6))
    f.lower("best_value", round(tsb.best_value, 6) if tsb.best_value is not None else None)
    f.proof("three_superblock_proven", tsb.status is Status.OPTIMAL)


def case_calibration(f: Figures, data: Path) -> None:
    """bench_calibration: what calibration computes without a clock: the link and overhead fits of synthetic
    timings (known values recovered), 1F1B and ZB-H1 predicted on a calibrated pipeline, a pipeline from synthetic
    profiler traces (known medians)."""
    import json
    import statistics
    import tempfile

    from schedsearch import Pipeline
    from schedsearch.plan.calibration import Calibration, fit_link
    from schedsearch.runtime.calibrate import family_plan, fit_overhead
    from schedsearch.runtime.profiler_traces import pipeline_from_traces

    link = fit_link([(b, 0.08 + b / 3e9 * 1e3) for b in (4, 4096, 65536, 2**20, 4 * 2**20)])
    f.proof("link_fit_recovers", abs(link.latency_ms - 0.08) < 1e-9 and abs(link.bandwidth_bytes_per_s - 3e9) <= 3e3)

    def predict(m: int, o: float) -> float:
        return 0.4 * m + max((2 * m + 2) * o, 5.0)

    fit = fit_overhead({m: 1.5 + predict(m, 0.3) for m in (4, 8, 16)}, predict)
    f.proof("overhead_fit_recovers", abs(fit.action_ms - 0.3) < 1e-6 and abs(fit.step_ms - 1.5) < 1e-5)
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0, "send_bytes": "1 MiB"}
    pipeline = Calibration(latency_ms=0.25, bandwidth_bytes_per_s=2**22 * 1000, action_overhead_ms=0.1).apply(
        Pipeline(num_ranks=2, num_microbatches=8, families=["1f1b"], stages=[stage] * 2))
    for name in ("1F1B", "ZB-H1"):
        f.lower(f"{name.lower()}_calibrated_ms", round(family_plan(pipeline, name)[2], 9))
    durations = {(s, k): [1000 + 100 * s + 10 * m for m in range(4)] for s in (0, 1) for k in ("F", "B")}
    with tempfile.TemporaryDirectory() as folder:
        for rank in (0, 1):
            events = [{"ph": "X", "name": f"PP:{rank}{k}{m}", "ts": 10_000 * m + (5000 if k == "B" else 0),
                       "dur": durations[(rank, k)][m]} for k in ("F", "B") for m in range(4)]
            (Path(folder) / f"rank{rank}.json").write_text(json.dumps({"traceEvents": events}))
        imported = pipeline_from_traces(folder)
    want = [(statistics.median(durations[(s, "F")]) / 1e3, statistics.median(durations[(s, "B")]) / 1e3)
            for s in (0, 1)]
    f.proof("trace_medians_exact", [(s.forward_ms, s.backward_ms) for s in imported.stages] == want)


def case_call_counts(f: Figures, data: Path) -> None:
    """bench_call_counts: how often one solve() call derives the analytic bound, heads and tails, the reduced
    problem and runs the validator (deterministic settings: the counts are the same on every machine)."""
    from benchmarks.bench_call_counts import measure, problems

    for name, build in problems().items():
        counts, result = measure(build)
        key = name.split("(")[0] + "_"
        for function, count in counts.items():
            f.lower(f"{key}{function}_calls", count)
        f.lower(f"{key}objective", result.objective)


def case_contiguous_ip(f: Figures, data: Path) -> None:
    """bench_contiguous_ip: the strengthened contiguous IP proves the DP optimum on a small workload."""
    from schedsearch.loaders.opgraph import read_dnn_partitioning
    from schedsearch.partition import contiguous_ip, partition_dp

    w = read_dnn_partitioning(data / "dnn-partitioning" / "throughput-inputs" / "LayerGraphs/bert24_training.json")
    dp = partition_dp(w)
    ip = contiguous_ip(w, solver="highs", time_limit_s=120, threads=1)
    _ip_figures(f, "", ip)
    f.proof("equals_dp", ip.value is not None and math.isclose(ip.value, dp.max_load, rel_tol=1e-6))


def case_deadline(f: Figures, data: Path) -> None:
    """bench_deadline: solve() on the V placement, 8 ranks x 64 micro-batches (the constructions), under a
    hard stop whose clock moves one unit per reading (a deadline counted in work, the same on any machine):
    the work the whole call counts at its checkpoints, and what the call returns when the stop falls
    before its first plan (TIMEOUT with a bound), after it (that plan, valid) and never (the same plan)."""
    from schedsearch import solve
    from schedsearch.deadline import STRIDE, stopping
    from schedsearch.options import Deadline
    from schedsearch.placements import vshape_chunks

    problem = vshape_chunks(8, 64)

    def counted(readings: float) -> Any:
        reads = iter(range(1, 1 << 62))
        with stopping(Deadline(readings, clock=lambda: float(next(reads))), grace=0.0) as stop:
            result = solve(problem, objective="makespan", time_limit_s=30, engines=("handcrafted",), **DET)
        return result, stop.work

    free = solve(problem, objective="makespan", time_limit_s=30, engines=("handcrafted",), **DET)
    whole, work = counted(1e12)
    f.work("work_units", work, floor=5000)
    f.proof("never_same_plan", whole.objective == free.objective and whole.schedule.tasks == free.schedule.tasks)
    early, _ = counted(3.0)
    f.proof("early_timeout", early.status.value == "TIMEOUT" and early.schedule is None)
    f.higher("early_bound", early.lower_bound)
    late, _ = counted(0.9 * work / STRIDE)
    f.proof("late_keeps_a_plan", _validated(problem, late.schedule))
    f.lower("late_makespan", late.objective)


def case_dualpipe(f: Figures, data: Path) -> None:

    """bench_dualpipe: DualPipe PP = 4, 8 chunks: the search warm-started from the handcrafted plan
    under its own per-device peaks."""
    from schedsearch.handcrafted import reproduce
    from schedsearch.search.compare import search_against

    rep = reproduce("dualpipe", devices=4, microbatches=8)
    f.lower("handcrafted_makespan", rep.schedule.makespan)
    cmp = search_against(rep.problem, rep.schedule, time_limit_s=10, **DET)
    f.search("search_", cmp.result)
    f.proof("search_valid", _validated(cmp.searched_problem, cmp.result.schedule))


def case_fidelity(f: Figures, data: Path) -> None:
    """bench_fidelity: 1F1B and ZB-H1 on 2 ranks, 4 micro-batches, emulated (each call sleeps its planned 2 to
    4 ms): the measured order is the plan's, the gradients equal, a deliberately reordered trace is caught, and
    no run is faster than its prediction (every call lasts at least its planned time); a calibration from a
    hand-made measured trace gives back its durations and gaps. Times are not gated."""
    try:
        import torch  # noqa: F401
    except ImportError:
        f.notes.append("skipped: torch is not installed")
        return
    from schedsearch.handcrafted import reproduce
    from schedsearch.runtime import run_schedule
    from schedsearch.actions import Action
    from schedsearch.runtime.trace import Compute, StepTrace, order_violations

    for name in ("1f1b", "zb-h1"):
        rep = reproduce(name, devices=2, microbatches=4)
        problem = rep.problem.with_(time_unit_s=2e-3)
        result = run_schedule(problem, rep.schedule, emulate=True, steps=2, timeout_s=120)
        key = name.replace("-", "")
        f.proof(f"{key}_order_as_planned", result.order_as_planned)
        f.proof(f"{key}_grads_equal", result.grads_equal)
        f.proof(f"{key}_not_faster_than_predicted", result.fidelity.ratio >= 1 - 1e-6)
        step = result.trace.steps[-1]
        first, second = (next(c for c in step.computes if c.action == Action(0, "F", m)) for m in (0, 1))
        swapped = tuple(
            Compute(rank=c.rank, action=c.action,
                    start_s=(second if c is first else first).start_s, end_s=(second if c is first else first).end_s)
            if c in (first, second) else c
            for c in step.computes
        )
        bad = StepTrace(rank_spans=step.rank_spans, events=step.events, computes=swapped)
        f.proof(f"{key}_reordering_caught", bool(order_violations(problem, rep.schedule, bad)))
    # calibration from a measured run, on a hand-made trace: each rank's calls back to back, 0.25 ms apart
    from schedsearch import Pipeline
    from schedsearch.runtime.calibrate import calibration_from_trace
    from schedsearch.runtime.trace import Event, MeasuredTrace

    want = {(0, "F"): 2.0, (0, "B"): 4.0, (1, "F"): 3.0, (1, "B"): 5.0}
    events, computes = [], []
    for r in (0, 1):
        at = 0.0
        for m in range(4):
            for k in ("F", "B"):
                at += 0.25
                computes.append(Compute(rank=r, action=Action(r, k, m), start_s=at / 1e3,
                                        end_s=(at + want[(r, k)]) / 1e3))
                events.append(Event(rank=r, label=f"{r}{k}{m}", action=Action(r, k, m), start_s=at / 1e3,
                                    end_s=(at + want[(r, k)]) / 1e3))
                at += want[(r, k)]
    step = StepTrace(rank_spans=((0.0, 0.03), (0.0, 0.03)), events=tuple(events), computes=tuple(computes))
    trace = MeasuredTrace(num_ranks=2, steps=(step, step), clock_offsets_s=(0.0, 0.0), clock_rtt_s=(0.0, 0.0))
    given = Pipeline(num_ranks=2, num_microbatches=4, stages=[{"forward_ms": 1.0, "backward_ms": 1.0}] * 2)
    cal = calibration_from_trace(given, trace)
    f.proof("from_run_calibration_exact", all(abs(cal.measured[k] - v) < 1e-9 for k, v in want.items())
            and abs(cal.calibration.action_overhead_ms - 0.25) < 1e-9)


def case_first_plan(f: Figures, data: Path) -> None:
    """bench_first_plan: solve's first plan on the V placement, p = 4, m = 16, F/I/W = 2/2/1, communication 0
    and 1, every device capped at V-Half's and V-Min's activations: the first plan's makespan (the paper's
    stable pattern that fits, the public greedy's figure), and the best of solve()'s constructions."""
    from benchmarks.bench_first_plan import with_communication
    from schedsearch import solve
    from schedsearch.handcrafted.v_capped import v_half_cap, v_min_cap
    from schedsearch.placements import vshape_chunks

    for comm in (0, 1):
        for label, cap in (("vhalf", v_half_cap(4)), ("vmin", v_min_cap(4))):
            problem = with_communication(vshape_chunks(4, 16, forward=2, input_grad=2, weight_grad=1, memory=cap),
                                         comm)
            events: list[Any] = []
            result = solve(problem, objective="makespan", time_limit_s=5, engines=("handcrafted",),
                           progress=events.append, **DET)
            first = next((e for e in events if e.incumbent is not None), None)
            tag = f"{label}_comm{comm}_"
            f.lower(f"{tag}first_makespan", None if first is None else first.incumbent)
            f.proof(f"{tag}first_is_a_construction", first is not None and bool(first.source)
                    and first.source.startswith("handcrafted"))
            f.proof(f"{tag}valid", _validated(problem, result.schedule))
            f.search(tag, result)


def case_handcrafted(f: Figures, data: Path) -> None:
    """bench_handcrafted: the reference rows of the handcrafted schedules (makespan and bubble)."""
    from schedsearch.handcrafted import reproduce

    for name, params in (("1f1b", dict(devices=4, microbatches=8)), ("zb-h1", dict(devices=4, microbatches=8)),
                         ("zb-v", dict(devices=4, microbatches=8)),
                         ("dualpipe", dict(devices=8, microbatches=20, overlap=3)),
                         ("dualpipev", dict(devices=4, microbatches=10, overlap=3))):
        rep = reproduce(name, **params)
        f.lower(f"{name}_makespan", rep.measured["makespan"])
        f.lower(f"{name}_bubble", rep.measured["bubble"])
        f.proof(f"{name}_valid", _validated(rep.problem, rep.schedule))


def _jobshop_instance(data: Path, name: str) -> Any:
    from schedsearch.loaders import read_index, read_instance

    index = {**read_index(data / "jsp" / "classical.json"), **read_index(data / "fjsp" / "instances.json")}
    return read_instance(index[name].path).problem


def case_jobshop(f: Figures, data: Path) -> None:
    """bench_jobshop: ft06 and la01 proven with CP-SAT, mk01 (flexible) with a deterministic budget."""
    from schedsearch.search import jobshop

    for name, limit in (("ft06", 60), ("la01", 60), ("mk01", 20)):
        problem = _jobshop_instance(data, name)
        f.search(f"{name}_", jobshop(problem, time_limit_s=limit, **DET))


def case_jobshop_overhead(f: Figures, data: Path) -> None:
    """bench_jobshop_overhead: jobshop() against a plain CP-SAT model on la05, both deterministic: the
    planner's work stays within the plain model's (its quick pass and bounds are the overhead)."""
    from ortools.sat.python import cp_model

    from schedsearch.search import jobshop

    problem = _jobshop_instance(data, "la05")
    result = jobshop(problem, time_limit_s=60, **DET)
    f.search("planner_", result)
    # the plain model: interval per operation, no-overlap per machine, job chains, minimise the makespan
    model = cp_model.CpModel()
    horizon = sum(o.duration for b in problem.graph.blocks for o in b.options[:1])
    starts, ends = {}, {}
    per_device: dict[str, list[Any]] = {}
    for b in problem.graph.blocks:
        o = b.options[0]
        s = model.new_int_var(0, horizon, f"s{b.name}")
        e = model.new_int_var(0, horizon, f"e{b.name}")
        per_device.setdefault(o.devices[0], []).append(model.new_interval_var(s, o.duration, e, f"i{b.name}"))
        starts[b.name], ends[b.name] = s, e
    for edge in problem.graph.edges:
        model.add(starts[edge.dst] >= ends[edge.src])
    for intervals in per_device.values():
        model.add_no_overlap(intervals)
    makespan = model.new_int_var(0, horizon, "makespan")
    model.add_max_equality(makespan, list(ends.values()))
    model.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.interleave_search = True
    solver.parameters.max_deterministic_time = 10.0
    status = solver.solve(model)
    f.lower("plain_objective", int(solver.objective_value) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
            else None)
    f.proof("plain_proven", status == cp_model.OPTIMAL)


def case_jobshop_random(f: Figures, data: Path) -> None:
    """bench_jobshop_random: a seeded 40-node DAG coarsened to 12 blocks on 2 machines and 2 channels."""
    from schedsearch.graphs import machine_cluster, random_dag
    from schedsearch.search import jobshop

    problem = random_dag(40, seed=4).on_machines(machine_cluster(2, channels=2, directed=True))
    f.search("", jobshop(problem, coarsen_to=12, time_limit_s=5, **DET))


def case_optimal(f: Figures, data: Path) -> None:
    """bench_optimal: the V-shape, 4 devices, memory 4, N = 8 and 16, proven optimal (33, 57)."""
    from schedsearch.placements import vshape
    from schedsearch.search import optimal

    for n in (8, 16):
        f.search(f"v4x{n}_", optimal(vshape(4, n, memory=4), time_limit_s=60, **DET))


def case_partition(f: Figures, data: Path) -> None:
    """bench_partition: the exact contiguous DP on memory-limited workloads, and where its contraction rules bite.

    ResNet-50 (training and inference) and BERT-3 (inference): optimum, ideals, pairs, and the DP with
    limits' max-load on each. GNMT (inference and training) and Inception-v3 (inference) are the workloads whose
    ideal counts a contraction rule changes: GNMT's 17,914 ideals grew past 2,000,000 when the trivial
    leaves stopped being merged, a regression the first three workloads do not see.
    """
    from schedsearch.loaders.opgraph import read_dnn_partitioning
    from schedsearch.partition import partition_dp, partition_dpl

    inputs = data / "dnn-partitioning" / "throughput-inputs"
    for name in ("LayerGraphs/resnet50_training", "OperatorGraphs/resnet50_inference",
                 "OperatorGraphs/bert_l-3_inference", "LayerGraphs/gnmt_inference", "LayerGraphs/gnmt_training",
                 "LayerGraphs/inceptionv3_inference"):
        w = read_dnn_partitioning(inputs / f"{name}.json")
        short = name.split("/")[1]
        r = partition_dp(w)
        f.lower(f"{short}_max_load", round(r.max_load, 6))
        f.proof(f"{short}_optimal", r.optimal)
        f.work(f"{short}_ideals", int(r.stats["ideals"]), floor=50)
        f.work(f"{short}_pairs", int(r.stats["pairs"]), floor=5000)
        f.lower(f"{short}_dpl_max_load", round(partition_dpl(w).max_load, 6))


def case_partition_methods(f: Figures, data: Path) -> None:
    """bench_partition_methods: the heuristics on one workload with fixed seeds and budgets."""
    from schedsearch.loaders.opgraph import read_dnn_partitioning
    from schedsearch.partition import partition

    w = read_dnn_partitioning(data / "dnn-partitioning" / "throughput-inputs" / "LayerGraphs/resnet50_training.json")
    for method, options in (("modules", {}), ("slicegraph", dict(generations=5, population=10, seed=0)),
                            ("greedy", {}), ("heft", {}), ("met", {}),
                            ("annealing", dict(iterations=2000, seed=0)),
                            ("evolutionary", dict(generations=500, seed=0))):
        r = partition(w, method=method, **options)
        f.lower(f"{method}_max_load", round(r.cost.max_load, 6))


def case_plan(f: Figures, data: Path) -> None:
    """bench_plan: plan() on gnmt's PipeDream profile, 4 ranks, 8 micro-batches, 1F1B and ZB-V,
    deterministic, one worker."""
    from schedsearch import Pipeline, plan

    pipeline = Pipeline.from_profile(ROOT / "models" / "pipedream" / "gnmt" / "graph.txt", num_ranks=4,
                                     num_microbatches=8, weight_grad_share=0.5, families=["1f1b", "zb-v"])
    result = plan(pipeline, time_limit_s=10, executor="local", parallel=1, deterministic=True, seed=0)
    for row in result.rows:
        label = row.candidate.label.replace(" ", "_")
        f.lower(f"{label}_makespan_ms", round(row.makespan_ms, 6) if row.makespan_ms is not None else None)
        f.proof(f"{label}_optimal", row.makespan_proven)


def case_real_profiles(f: Figures, data: Path) -> None:
    """bench_real_profiles: solve() on vgg16's profile split onto 4 ranks, 16 micro-batches, time objective."""
    from schedsearch import Pipeline, solve
    from schedsearch.plan.planner import Candidate, build_problem
    from schedsearch.units import choose_units

    pipeline = Pipeline.from_profile(ROOT / "models" / "pipedream" / "vgg16" / "graph.txt", num_ranks=4,
                                     num_microbatches=16, weight_grad_share=0.5)
    candidate = Candidate(family="1f1b", chunks=1, split_backward=True)
    stages = pipeline.stages_for(candidate.num_stages(4))[0]
    times = {f"{k} {field}": getattr(s, field) for k, s in enumerate(stages)
             for field in ("forward_ms", "backward_ms", "input_grad_ms", "weight_grad_ms")}
    units = choose_units(times, [], tolerance=pipeline.time_tolerance)
    problem = build_problem(pipeline, candidate, stages, units)
    f.search("", solve(problem, objective="makespan", time_limit_s=20, **DET))


def case_repetend(f: Figures, data: Path) -> None:
    """bench_repetend: Tessel's V and X shapes on 4 devices: least period, unrolled to 16 micro-batches."""
    from schedsearch.placements import tessel_shape
    from schedsearch.search.repetend_search import repetend

    for shape in ("V", "X"):
        result = repetend(tessel_shape(shape, 4, 16, memory=4), time_limit_s=60, **DET)
        f.lower(f"{shape}_period", result.period)
        f.proof(f"{shape}_period_optimal", result.period_optimal)
        f.lower(f"{shape}_makespan16", result.objective)


def case_repetend_ablation(f: Figures, data: Path) -> None:
    """bench_repetend_ablation: V on 4 devices, offsets within N_R = 2 micro-batches, and memory 2."""
    from schedsearch.placements import tessel_shape
    from schedsearch.search.repetend_search import repetend

    for label, memory, size in (("N_R2", 4, 2), ("memory2", 2, None)):
        result = repetend(tessel_shape("V", 4, 32, memory=memory), repetend_size=size, max_fold=1, candidates=1,
                          time_limit_s=60, **DET)
        f.lower(f"{label}_period", result.period)
        f.proof(f"{label}_period_optimal", result.period_optimal)


def case_repetend_quality(f: Figures, data: Path) -> None:
    """bench_repetend_quality: the repetend's unrolled makespan beside the proven optimum, V 4 x 8."""
    from schedsearch.placements import vshape
    from schedsearch.search import optimal
    from schedsearch.search.repetend_search import repetend

    problem = vshape(4, 8, memory=4)
    f.lower("repetend_makespan", repetend(problem, time_limit_s=60, **DET).objective)
    f.lower("optimal_makespan", optimal(problem, time_limit_s=60, **DET).objective)


def case_repetend_scaling(f: Figures, data: Path) -> None:
    """bench_repetend_scaling: Tessel's X shape's repetend, unrolled to 1024 micro-batches and validated."""
    from schedsearch.placements import tessel_shape
    from schedsearch.search.repetend_search import repetend

    result = repetend(tessel_shape("X", 4, 16, memory=4), time_limit_s=60, **DET)
    f.lower("period", result.period)
    unrolled = result.periodic.unroll(1024) if result.periodic is not None else None
    f.lower("makespan1024", unrolled.makespan if unrolled is not None else None)
    f.proof("valid1024", unrolled is not None and _validated(result.periodic.problem_for(1024), unrolled))


def case_runtime(f: Figures, data: Path) -> None:
    """bench_runtime: 1F1B on 2 ranks executed by PyTorch's runtime, gradients equal to one process's."""
    try:
        import torch  # noqa: F401
    except ImportError:
        f.notes.append("skipped: torch is not installed")
        return
    from schedsearch.handcrafted import reproduce
    from schedsearch.runtime import build_workload, plan_from_schedule, run

    rep = reproduce("1f1b", devices=2, microbatches=4)
    plan = plan_from_schedule(rep.problem, rep.schedule)
    workload = build_workload("mlp:8x16", plan.num_stages, batch_size=4 * plan.num_microbatches)
    result = run(plan, workload, steps=1, timeout_s=120)
    f.proof("grads_equal", result.grads_equal)


def case_scaling(f: Figures, data: Path) -> None:
    """bench_scaling: solve() on 1F1B's placement, 8 ranks x 1024 micro-batches (a construction meets the
    bound), and on the V placement, 8 ranks x 64 micro-batches."""
    from schedsearch import solve
    from schedsearch.placements import vshape, vshape_chunks

    f.search("1f1b_8x1024_", solve(vshape(8, 1024), objective="makespan", time_limit_s=30, **DET))
    f.search("v_8x64_", solve(vshape_chunks(8, 64), objective="makespan", time_limit_s=30, **DET))


def case_solve(f: Figures, data: Path) -> None:
    """bench_solve: solve() on V 4 x 16 under memory 4 and 3 (the exact search proves 72 there), and on
    ZB-H1's placement, 8 devices, 16 micro-batches."""
    from schedsearch import solve
    from schedsearch.handcrafted import reproduce
    from schedsearch.placements import vshape

    f.search("v4x16_", solve(vshape(4, 16, memory=4), objective="makespan", time_limit_s=30, **DET))
    f.search("v4x16_memory3_", solve(vshape(4, 16, memory=3), objective="makespan", time_limit_s=30, **DET))
    problem = reproduce("zb-h1", devices=8, microbatches=16).problem
    f.search("zbh1_8x16_", solve(problem, objective="makespan", time_limit_s=30, **DET))


def case_testing(f: Figures, data: Path) -> None:
    """bench_testing: the test strategies draw valid plans (derandomised hypothesis, fixed example count)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from schedsearch.testing import problems, schedules

    drawn: list[bool] = []

    @settings(max_examples=60, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draw(data: Any) -> None:
        problem = data.draw(problems())
        drawn.append(_validated(problem, data.draw(schedules(problem))))

    draw()
    f.proof("every_plan_valid", bool(drawn) and all(drawn))
    f.higher("plans_drawn", len(drawn))


def case_vhalf(f: Figures, data: Path) -> None:
    """bench_vhalf: the V-Half and V-Min greedy at p = 4, m = 16, and scale_search at V-Half's cap."""
    from schedsearch.handcrafted.v_capped import v_capped, v_half_cap, v_min_cap
    from schedsearch.placements import vshape_chunks
    from schedsearch.search.scale import scale_search

    p, m = 4, 16
    for label, cap in (("vhalf", v_half_cap(p)), ("vmin", v_min_cap(p))):
        problem = vshape_chunks(p, m, memory=cap)
        f.lower(f"{label}_greedy_makespan", v_capped(problem, cap).makespan)
    result = scale_search(vshape_chunks(p, m, memory=v_half_cap(p)), time_limit_s=20, **DET)
    f.search("vhalf_search_", result)


def case_zb_auto(f: Figures, data: Path) -> None:
    """bench_zb_auto: the zero-bubble greedy on ZB-H1's placement, F/I/W = 18/18/9, p = 4, m = 24, caps p and
    2p, communication 0 and 1: its longest span and makespan, and solve() from it."""
    from benchmarks.bench_zb_auto import _problem
    from schedsearch import solve
    from schedsearch.handcrafted.zb_greedy import zb_greedy
    from schedsearch.schedule import max_span

    for cap in (4, 8):
        for comm in (0, 1):
            problem = _problem(4, 24, cap, comm)
            plan = zb_greedy(problem)
            tag = f"cap{cap}_comm{comm}_"
            f.proof(f"{tag}greedy_valid", _validated(problem, plan))
            f.lower(f"{tag}greedy_makespan", plan.makespan)
            f.lower(f"{tag}greedy_span", max_span(plan))
            f.search(f"{tag}solve_", solve(problem, objective="makespan", time_limit_s=20, **DET))


def case_zbv_scale(f: Figures, data: Path) -> None:
    """bench_zbv_scale: scale_search on ZB-V, PP = 8, 32 micro-batches, memory PP + 1."""
    from schedsearch.placements import vshape_chunks
    from schedsearch.search.scale import scale_search

    f.search("", scale_search(vshape_chunks(8, 32, memory=9), time_limit_s=20, **DET))


def case_zero_bubble(f: Figures, data: Path) -> None:
    """bench_zero_bubble: ZB-H1 and ZB-V handcrafted, and the exact search on ZB-H1's placement, 4 x 8."""
    from schedsearch.handcrafted import reproduce
    from schedsearch.search import optimal

    for name in ("zb-h1", "zb-v"):
        rep = reproduce(name, devices=4, microbatches=8)
        f.lower(f"{name}_makespan", rep.schedule.makespan)
    rep = reproduce("zb-h1", devices=4, microbatches=8)
    f.search("zbh1_search_", optimal(rep.problem, time_limit_s=30, **DET))


CASES: dict[str, Callable[[Figures, Path], None]] = {
    name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")
}


# -------------------------------------------------------------------------------------- run and compare


@contextlib.contextmanager
def solver_work() -> Iterator[dict[str, float]]:
    """Count the CP-SAT work of everything run inside: the deterministic time, branches and conflicts of
    every CP-SAT search (schedule models and repetend models), whichever strategy started it, and whether
    a wall-clock guard stopped one (its figures would not be reproducible)."""
    from schedsearch.encode.cpsat import repetend as cpsat_repetend
    from schedsearch.encode.cpsat.model import CpSatBackend

    work = {"deterministic_s": 0.0, "branches": 0, "conflicts": 0, "searches": 0, "wall_guard_hits": 0}

    def count(result: Any) -> None:
        stats = result.stats or {}
        work["searches"] += 1
        work["deterministic_s"] += float(getattr(result, "deterministic_s", None) or 0.0)  # a repetend reports none
        work["branches"] += int(stats.get("branches", 0))
        work["conflicts"] += int(stats.get("conflicts", 0))
        work["wall_guard_hits"] += bool(result.wall_guard_hit)

    solve, solve_repetend = CpSatBackend.solve, cpsat_repetend.solve_repetend

    def counted_solve(self: Any, problem: Any, options: Any) -> Any:
        result = solve(self, problem, options)
        count(result)
        return result

    def counted_repetend(problem: Any, options: Any) -> Any:
        result = solve_repetend(problem, options)
        count(result)
        return result

    CpSatBackend.solve, cpsat_repetend.solve_repetend = counted_solve, counted_repetend  # type: ignore[method-assign]
    try:
        yield work
    finally:
        CpSatBackend.solve, cpsat_repetend.solve_repetend = solve, solve_repetend  # type: ignore[method-assign]


def run_cases(names: list[str], data: Path) -> tuple[dict[str, dict[str, Any]], dict[str, float], dict[str, str]]:
    """Run the named cases: their figures, wall times and errors (case -> message)."""
    figures: dict[str, dict[str, Any]] = {}
    walls: dict[str, float] = {}
    errors: dict[str, str] = {}
    for name in names:
        f = Figures()
        t0 = time.perf_counter()
        with solver_work() as work:
            try:
                CASES[name](f, data)
            except Exception as exc:  # a case that cannot run has lost its answer: reported, and gated
                errors[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
                traceback.print_exc(file=sys.stderr)
        walls[name] = time.perf_counter() - t0
        if work["searches"]:
            f.work("cpsat_deterministic_s", round(work["deterministic_s"], 4), floor=0.5)
            f.work("cpsat_branches", work["branches"], floor=5000)
            f.work("cpsat_conflicts", work["conflicts"], floor=5000)
        if work["wall_guard_hits"]:
            f.notes.append(f"{work['wall_guard_hits']} CP-SAT search(es) stopped by the wall-clock guard: "
                           f"not reproducible")
        figures[name] = f.rows
        if f.notes:
            for note in f.notes:
                if note.startswith("skipped"):
                    figures[name] = {"skipped": {"kind": "note", "value": note}}
                else:
                    errors.setdefault(name, note)
        print(f"  {name:<22} {walls[name]:7.1f} s  {len(f.rows)} figures"
              + (f"  ERROR {errors[name]}" if name in errors else ""), flush=True)
    return figures, walls, errors


def verdict(kind: str, recorded: Any, now: Any, floor: float = 0.0) -> str:
    """``ok``, ``better`` or ``REGRESSED`` for one figure (``now`` against ``recorded``)."""
    if recorded is None:
        return "ok" if now is None else "better"
    if now is None:
        return "REGRESSED"  # an answer (or bound) no longer found
    if kind == "proof":
        if recorded and not now:
            return "REGRESSED"
        return "better" if now and not recorded else "ok"
    if kind == "work":
        if now > WORK_FACTOR * recorded + floor:
            return "REGRESSED"
        return "better" if now < recorded else "ok"
    close = math.isclose(now, recorded, rel_tol=REL_TOL, abs_tol=0.0)
    if close:
        return "ok"
    worse = now > recorded if kind == "lower" else now < recorded
    return "REGRESSED" if worse else "better"


def compare(recorded: dict[str, dict[str, Any]], figures: dict[str, dict[str, Any]], errors: dict[str, str],
            names: list[str]) -> list[dict[str, Any]]:
    """One row per figure: the case, the figure, its kind, recorded and now, and the verdict."""
    rows = []
    for case in names:
        old = recorded.get(case)
        new = figures.get(case, {})
        if case in errors:
            rows.append({"case": case, "figure": "(run)", "kind": "", "recorded": "ran",
                         "now": errors[case], "verdict": "REGRESSED"})
        if old is None:
            rows.extend({"case": case, "figure": k, "kind": v["kind"], "recorded": "", "now": v["value"],
                         "verdict": "new"} for k, v in new.items())
            continue
        if "skipped" in new or "skipped" in old:
            rows.append({"case": case, "figure": "(run)", "kind": "", "recorded": "",
                         "now": (new.get("skipped") or old.get("skipped"))["value"], "verdict": "skipped"})
            continue
        for key, rec in old.items():
            cur = new.get(key)
            if cur is None:
                if case not in errors:
                    rows.append({"case": case, "figure": key, "kind": rec["kind"], "recorded": rec["value"],
                                 "now": "(missing)", "verdict": "REGRESSED"})
                continue
            rows.append({"case": case, "figure": key, "kind": rec["kind"], "recorded": rec["value"],
                         "now": cur["value"], "verdict": verdict(rec["kind"], rec["value"], cur["value"],
                                                                  rec.get("floor", 0.0))})
        rows.extend({"case": case, "figure": k, "kind": v["kind"], "recorded": "", "now": v["value"],
                     "verdict": "new"} for k, v in new.items() if k not in old)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks check", description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="write the figures as the new record")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help=f"record file (default {BASELINE.name})")
    parser.add_argument("--only", nargs="*", default=None, help="run the cases whose names contain these words")
    parser.add_argument("--data", type=Path, default=DATA, help="shared instance data (default ../shared/data)")
    parser.add_argument("--all-rows", action="store_true", help="print every figure, not only those that changed")
    args = parser.parse_args(argv)
    names = [n for n in CASES if not args.only or any(w in n for w in args.only)]
    if not names:
        parser.error(f"no case matches {args.only}; the cases are {', '.join(CASES)}")
    if not args.data.is_dir():
        print(f"the shared data folder {args.data} is missing: pass --data DIR", file=sys.stderr)
        return 2
    print(f"benchmark gate: {len(names)} cases (wall time printed, never gated)", flush=True)
    t0 = time.perf_counter()
    figures, walls, errors = run_cases(names, args.data)
    total = time.perf_counter() - t0
    if args.record:
        if errors:
            print(f"not recorded: {len(errors)} case(s) failed to run: {', '.join(errors)}", file=sys.stderr)
            return 1
        old = json.loads(args.baseline.read_text())["cases"] if args.baseline.is_file() else {}
        old_walls = json.loads(args.baseline.read_text()).get("wall_s", {}) if args.baseline.is_file() else {}
        cases = {**old, **figures} if args.only else figures
        payload = {"benchmark": "check", "machine": machine(), "work_factor": WORK_FACTOR, "cases": cases,
                   "wall_s": {**(old_walls if args.only else {}), **{k: round(v, 2) for k, v in walls.items()}}}
        args.baseline.parent.mkdir(parents=True, exist_ok=True)
        args.baseline.write_text(json.dumps(payload, indent=1) + "\n")
        print(f"recorded {sum(len(v) for v in figures.values())} figures of {len(names)} cases "
              f"to {args.baseline} in {total:.1f} s")
        return 0
    if not args.baseline.is_file():
        print(f"no record at {args.baseline}: run with --record first", file=sys.stderr)
        return 2
    record = json.loads(args.baseline.read_text())
    recorded = record["cases"]
    here = machine()
    for solver in ("ortools", "z3", "python"):
        then = record.get("machine", {}).get(solver)
        if then != here.get(solver):
            print(f"note: the record was made with {solver} {then}, this run has {here.get(solver)}: a solver's "
                  f"work counts (and, past its limits, its answers) may differ; record again if so")
    rows = compare(recorded, figures, errors, names)
    for row in rows:
        row["wall_s"] = round(walls.get(row["case"], 0.0), 1)
    regressed = [r for r in rows if r["verdict"] == "REGRESSED"]
    shown = rows if args.all_rows else [r for r in rows if r["verdict"] != "ok"]
    print()
    if shown:
        exact = [{k: f"{v:.10g}" if isinstance(v, float) and k in ("recorded", "now") else v for k, v in r.items()}
                 for r in shown]  # the figures in full: a max-load may differ in its sixth digit
        print_table(exact, ["case", "figure", "kind", "recorded", "now", "verdict", "wall_s"])
        print()
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("ok", "better", "new", "skipped", "REGRESSED")}
    print(f"{len(rows)} figures of {len(names)} cases: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n)
          + f"; wall {total:.1f} s (not gated)")
    missing = sorted(set(recorded) - set(CASES))
    if missing:
        print(f"recorded cases that no longer exist: {', '.join(missing)}")
    if regressed:
        print(f"FAILED: {len(regressed)} figure(s) regressed (work counts may grow {WORK_FACTOR:g}x plus a floor; "
              f"answers, bounds and proofs may not get worse)")
        return 1
    if counts["better"] or counts["new"]:
        print("better or new figures: record them with `python -m benchmarks check --record`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
