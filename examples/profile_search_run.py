"""Profile a small transformer, search a pipeline schedule under a memory limit, run it on PyTorch.

1. Build a transformer-like model (embedding, a few pre-norm blocks, head)
   split into 4 stages, in float64.
2. Profile every stage on one micro-batch: forward, full backward, input-
   and weight-gradient times (median of repeats) and activation memory;
   build the placement problem (stage ``s`` on device ``s``, zero-bubble
   split into I and W by default) with those figures as integer durations
   (micro-batches of other sizes, ``--microbatch-sizes``, get their own
   per-micro-batch durations).
3. Search a makespan-optimal schedule with every device limited to
   ``--memory-microbatches`` micro-batches of activations.
4. Export it to PyTorch's compute-only CSV (the stage-to-rank map travels
   beside it) and execute it on 4 processes with PyTorch's own pipeline
   runtime, comparing every gradient with a one-process reference.

It prints the predicted makespan (in seconds: time units x the profile's
unit), the measured step time and the gradient check. The prediction
counts compute only; the measured step also pays inter-process
communication and, on a machine with fewer cores than processes, sharing
the cores. Needs the optional extra ``schedsearch[torch]``.

Run: ``python examples/profile_search_run.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="transformer:4x32", help="model spec (default transformer:4x32)")
    parser.add_argument("--stages", type=int, default=4, help="pipeline stages = processes (default 4)")
    parser.add_argument("--microbatches", type=int, default=8, help="micro-batches per step (default 8)")
    parser.add_argument("--microbatch-size", type=int, default=4, help="samples per micro-batch (default 4)")
    parser.add_argument("--microbatch-sizes", type=lambda t: [int(x) for x in t.split(",")],
                        help="micro-batches of different sizes, e.g. 4,2,4,6 (overrides the two options above)")
    parser.add_argument("--memory-microbatches", type=float, default=2.0,
                        help="activation limit per device, in micro-batches of the largest stage (default 2)")
    parser.add_argument("--full-backward", action="store_true", help="B blocks instead of the I/W split")
    parser.add_argument("--time-limit", type=float, default=10.0, help="search time limit in seconds (default 10)")
    parser.add_argument("--steps", type=int, default=3, help="training steps to run (default 3)")
    parser.add_argument("--out-dir", type=Path, default=Path("profile_search_run_out"), help="where to write files")
    args = parser.parse_args(argv)

    from schedsearch.export.torch_csv import stage_to_rank, write_torch_csv
    from schedsearch.runtime import build_workload, profile, run, torch_available
    from schedsearch.schedule import metrics
    from schedsearch.search import optimal

    if not torch_available():
        print("this example runs models on PyTorch: install the optional extra schedsearch[torch]")
        return 1
    sizes = args.microbatch_sizes or [args.microbatch_size] * args.microbatches
    workload = build_workload(args.model, args.stages, batch_size=sum(sizes))
    print(f"model: {workload}; micro-batch sizes {sizes}")

    # 2. profile every size that occurs (the first is the base; the others get their own durations)
    prof = profile(workload.stages, workload.inputs, target=workload.target, loss_fn=workload.loss_fn,
                   sizes=list(dict.fromkeys(sizes)))
    print(prof.table())
    act = prof.memory_units()
    limit = int(args.memory_microbatches * max(act))
    problem = prof.to_problem(args.stages, split_backward=not args.full_backward, memory=limit,
                              microbatch_sizes=sizes)
    print(f"problem: {problem}")
    print(f"memory limit: {limit} units of {prof.memory_unit_bytes} B per device "
          f"({args.memory_microbatches:g} x the largest stage's {max(act)} units per micro-batch)")

    # 3. search
    result = optimal(problem, time_limit_s=args.time_limit, workers=2, seed=0)
    print(f"search: {result}")
    if result.schedule is None:
        print("no schedule found within the limits")
        return 1
    schedule = result.schedule
    m = metrics(problem, schedule)
    print(f"predicted: {m}")

    # 4. export and execute
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "problem.json").write_text(problem.to_json())
    csv_path = write_torch_csv(problem, schedule, args.out_dir / "plan.csv")
    mapping = stage_to_rank(problem)
    (args.out_dir / "stage_to_rank.json").write_text(json.dumps(mapping))
    print(f"wrote {csv_path} (stage-to-rank {mapping})")
    outcome = run(csv_path, workload, num_processes=args.stages, steps=args.steps, microbatch_sizes=sizes,
                  stage_to_rank=[mapping[s] for s in range(len(mapping))], timeout_s=120)
    (args.out_dir / "run.json").write_text(json.dumps(outcome.to_dict(), indent=2))

    predicted_s = m.makespan * prof.time_unit_s
    print(f"predicted makespan: {m.makespan} units x {prof.time_unit_s:g} s = {1e3 * predicted_s:.2f} ms (compute only)")
    print(f"measured step time: {1e3 * outcome.step_time_s:.2f} ms (median of steps 2..{args.steps}, slowest rank; "
          f"ratio measured / predicted {outcome.step_time_s / predicted_s:.1f})")
    print(f"gradient check: {'EQUAL' if outcome.grads_equal else 'DIFFERENT'} "
          f"(max |difference| {outcome.max_grad_diff:.3g} over {len(outcome.grad_diffs)} parameters, "
          f"tolerance {outcome.tolerance:g}); loss {outcome.loss[-1]:.6f} vs reference {outcome.reference_loss[-1]:.6f}")
    return 0 if outcome.grads_equal else 1


if __name__ == "__main__":
    raise SystemExit(main())
