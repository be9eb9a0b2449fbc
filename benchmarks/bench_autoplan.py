"""The planner's configuration and schedule against torchtitan's default, torch's auto_partition and AdaPipe.

Each row is a model in layers built here from its shapes
(:func:`transformer`: FLOPs from the matrix shapes at an assumed sustained
rate, activations of a bf16 block with flash attention, parameters at 16
bytes each sharded over a data-parallel degree, as stated per row), on one
pipeline degree. Every method's configuration is scored in the same cost
model: the configuration's per-stage pipeline planned by the library's
planner for the family the method names
(:func:`~schedsearch.plan.planner.plan_configuration`: the same times,
search and memory rules), each candidate's search with the same share:

* ``titan 1F1B`` / ``titan I1F1B``: torchtitan 0.3.0's default split for
  ``1F1B`` and ``Interleaved1F1B`` (two stages per rank), full activation
  checkpointing, planned as 1F1B / interleaved 1F1B v=2;
* ``ap 1f1b`` / ``ap i1f1b`` / ``ap izb``: torch's ``auto_partition`` for each
  schedule type it takes (written from its PR; see
  :mod:`schedsearch.plan.peers`), no recomputation, or full recomputation
  when no recomputation does not fit, planned as 1F1B / interleaved 1F1B
  v=2 / interleaved ZB v=2 (``-`` for the zero-bubble one then: torchtitan
  runs no split backward with activation checkpointing);
* ``adapipe``: the AdaPipe-style DP's split and per-stage recomputation,
  planned as 1F1B;
* ``planner``: :func:`~schedsearch.plan.planner.plan_layers` (configuration and
  schedule chosen together, pruned by bounds), with its bound (over the
  configurations it searched: every split, or the proposed splits), gap and
  wall time, and ``any-split bound``, valid for every split of the space
  (:func:`~schedsearch.plan.autoplan.space_floor_ms` where the splits are not all searched).

Step time in ms and the worst rank's peak GiB per method; ``-`` where the
configuration has no plan within the memory budget. Run: ``python -m
benchmarks autoplan`` (``--quick``: the first three rows; ``--time-limit S``:
each peer's search of its one configuration, default 3 s; ``--planner-limit S``:
the planner's whole call, default 120 s; ``--deterministic``).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchmarks._common import print_table, write_results

GIB = 2**30


def transformer(name: str, *, dim: int, ffn: int, blocks: int, vocab: int, seq: int, kv_ratio: float = 0.25,
                tflops: tuple[float, float] = (400.0, 420.0), dp_shards: int = 8, budget_gib: float = 78.0,
                global_batch: int = 16, num_ranks: int = 4) -> Any:
    """A decoder-only transformer in layers, from its shapes.

    Per token, a block's forward is 2 x its matrix parameters (q, o at
    ``dim^2``, k, v at ``kv_ratio * dim^2``, three FFN matrices at ``dim *
    ffn``) plus causal attention ``2 * seq * dim`` FLOPs; the backward is
    twice the forward, the input gradient the attention backward plus the
    matrix products' input side, the weight gradient 2 x parameters. Time is
    FLOPs over ``tflops`` (at micro-batch size 1 and 2). A block holds
    ``41 * dim`` bytes per token (bf16, flash attention) and ``2 * dim`` when
    recomputed (its input, also what it sends); under torchtitan's
    per-operator selective checkpointing (mode ``"op"``) it keeps its input,
    the attention's output and log-sum-exp and the q, v, w1 and w2 products,
    and recomputes the k, o and w3 products. The embedding is a gather
    (0.15 ms / 0.4 ms per 8192 tokens, forward / backward); the head is the
    output projection (``dim * vocab``), holding the bf16 logits and the
    norm's input and output. Parameters: 16 bytes each (weights, gradients,
    Adam) sharded over ``dp_shards`` data-parallel ranks.
    """
    from schedsearch.plan.layers import LayerModel

    matrices = dim * dim * (2 + 2 * kv_ratio) + 3 * dim * ffn
    per_param = 16 / dp_shards

    def measured(fwd_flops_token: float, wgrad_flops_token: float, held_token: int, sends_token: int,
                 checkpoint_token: int | None, fixed: tuple[float, float] | None = None,
                 selective: tuple[float, int] | None = None) -> list[dict[str, Any]]:
        out = []
        for size, rate in zip((1, 2), tflops):
            tokens = size * seq
            if fixed is None:
                f = fwd_flops_token * tokens / (rate * 1e12) * 1e3
                w = wgrad_flops_token * tokens / (rate * 1e12) * 1e3
                b = 2 * f
                i = b - w
            else:
                f, b = fixed[0] * tokens / 8192, fixed[1] * tokens / 8192
                i, w = 0.0, b
            m = {"microbatch_size": size, "forward_ms": round(f, 3), "backward_ms": round(i + w, 3) if fixed is None
                 else round(b, 3), "input_grad_ms": round(i, 3), "weight_grad_ms": round(w, 3),
                 "activation_bytes": held_token * tokens, "send_bytes": sends_token * tokens}
            if fixed is None:
                m["backward_ms"] = round(m["input_grad_ms"] + m["weight_grad_ms"], 3)
            if checkpoint_token is not None:
                m["checkpoint_bytes"] = checkpoint_token * tokens
            if selective is not None:
                m["selective_recompute_ms"] = round(selective[0] * tokens / (rate * 1e12) * 1e3, 3)
                m["selective_bytes"] = selective[1] * tokens
            out.append(m)
        return out

    # torchtitan's per-operator selective checkpointing keeps the block's input, the attention's output (and
    # its fp32 log-sum-exp per head of 128) and the odd-numbered of its seven matrix products (q, v, w1, w2) and
    # recomputes the even ones (k, o, w3)
    kept = 2 * (4 * dim + int(kv_ratio * dim) + ffn) + 4 * dim // 128
    again = 2 * (kv_ratio * dim * dim + dim * dim + dim * ffn)
    block = measured(2 * matrices + 2 * seq * dim, 2 * matrices, 41 * dim, 2 * dim, 2 * dim, selective=(again, kept))
    head_flops = 2 * dim * vocab
    head = measured(head_flops, head_flops, 2 * vocab + 4 * dim, 0, None)
    embed = measured(0, 0, 8, 2 * dim, None, fixed=(0.15, 0.4))
    return LayerModel(name=name, global_batch=global_batch, num_ranks=num_ranks,
                      memory_budget_bytes=int(budget_gib * GIB), p2p={"latency_ms": 0.02,
                                                                      "bandwidth_bytes_per_s": "50 GB"},
                      layers=[{"name": "tok_embeddings", "kind": "embedding", "measured": embed,
                               "parameter_bytes": int(vocab * dim * per_param)},
                              {"name": "block", "repeat": blocks, "measured": block,
                               "parameter_bytes": int(matrices * per_param)},
                              {"name": "head", "kind": "head", "measured": head,
                               "parameter_bytes": int((dim * vocab + dim) * per_param)}])


LLAMA8B = dict(dim=4096, ffn=14336, blocks=32, vocab=128256, seq=8192)
LLAMA70B = dict(dim=8192, ffn=28672, blocks=80, vocab=128256, seq=8192, kv_ratio=0.125)

#: (row name, what it shows, the model's arguments)
ROWS = [
    ("llama3-8b p=4", "Llama-3-8B shapes, 4 ranks", dict(LLAMA8B, num_ranks=4, global_batch=16)),
    ("llama3-8b p=8", "Llama-3-8B shapes, 8 ranks", dict(LLAMA8B, num_ranks=8, global_batch=16)),
    ("llama3-8b p=16", "Llama-3-8B shapes, 16 ranks", dict(LLAMA8B, num_ranks=16, global_batch=32)),
    ("llama3-70b p=4", "Llama-3-70B shapes, 4 ranks: memory binds", dict(LLAMA70B, num_ranks=4, global_batch=16)),
    ("llama3-70b p=8", "Llama-3-70B shapes, 8 ranks", dict(LLAMA70B, num_ranks=8, global_batch=16)),
    ("llama3-70b p=16", "Llama-3-70B shapes, 16 ranks", dict(LLAMA70B, num_ranks=16, global_batch=32)),
    ("heavy head p=4", "dim 2048, 16 blocks, vocabulary 256k: embedding and head outweigh blocks",
     dict(dim=2048, ffn=8192, blocks=16, vocab=262144, seq=8192, num_ranks=4, global_batch=16)),
    ("8b tight p=4", "Llama-3-8B shapes in 40 GiB per rank: recomputation needed",
     dict(LLAMA8B, num_ranks=4, global_batch=16, budget_gib=40.0)),
    ("61 blocks p=8", "61 blocks (DeepSeek-V3's count, dense dim 4096): uneven",
     dict(dim=4096, ffn=11008, blocks=61, vocab=129280, seq=4096, num_ranks=8, global_batch=16)),
]


#: the peer methods' columns
PEERS = ("titan 1F1B", "titan I1F1B", "ap 1f1b", "ap i1f1b", "ap izb", "adapipe")


def methods(model: Any, p: int) -> list[tuple[str, Any, Any, str]]:
    """(column, configuration or None, candidate, note) of each peer method."""
    from schedsearch.errors import SchedSearchError
    from schedsearch.plan.candidates import Candidate
    from schedsearch.plan.peers import adapipe, auto_partition, torchtitan_default

    out = []
    one, inter, izb = (Candidate(family="1f1b"), Candidate(family="interleaved", chunks=2),
                       Candidate(family="interleaved", chunks=2, split_backward=True))
    for column, schedule, cand in (("titan 1F1B", "1F1B", one), ("titan I1F1B", "Interleaved1F1B", inter)):
        try:
            out.append((column, torchtitan_default(model, num_ranks=p, schedule=schedule), cand, ""))
        except SchedSearchError as exc:
            out.append((column, None, cand, str(exc)))
    for column, kind, cand in (("ap 1f1b", "1f1b", one), ("ap i1f1b", "interleaved_1f1b", inter),
                               ("ap izb", "interleaved_zero_bubble", izb)):
        try:
            out.append((column, auto_partition(model, num_ranks=p, schedule_type=kind), cand, ""))
        except SchedSearchError as exc:
            out.append((column, None, cand, str(exc)))
    try:
        out.append(("adapipe", adapipe(model, num_ranks=p), one, ""))
    except SchedSearchError as exc:
        out.append(("adapipe", None, one, str(exc)))
    return out


def score_row(name: str, spec: dict[str, Any], *, time_limit_s: float, planner_limit_s: float, deterministic: bool,
              parallel: int | None) -> dict[str, Any]:
    """Every method's step time and peak on one row, and the planner's."""
    from schedsearch.errors import NoFittingPlanError
    from schedsearch.plan.planner import plan_configuration, plan_layers
    from schedsearch.plan.layers import Recomputation

    model = transformer(name, **spec)
    p = spec["num_ranks"]
    row: dict[str, Any] = {"row": name}
    detail: dict[str, Any] = {"row": name}
    for column, config, cand, why in methods(model, p):
        if config is None:
            row[column], detail[column] = "-", {"note": why}
            continue
        r = plan_configuration(model, config, cand, time_limit_s=time_limit_s, deterministic=deterministic)
        mark = ""
        if r.makespan_ms is None and column.startswith("ap ") and not config.recomputation.recomputes:
            config = type(config)(split=config.split, num_ranks=config.num_ranks, layout=config.layout,
                                  microbatch_size=config.microbatch_size, num_microbatches=config.num_microbatches,
                                  recomputation=Recomputation(mode="full"))
            r = plan_configuration(model, config, cand, time_limit_s=time_limit_s, deterministic=deterministic)
            mark = "+full"
        if cand.split_backward and config.recomputation.recomputes:  # torchtitan's checkpointing runs one backward
            row[column], row[f"{column} GiB"] = "-", "-"
            detail[column] = {"configuration": config.label(), "family": cand.label,
                              "note": "no plan torchtitan runs: without recomputation it does not fit, and "
                                      "torchtitan runs no split backward with activation checkpointing"}
            continue
        row[column] = "-" if r.makespan_ms is None else round(r.makespan_ms, 1)
        detail[column] = {"configuration": config.label() + (f" {mark}" if mark else ""), "family": cand.label,
                          "step_ms": r.makespan_ms, "bound_ms": r.bound_ms,
                          "peak_gib": max(r.peak_gib) if r.peak_gib else None, "note": r.note[:200]}
        row[f"{column} GiB"] = "-" if not r.peak_gib else round(max(r.peak_gib), 1)
    t0 = time.perf_counter()
    try:
        result = plan_layers(model, num_ranks=p, time_limit_s=planner_limit_s, deterministic=deterministic,
                             parallel=parallel)
    except NoFittingPlanError as exc:
        row["planner"] = "-"
        detail["planner"] = {"note": str(exc)[:300]}
        return {"table": row, "detail": detail}
    wall = time.perf_counter() - t0
    best = result.best
    row["planner"] = round(best.makespan_ms, 1)
    row["planner GiB"] = round(max(best.row.peak_gib), 1)
    row["bound"] = None if result.bound_ms is None else round(result.bound_ms, 1)
    row["gap %"] = None if result.gap is None else round(100 * result.gap, 1)
    row["any-split bound"] = None if result.space_bound_ms is None else round(result.space_bound_ms, 1)
    row["wall s"] = round(wall, 1)
    others = [row[c] for c in PEERS if isinstance(row.get(c), float)]
    row["vs best other"] = None if not others else f"{100 * (best.makespan_ms / min(others) - 1):+.1f}%"
    titan = [row[c] for c in ("titan 1F1B", "titan I1F1B") if isinstance(row.get(c), float)]
    row["vs titan"] = None if not titan else f"{100 * (best.makespan_ms / min(titan) - 1):+.1f}%"
    detail["planner"] = {"configuration": best.configuration.label(), "family": best.candidate.label,
                         "origins": list(best.origins), "step_ms": best.makespan_ms,
                         "peak_gib": max(best.row.peak_gib), "bound_ms": result.bound_ms, "gap": result.gap,
                         "covered": result.covered, "space_bound_ms": result.space_bound_ms, "configurations": result.num_configurations,
                         "searched": result.searched, "pruned": result.pruned, "skipped": result.skipped,
                         "not_reached": result.not_reached,
                         "breakdown": None if best.breakdown is None else best.breakdown.label(),
                         "runner_up": None if result.runner_up is None else result.runner_up.to_dict(),
                         "by_recomputation": [m.to_dict() for m in result.by_recomputation()],
                         "wall_s": round(wall, 1)}
    print(result.table(rows=5))
    return {"table": row, "detail": detail}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first three rows")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of row names")
    parser.add_argument("--time-limit", type=float, default=3.0, help="each peer's one search (s)")
    parser.add_argument("--planner-limit", type=float, default=120.0, help="the planner's whole call (s)")
    parser.add_argument("--deterministic", action="store_true", help="deterministic time limits")
    parser.add_argument("--parallel", type=int, default=1, help="planner candidates at once (default 1)")
    args = parser.parse_args(argv)
    rows = ROWS[:3] if args.quick else ROWS
    if args.only:
        rows = [r for r in rows if any(o in r[0] for o in args.only)]
    table, details = [], []
    for name, what, spec in rows:
        print(f"\n--- {name}: {what}", flush=True)
        out = score_row(name, spec, time_limit_s=args.time_limit, planner_limit_s=args.planner_limit,
                        deterministic=args.deterministic, parallel=args.parallel)
        table.append(out["table"])
        details.append(out["detail"])
        print_table([out["table"]])
    print("\nstep time ms per method ('-': no plan within the budget), the planner's bound, gap and wall time")
    print_table(table)
    write_results("autoplan_quick" if args.quick else "autoplan", table, details=details,
                  time_limit_s=args.time_limit, planner_limit_s=args.planner_limit, deterministic=args.deterministic)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
