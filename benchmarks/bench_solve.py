"""``solve`` against every applicable single strategy, side by side, same time limit.

Rows (the table of the "one front door" capability):

* V 4x16 (F=1, B=2), memory 4 and unbounded;
* ZB-H1, 8 devices, 32 micro-batches, F = I = W = 2, memory 8;
* ZB-V, 8 devices, 32 micro-batches;
* DualPipe in She et al.'s setting: PP=8, 24 micro-batches, F=I=W=1, an
  activation held until its W ends ("free at end"), limit PP+1;
* DualPipe PP=32, 128 chunks, limit PP+1;
* interleaved 1F1B p=4, v=2, m=16;
* Tessel's M shape, 8 devices, memory 20;
* ft10 (job shop) and mk09 (flexible job shop).

Single strategies: ``optimal``, ``scale_search``, ``repetend`` (where the
problem is periodic), ``jobshop`` (job shops) and the best handcrafted
schedule of the placement (a construction, no search). Every run gets the
same limit and runs in a child process (time and peak RSS of the child).

For each row: every strategy's objective, bound, status and wall time; the
best single strategy (least objective, then least time); ``solve``'s
objective, the time at which its incumbent first reached the best single
strategy's objective (from its progress events), and the ratio of that time
to the best single strategy's own time (the target is at most 1.5). The
machine is shared: compare ratios measured in the same run.

Run: ``python -m benchmarks solve`` (``--quick`` for the small rows,
``--time-limit`` to change the 60 s limit, ``--rows`` to pick rows).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import time
from pathlib import Path
from typing import Any, Callable

from benchmarks._common import write_results

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def _jobshop_instance(name: str):
    from schedsearch.loaders import read_index, read_instance

    index = {**read_index(DATA / "jsp" / "classical.json"), **read_index(DATA / "fjsp" / "instances.json")}
    return read_instance(index[name].path).problem


def _rows() -> dict[str, Callable[[], Any]]:
    from schedsearch.placements import dualpipe, interleaved, vshape, vshape_chunks, zero_bubble
    from schedsearch.placements.tessel import tessel_m

    return {
        "V 4x16 memory 4": lambda: vshape(4, 16, memory=4),
        "V 4x16 unbounded": lambda: vshape(4, 16),
        "ZB-H1 8x32 memory 8": lambda: zero_bubble(8, 32, forward=2, input_grad=2, weight_grad=2, memory=8),
        "ZB-V 8x32": lambda: vshape_chunks(8, 32),
        "DualPipe She PP=8 m24 limit 9": lambda: dualpipe(8, 24, forward=1, backward=2, weight_grad=1, memory=9,
                                                          free_at_end=True),
        "DualPipe PP=32 128 chunks limit 33": lambda: dualpipe(32, 128, memory=33),
        "interleaved 1F1B p4 v2 m16": lambda: interleaved(4, 2, 16),
        "interleaved 1F1B p4 v2 m16 memory 4": lambda: interleaved(4, 2, 16, memory=4),
        "Tessel M 8 devices m32 memory 20": lambda: tessel_m(8, 32, memory=20),
        "ft10": lambda: _jobshop_instance("ft10"),
        "mk09": lambda: _jobshop_instance("mk09"),
    }


QUICK = ("V 4x16 memory 4", "V 4x16 unbounded", "DualPipe She PP=8 m24 limit 9", "interleaved 1F1B p4 v2 m16",
         "interleaved 1F1B p4 v2 m16 memory 4")


def _applicable(problem) -> list[str]:
    from schedsearch.encode.repetend import repetend_support_error
    from schedsearch.rewrite import reduced_problem

    out = ["optimal"]
    if problem.num_microbatches == 1:
        out.append("jobshop")
    if all(b.is_fixed for b in problem.graph.blocks) and not problem.fixed_orders:
        out.append("scale_search")
    if problem.num_microbatches > 1 and repetend_support_error(reduced_problem(problem)) is None:
        out.append("repetend")
    out.append("handcrafted")
    return out


def _best_handcrafted(problem):
    """The best valid handcrafted schedule of the placement (none when no construction matches)."""
    from schedsearch.errors import SchedSearchError
    from schedsearch.result import SearchResult, Status
    from schedsearch.schedule import objective_value
    from schedsearch.search.portfolio import _handcrafted
    from schedsearch.validate import validate

    best = None
    for build, _ in _handcrafted(problem):
        try:
            plans = build()
        except SchedSearchError:
            continue  # not this construction's placement
        for schedule, engine in plans:
            if validate(problem, schedule):
                continue
            value = objective_value(schedule, problem.objective)
            if best is None or value < best[0]:
                best = (value, schedule, engine)
    if best is None:
        return SearchResult(status=Status.UNKNOWN)
    return SearchResult(status=Status.FEASIBLE, schedule=best[1], objective=best[0], engine=best[2])


def _run(row: str, strategy: str, limit: float, conn) -> None:
    problem = _rows()[row]()
    events: list[tuple[float, int | None]] = []

    def progress(event) -> None:
        events.append((event.elapsed_s, event.incumbent))

    t0 = time.perf_counter()
    if strategy == "solve":
        from schedsearch.search.portfolio import solve

        result = solve(problem, time_limit_s=limit, progress=progress, workers=2, seed=0)
    elif strategy == "optimal":
        from schedsearch.search import optimal

        result = optimal(problem, time_limit_s=limit, workers=2, seed=0)
    elif strategy == "scale_search":
        from schedsearch.search import scale_search

        result = scale_search(problem, time_limit_s=limit, workers=2, seed=0)
    elif strategy == "repetend":
        from schedsearch.search import repetend

        from schedsearch.rewrite import reduced_problem

        # redundant overlap declarations dropped first, as solve and scale_search do
        result = repetend(reduced_problem(problem), time_limit_s=limit, workers=2, seed=0)
    elif strategy == "jobshop":
        from schedsearch.search import jobshop

        result = jobshop(problem, time_limit_s=limit, workers=2, seed=0)
    else:
        result = _best_handcrafted(problem)
    wall = time.perf_counter() - t0
    levels = [lv.to_dict() for lv in getattr(result, "levels", ())]
    conn.send({
        "row": row, "strategy": strategy, "status": result.status.value, "objective": result.objective,
        "bound": result.lower_bound, "time_s": round(wall, 3),
        "engine": getattr(result, "engine", "") or str(result.stats.get("found_by", "")),
        "bound_engine": getattr(result, "bound_engine", ""), "levels": levels,
        "peak_memory": _peak(problem, result.schedule),
        "events": events, "peak_rss_MB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    })
    conn.close()


def _peak(problem, schedule) -> int | None:
    from schedsearch.schedule import peak_memory

    if schedule is None or not any(b.memory or b.workspace for b in problem.graph.blocks):
        return None
    return max(peak_memory(problem, schedule).values())


def _child(row: str, strategy: str, limit: float) -> dict[str, Any]:
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_run, args=(row, strategy, limit, send))
    proc.start()
    send.close()  # the child holds the only sending end: a crash ends the wait
    try:
        out = recv.recv()
    except EOFError:
        out = {"row": row, "strategy": strategy, "status": "CRASHED", "objective": None, "time_s": None}
    proc.join()
    return out


def _reached(events: list[tuple[float, int | None]], target: int | None) -> float | None:
    if target is None:
        return None
    for elapsed, incumbent in events:
        if incumbent is not None and incumbent <= target:
            return elapsed
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_solve", description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--quick", action="store_true", help="the small rows only")
    parser.add_argument("--rows", nargs="*", help="substrings of the row names to run")
    args = parser.parse_args(argv)
    names = list(_rows())
    if args.quick:
        names = [n for n in names if n in QUICK]
    if args.rows:
        names = [n for n in names if any(r.lower() in n.lower() for r in args.rows)]
    table, runs = [], []
    for row in names:
        if row in ("ft10", "mk09") and not (DATA / "jsp" / "classical.json").is_file():
            print(f"{row}: no instance data beside the repository; skipped")
            continue
        problem = _rows()[row]()
        singles = [_child(row, s, args.time_limit) for s in _applicable(problem)]
        ours = _child(row, "solve", args.time_limit)
        runs += singles + [ours]
        found = [s for s in singles if s["objective"] is not None]
        best = min(found, key=lambda s: (s["objective"], s["time_s"])) if found else None
        reached = _reached(ours.get("events", []), best["objective"] if best else None)
        own = best["time_s"] if best else None
        entry = {
            "problem": row,
            **{s["strategy"]: _cell(s) for s in singles},
            "best single": best["strategy"] if best else None,
            "solve": _cell(ours),
            "solve engine": ours.get("engine"),
            "solve bound by": ours.get("bound_engine"),
            "solve levels": "; ".join(f"{lv['name']} {lv['value']}{' proven' if lv['proven'] else ''}"
                                      for lv in ours.get("levels") or []),
            "reached best at s": None if reached is None else round(reached, 2),
            "ratio to best's time": None if reached is None or not own else round(reached / max(own, 0.05), 2),
            "never worse": best is None or (ours["objective"] is not None and ours["objective"] <= best["objective"]),
        }
        table.append(entry)
        print(f"\n{row}")
        for key, value in entry.items():
            if key != "problem":
                print(f"  {key:24} {value}")
    write_results("solve", table, time_limit_s=args.time_limit, runs=runs)
    return 0


def _cell(run: dict[str, Any]) -> str:
    if run.get("objective") is None:
        return f"{run['status']} ({run.get('time_s')} s)"
    bound = "" if run.get("bound") in (None, run["objective"]) else f" >= {run['bound']}"
    proven = " proven" if run["status"] == "OPTIMAL" else ""
    peak = f", peak {run['peak_memory']}" if run.get("peak_memory") is not None else ""
    return f"{run['objective']}{proven}{bound}{peak} in {run['time_s']} s"


if __name__ == "__main__":
    raise SystemExit(main())
