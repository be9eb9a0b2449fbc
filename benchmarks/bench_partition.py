"""Exact contiguous DP on every dnn-partitioning throughput workload.

For each workload: ideals, our DP optimum and time, peak memory, and the
reference C++ implementation's optimum and wall time on a 2-core machine
(from the data's ``reference_values.json``; the C++ code prints 6
significant digits, so agreement means equal after rounding to 6 digits,
i.e. a relative difference below 5e-6). Also DPL (one linear order) against
its reference.

Targets: every workload the reference finishes, in no more wall time than
the reference's; InceptionV3 inference (36,596 ideals; the reference ran
out of memory at 16 GB) exactly within 15 minutes under 4 GB.

Each workload runs in a fresh child process so that its peak RSS is its
own; ``time_s`` is the median of ``--repeats`` runs inside that process
(loading the file excluded, contraction and ideals included) and
``process_s`` the wall time of one whole process (interpreter start,
imports, reading the file, solving), the measure the reference figures use.

With ``--reference-dp BINARY`` (the reference ``dp.cpp`` compiled with
``g++ -O3``; not part of this project) the reference runs side by side
on the same machine and load: its wall time (median of ``--repeats``), its
peak RSS and its full-precision optimum (it prints ``maxLoad`` in its JSON
output), so agreement and speed are compared under equal conditions. The
workloads where the reference runs out of memory are not run with it.
Run: ``python -m benchmarks partition`` (``--quick``: small workloads only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._common import peak_rss_bytes, print_table, write_results

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "dnn-partitioning"

WORKLOADS = [
    "LayerGraphs/bert24_inference", "LayerGraphs/bert24_training",
    "LayerGraphs/gnmt_inference", "LayerGraphs/gnmt_training",
    "LayerGraphs/inceptionv3_inference", "LayerGraphs/inceptionv3_training",
    "LayerGraphs/resnet50_inference", "LayerGraphs/resnet50_training",
    "OperatorGraphs/bert_l-3_inference", "OperatorGraphs/bert_l-3_training",
    "OperatorGraphs/bert_l-6_inference", "OperatorGraphs/bert_l-6_training",
    "OperatorGraphs/bert_l-12_inference", "OperatorGraphs/bert_L-12_training",
    "OperatorGraphs/resnet50_inference", "OperatorGraphs/resnet50_training",
]
QUICK = ["LayerGraphs/bert24_inference", "LayerGraphs/resnet50_training",
         "OperatorGraphs/bert_l-3_inference", "OperatorGraphs/resnet50_inference"]
#: InceptionV3 inference: exact within 15 minutes under 4 GB (the reference could not)
INCEPTION = "LayerGraphs/inceptionv3_inference"
INCEPTION_LIMITS = (900.0, 4 * 2**30)
INCEPTION_BOUNDS = (51.0419, 51.5519)  # the reference's lower bound and its DPL value


PROCESS_SCRIPT = (
    "from pathlib import Path; from schedsearch.loaders.opgraph import read_dnn_partitioning; "
    "from schedsearch.partition import partition_dp; "
    "print(partition_dp(read_dnn_partitioning(Path({{data!r}}) / 'throughput-inputs' / '{name}.json')).max_load)"
)


def _wall(text: str | None) -> float | None:
    """'0:13.16' or '1:02:03.5' -> seconds."""
    if not text:
        return None
    parts = [float(p) for p in text.split(":")]
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    return seconds


def run_process(cmd: list[str], stdin_path: Path | None = None) -> tuple[float, int, str]:
    """Run ``cmd``; return (wall seconds, peak RSS bytes of that process, stdout)."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                cwd=ROOT)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    finally:
        if stdin_path:
            stdin.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[0]} failed with status {status}")
    return wall, usage.ru_maxrss * 1024, out.decode()


def run_reference(binary: str, name: str, repeats: int) -> dict:
    path = DATA / "throughput-inputs" / f"{name}.json"
    walls, peak, out = [], 0, ""
    for _ in range(repeats):
        wall, rss, out = run_process([binary], path)
        walls.append(wall)
        peak = max(peak, rss)
    result = json.loads(out)
    return {"max_load": result["maxLoad"], "wall_s": statistics.median(walls), "peak_rss": peak}


def child(name: str, repeats: int) -> None:
    """Run one workload and print one JSON line (called in a fresh process)."""
    from schedsearch.loaders.opgraph import read_dnn_partitioning
    from schedsearch.partition import partition_dp, partition_dpl

    w = read_dnn_partitioning(DATA / "throughput-inputs" / f"{name}.json")
    times = []
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = partition_dp(w)
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    dpl = partition_dpl(w)
    dpl_time = time.perf_counter() - t0
    print(json.dumps({
        "max_load": result.max_load,
        "evaluated": result.cost.max_load,
        "violations": list(result.cost.violations),
        "ideals": result.stats["ideals"],
        "pairs": result.stats["pairs"],
        "leaf_memory": result.stats.get("leaf_memory"),
        "time_s": statistics.median(times),
        "runs_s": times,
        "dpl": dpl.max_load,
        "dpl_time_s": dpl_time,
        "peak_rss": peak_rss_bytes(),
    }))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="four small workloads, one repeat")
    parser.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="*", default=None, help="substrings of workload names to run")
    parser.add_argument("--reference-dp", metavar="BINARY", default=None,
                        help="the reference dp.cpp compiled with g++ -O3, run side by side")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.repeats)
        return 0
    if not (DATA / "reference_values.json").is_file():
        print(f"skipped: {DATA} not found")
        return 0
    reference = json.loads((DATA / "reference_values.json").read_text())["workloads"]
    names = QUICK if args.quick else WORKLOADS
    if args.only:
        names = [n for n in names if any(o in n for o in args.only)]
    repeats = 1 if args.quick else args.repeats
    rows = []
    for name in names:
        ref = reference[f"throughput-inputs/{name}.json"]
        # InceptionV3 takes seconds here but is guarded by its 15-minute target
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_partition", "--child", name, "--repeats",
             str(1 if name.startswith("LayerGraphs/inceptionv3") else repeats)],
            cwd=ROOT, capture_output=True, text=True, timeout=INCEPTION_LIMITS[0] * 2,
        )
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            rows.append({"workload": name, "status": "error"})
            continue
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        process_s, _, _ = run_process(
            [sys.executable, "-c", PROCESS_SCRIPT.format(name=name).format(data=str(DATA))])
        ref_dp, ref_dpl = ref["dp"]["maxLoad"], ref["dpl"]["maxLoad"]
        ref_wall = _wall(ref["dp"]["wall"]) if ref_dp is not None else None
        ref_rss = ref["dp"]["maxrss_kb"] * 1024 if ref["dp"]["maxrss_kb"] and ref_dp is not None else None
        side = None
        if args.reference_dp and ref_dp is not None:
            side = run_reference(args.reference_dp, name, repeats)
        ours = out["max_load"]
        solve_ok = process_ok = None
        if ref_dp is not None:
            agrees = float(f"{ours:.6g}") == ref_dp
            if side is not None:
                agrees = agrees and abs(ours - side["max_load"]) <= 1e-9 * abs(side["max_load"])
                solve_ok = out["time_s"] <= side["wall_s"]
                process_ok = process_s <= side["wall_s"]
            else:
                # the published wall times are rounded to 10 ms
                solve_ok = out["time_s"] <= max(ref_wall, 0.005)
                process_ok = process_s <= max(ref_wall, 0.005)
            status = "ok" if agrees and solve_ok else ("SLOWER" if agrees else "MISMATCH")
        elif name == INCEPTION:
            within = INCEPTION_BOUNDS[0] - 1e-4 <= ours <= INCEPTION_BOUNDS[1] + 1e-4
            limits = out["time_s"] <= INCEPTION_LIMITS[0] and out["peak_rss"] <= INCEPTION_LIMITS[1]
            status = "ok" if within and limits else "MISSED"
        else:
            status = "no reference"
        rows.append({
            "workload": name,
            "ideals": out["ideals"],
            "ref_ideals": ref["dp"]["ideals"],
            "optimum": round(ours, 6),
            "ref_optimum": ref_dp,
            "rel_diff": None if ref_dp is None else abs(ours - ref_dp) / ref_dp,
            "evaluated": round(out["evaluated"], 6),
            "time_s": round(out["time_s"], 3),
            "process_s": round(process_s, 3),
            "ref_time_s": ref_wall,
            "speedup": None if not ref_wall else round(ref_wall / out["time_s"], 1),
            "side_ref_s": None if side is None else round(side["wall_s"], 3),
            "side_ratio": None if side is None else round(side["wall_s"] / process_s, 2),
            "side_ref_mb": None if side is None else round(side["peak_rss"] / 2**20, 1),
            "side_rel_diff": None if side is None else abs(ours - side["max_load"]) / side["max_load"],
            "peak_mb": round(out["peak_rss"] / 2**20, 1),
            "ref_peak_mb": None if ref_rss is None else round(ref_rss / 2**20, 1),
            "pairs": out["pairs"],
            "leaf_memory": out["leaf_memory"],
            "dpl": round(out["dpl"], 6),
            "ref_dpl": ref_dpl,
            "dpl_ok": float(f"{out['dpl']:.6g}") == ref_dpl,
            "solve_faster": solve_ok,
            "process_faster": process_ok,
            "status": status,
            "runs_s": [round(t, 3) for t in out["runs_s"]],
        })
        print_table([rows[-1]], [c for c in rows[-1] if c not in ("runs_s", "rel_diff", "evaluated")])
    print()
    cols = ["workload", "ideals", "optimum", "ref_optimum", "time_s", "process_s", "ref_time_s", "speedup",
            "peak_mb", "ref_peak_mb", "dpl", "ref_dpl", "solve_faster", "process_faster", "status"]
    if args.reference_dp:
        cols[-1:-1] = ["side_ref_s", "side_ratio", "side_ref_mb", "side_rel_diff"]
    print_table(rows, cols)
    missed = [r["workload"] for r in rows if r.get("status") not in ("ok", "no reference")]
    print("targets missed (optimum or solve time): " + (", ".join(missed) if missed else "none"))
    slower = [r["workload"] for r in rows if r.get("process_faster") is False]
    print("whole process (interpreter start, imports, reading, solving) slower than the reference: "
          + (", ".join(slower) if slower else "none"))
    write_results("partition_quick" if args.quick else "partition", rows,
                  note="times: median of repeats in one child process per workload; reference times "
                       "are the C++ DP's wall time on a 2-core machine")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
