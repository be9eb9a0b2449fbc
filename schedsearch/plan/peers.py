"""The configurations other tools choose for a model in layers, in this library's cost model.

Each function takes a :class:`~schedsearch.plan.layers.LayerModel` and
returns the :class:`~schedsearch.plan.layers.Configuration` its tool would
run, so the planner can score them beside its own:

* :func:`torchtitan_default`: torchtitan 0.3.0's even split
  (``pipeline_parallel_layers_per_stage`` and the first- and last-stage-less-
  layers weights, as ``distributed/pipeline_parallel.py`` computes them),
  with full activation checkpointing;
* :func:`auto_partition`: torch's ``auto_partition`` (pytorch PR 179212, from
  torchtitan PR 2113), written from the PR's code (read, not copied): a DP
  over contiguous splits into ``p * v`` stages minimising the largest stage
  forward + backward time, then a search that simulates the schedule
  (``1f1b``, ``interleaved_1f1b``, ``interleaved_zero_bubble``, torch's
  operation orders), finds the stage with the most critical-path time in the
  steady phase, and moves its first layer to the stage before or its last to
  the stage after, re-balancing the prefix with the same DP; the best
  simulated split is kept. Differences from the PR's code: the schedule is
  simulated event by event in milliseconds (a rank starts its next action
  when its inputs have arrived), the steady phase is the span from the first
  backward's start to the last forward's end, and the transfer between
  stages is this model's :class:`~schedsearch.plan.pipeline.P2P` time of
  the bytes the stage's last layer sends;
* :func:`adapipe`: an AdaPipe-style DP (Sun et al., ASPLOS 2024) written
  from the paper's description: the split into ``p`` stages of a 1F1B
  pipeline and the recomputation of each stage chosen together, minimising
  the step time ``sum_s (t_s + 2 c_s) + (m - 1) max_s t_s`` (``t_s`` the
  stage's forward + backward with its recomputed forwards, ``c_s`` its
  transfer to the next stage) under the memory budget (stage ``s`` holds
  its parameters and ``min(p - s, m)`` micro-batches of activations). A
  stage's recomputation is chosen among: none, every ``q``-th of its
  blocks, all of its blocks (the granularity a layer description gives;
  the paper chooses per operator).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs

from schedsearch.deadline import checkpoint
from schedsearch.errors import InvalidPipelineError, NoFittingPlanError
from schedsearch.plan.layers import Configuration, LayerModel, Recomputation

__all__ = [
    "TORCHTITAN_SCHEDULES",
    "AUTO_PARTITION_SCHEDULES",
    "torchtitan_default",
    "auto_partition",
    "adapipe",
    "min_max_split",
    "simulate_schedule",
    "SimulatedStep",
]

#: torchtitan's schedule names: one stage per rank, loop multi-stage, V multi-stage.
TORCHTITAN_SCHEDULES = {"1F1B": "single", "GPipe": "single", "Interleaved1F1B": "loop", "LoopedBFS": "loop",
                        "InterleavedZeroBubble": "loop", "ZBVZeroBubble": "v", "DualPipeV": "v"}
#: The schedule types torch's ``auto_partition`` takes.
AUTO_PARTITION_SCHEDULES = ("1f1b", "interleaved_1f1b", "interleaved_zero_bubble")


def _microbatching(model: LayerModel, microbatch_size: int | None, who: str) -> tuple[int, int]:
    size = min(model.sizes()) if microbatch_size is None else microbatch_size
    if size not in model.sizes():
        raise InvalidPipelineError(
            f"{who}: 'microbatch_size' must divide the global batch {model.global_batch} and lie within every "
            f"layer's measured range (sizes {list(model.sizes())}), got {size!r}")
    return size, model.global_batch // size


def _degree(model: LayerModel, num_ranks: Any, who: str) -> int:
    if isinstance(num_ranks, bool) or not isinstance(num_ranks, int) or not 1 <= num_ranks <= model.num_layers:
        raise InvalidPipelineError(
            f"{who}: 'num_ranks' must be an integer from 1 to the number of layers ({model.num_layers}), "
            f"got {num_ranks!r}")
    return num_ranks


# ------------------------------------------------------------------ torchtitan's default
def torchtitan_default(model: LayerModel, *, num_ranks: int, schedule: str = "1F1B",
                       layers_per_stage: int | None = None, first_stage_less_layers: int = 1,
                       last_stage_less_layers: int = 1, microbatch_size: int = 1,
                       recomputation: Recomputation | str = "full") -> Configuration:
    """torchtitan 0.3.0's split of ``model`` for ``schedule`` (its ``pipeline_parallel_schedule`` name).

    Without ``layers_per_stage`` a one-stage schedule (``1F1B``, ``GPipe``)
    gets one stage per rank and any other two; with it, the stage count is
    ``ceil((blocks + first_stage_less_layers + last_stage_less_layers) /
    layers_per_stage)``, a multiple of ``num_ranks`` (one per rank for a
    one-stage schedule, two or more otherwise). The blocks plus the two
    weights are spread evenly over the stages, the first stages taking one
    more where they do not divide; the first stage holds the embedding in
    place of ``first_stage_less_layers`` blocks, the last the head in place of
    ``last_stage_less_layers``. torchtitan's refusals are refused here, with
    its reason. The micro-batch size is torchtitan's
    ``pipeline_parallel_microbatch_size`` (default 1).

    Examples
    --------
    >>> from schedsearch.plan.layers import LayerModel
    >>> from schedsearch.plan.peers import torchtitan_default
    >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    >>> model = LayerModel(global_batch=8, num_ranks=4, layers=[
    ...     {"name": "embed", "kind": "embedding", "measured": at1}, {"name": "block", "repeat": 6, "measured": at1},
    ...     {"name": "head", "kind": "head", "measured": at1}])
    >>> torchtitan_default(model, num_ranks=4).module_names(model)[0]
    ('tok_embeddings', 'layers.0')
    >>> [len(g) for g in torchtitan_default(model, num_ranks=2, schedule="Interleaved1F1B").split]
    [2, 2, 2, 2]
    """
    from schedsearch.plan.torchtitan import _rule_counts  # torchtitan's even-split rule has its home there

    who = f"torchtitan default ({schedule})"
    p = _degree(model, num_ranks, who)
    if schedule not in TORCHTITAN_SCHEDULES:
        raise InvalidPipelineError(f"{who}: 'schedule' must be one of {list(TORCHTITAN_SCHEDULES)}, got {schedule!r}")
    kinds = model.kinds()
    if kinds[0] != "embedding" or kinds[-1] != "head":
        raise InvalidPipelineError(f"{who}: torchtitan's split places an embedding first and a head last; the model "
                                   f"starts with a {kinds[0]!r} and ends with a {kinds[-1]!r}")
    blocks = kinds.count("layer")
    style = TORCHTITAN_SCHEDULES[schedule]
    less_first, less_last = first_stage_less_layers, last_stage_less_layers
    if layers_per_stage is not None:
        if isinstance(layers_per_stage, bool) or not isinstance(layers_per_stage, int) or layers_per_stage < 1:
            raise InvalidPipelineError(f"{who}: 'layers_per_stage' must be an integer >= 1, got {layers_per_stage!r}")
        num_stages = math.ceil((blocks + less_first + less_last) / layers_per_stage)
        if num_stages % p:
            raise InvalidPipelineError(f"{who}: {num_stages} stages are not divisible by the {p} ranks")
        per_rank = num_stages // p
        if (style == "single") != (per_rank == 1) or per_rank < 1:
            raise InvalidPipelineError(f"{who}: {'one' if style == 'single' else 'two or more'} stages per rank "
                                       f"needed, layers_per_stage={layers_per_stage} gives {per_rank}")
    else:
        num_stages = p * (1 if style == "single" else 2)
    counts = _rule_counts(num_stages, blocks, less_first, less_last)
    if num_stages > 1 and counts is None:
        raise InvalidPipelineError(
            f"{who}: torchtitan refuses {num_stages} stages of {blocks} blocks with first_stage_less_layers="
            f"{less_first}, last_stage_less_layers={less_last} (empty stages, or a weight above the layers per stage)")
    counts = [blocks] if num_stages == 1 else counts
    sizes = list(counts)
    sizes[0] += 1  # the embedding
    sizes[-1] += 1  # the head
    if style == "v" and num_stages != 2 * p:
        raise InvalidPipelineError(f"{who}: a V schedule places two stages per rank, got {num_stages // p}")
    size, count = _microbatching(model, microbatch_size, who)
    return Configuration.from_boundaries(sizes, num_ranks=p, layout="v" if style == "v" else "loop",
                                         microbatch_size=size, num_microbatches=count, recomputation=recomputation)


# ------------------------------------------------------------------ the simulation auto_partition scores with
@attrs.frozen(kw_only=True)
class SimulatedStep:
    """A schedule type's step, simulated action by action: its time and the stage with the most critical time."""

    time_ms: float
    critical_stage: int


def min_max_split(loads: Sequence[float], num_stages: int, start: int = 0) -> list[list[int]]:
    """Contiguous split of ``loads[start:]`` into ``num_stages`` non-empty stages with the least largest stage sum.

    Among equal optima, each stage (from the last) starts as early as
    possible, as torch's ``auto_partition`` breaks ties. Indices are those of ``loads``.

    Examples
    --------
    >>> from schedsearch.plan.peers import min_max_split
    >>> min_max_split([1.0, 1.0, 2.0, 4.0], 2)
    [[0, 1, 2], [3]]
    """
    n = len(loads) - start
    if not 1 <= num_stages <= n:
        raise InvalidPipelineError(f"auto_partition: cannot split {n} layers into {num_stages} non-empty stages")
    prefix = [0.0]
    for x in loads[start:]:
        prefix.append(prefix[-1] + x)
    best = [[math.inf] * (num_stages + 1) for _ in range(n + 1)]
    cut = [[-1] * (num_stages + 1) for _ in range(n + 1)]
    best[0][0] = 0.0
    for end in range(1, n + 1):
        checkpoint(end * min(end, num_stages))  # a call's hard stop ends the DP here: a unit per split tried
        for parts in range(1, min(end, num_stages) + 1):
            for first in range(parts - 1, end):
                value = max(best[first][parts - 1], prefix[end] - prefix[first])
                if value < best[end][parts]:
                    best[end][parts], cut[end][parts] = value, first
    out, end = [], n
    for parts in range(num_stages, 0, -1):
        first = cut[end][parts]
        out.append(list(range(start + first, start + end)))
        end = first
    return out[::-1]


def _orders(schedule_type: str, p: int, v: int, m: int) -> list[list[tuple[str, int, int]]]:
    """Each rank's actions (kind, stage, micro-batch) in torch's order for the schedule type."""
    if schedule_type == "1f1b":
        out = []
        for r in range(p):
            warm = min(p - 1 - r, m)
            acts = [("F", r, i) for i in range(warm)]
            for i in range(m - warm):
                acts += [("F", r, warm + i), ("B", r, i)]
            out.append(acts + [("B", r, i) for i in range(m - warm, m)])
        return out
    rounds = max(1, m // p)
    if m % rounds:
        raise InvalidPipelineError(
            f"auto_partition: torch's interleaved schedules need the micro-batches ({m}) divisible by their "
            f"rounds ({rounds})")
    per_round = m // rounds
    zero_bubble = schedule_type == "interleaved_zero_bubble"
    out = []
    for r in range(p):
        warmup = min((v - 1) * per_round + (1 if zero_bubble else 2) * (p - 1 - r), m * v)
        steady = m * v - warmup
        done = {"F": [0] * (p * v), "B": [0] * (p * v), "W": [0] * (p * v)}

        def act(kind: str, stage: int) -> tuple[str, int, int]:
            slot = "W" if kind == "W" else ("F" if kind == "F" else "B")
            done[slot][stage] += 1
            return kind, stage, done[slot][stage] - 1

        forward = lambda op: ((op // per_round) % v) * p + r  # noqa: E731
        backward = lambda op: (v - 1 - ((op - warmup) // per_round) % v) * p + r  # noqa: E731
        acts: list[tuple[str, int, int]] = []
        backwards: list[int] = []
        weights = 0
        for op in range(warmup + steady + warmup):
            if op < warmup + steady:
                acts.append(act("F", forward(op)))
            if op >= warmup:
                acts.append(act("I" if zero_bubble else "B", backward(op)))
                backwards.append(op)
                if zero_bubble and op - warmup >= r:
                    acts.append(act("W", backward(backwards[weights])))
                    weights += 1
        while zero_bubble and weights < len(backwards):
            acts.append(act("W", backward(backwards[weights])))
            weights += 1
        out.append(acts)
    return out


def simulate_schedule(schedule_type: str, forward_ms: Sequence[float], backward_ms: Sequence[float],
                      input_grad_ms: Sequence[float], weight_grad_ms: Sequence[float], transfer_ms: Sequence[float],
                      *, num_ranks: int, num_microbatches: int) -> SimulatedStep:
    """Simulate a schedule type on stages of the given times: each rank runs its actions in torch's order,
    each as soon as the rank is free and its inputs have arrived (a forward after the previous stage's forward
    and transfer, a backward after its forward and the next stage's backward and transfer, a weight gradient
    after its input gradient; stages on one rank pass without a transfer). ``transfer_ms[k]`` is the time from
    stage ``k`` to ``k + 1`` (and back).

    Examples
    --------
    >>> from schedsearch.plan.peers import simulate_schedule
    >>> simulate_schedule("1f1b", [1.0] * 4, [2.0] * 4, [1.0] * 4, [1.0] * 4, [0.0] * 3,
    ...                   num_ranks=4, num_microbatches=8).time_ms  # (m + p - 1)(F + B)
    33.0
    """
    S, p, m = len(forward_ms), num_ranks, num_microbatches
    if schedule_type not in AUTO_PARTITION_SCHEDULES:
        raise InvalidPipelineError(
            f"auto_partition: 'schedule_type' must be one of {list(AUTO_PARTITION_SCHEDULES)}, got {schedule_type!r}")
    orders = _orders(schedule_type, p, S // p, m)
    duration = {"F": forward_ms, "B": backward_ms, "I": input_grad_ms, "W": weight_grad_ms}
    end: dict[tuple[str, int, int], float] = {}
    start: dict[tuple[str, int, int], float] = {}
    cause: dict[tuple[str, int, int], tuple[str, int, int] | None] = {}

    def ready(action: tuple[str, int, int]) -> tuple[float, tuple[str, int, int] | None] | None:
        kind, s, i = action
        needs: list[tuple[tuple[str, int, int], float]] = []
        if kind == "F" and s > 0:
            needs.append((("F", s - 1, i), transfer_ms[s - 1] if (s - 1) % p != s % p else 0.0))
        if kind in ("B", "I"):
            needs.append((("F", s, i), 0.0))
            if s < S - 1:
                later = ("I" if schedule_type == "interleaved_zero_bubble" else "B", s + 1, i)
                needs.append((later, transfer_ms[s] if (s + 1) % p != s % p else 0.0))
        if kind == "W":
            needs.append((("I", s, i), 0.0))
        if any(need not in end for need, _ in needs):
            return None
        return max(((end[need] + wait, need) for need, wait in needs), default=(0.0, None))

    position = [0] * p
    free = [0.0] * p
    last: list[tuple[str, int, int] | None] = [None] * p
    left = sum(len(o) for o in orders)
    while left:
        checkpoint(left)  # a call's hard stop ends the simulation here
        moved = False
        for r in range(p):
            while position[r] < len(orders[r]):
                action = orders[r][position[r]]
                arrival = ready(action)
                if arrival is None:
                    break
                at, need = arrival
                begin = max(at, free[r])
                start[action], end[action] = begin, begin + duration[action[0]][action[1]]
                cause[action] = need if at >= free[r] and need is not None else last[r]
                free[r], last[r] = end[action], action
                position[r] += 1
                left -= 1
                moved = True
        if not moved:  # unreachable for torch's orders: each is a valid schedule
            raise AssertionError(f"auto_partition: the {schedule_type} order deadlocks")
    final = max(end, key=lambda a: end[a])
    path, node = [], final
    while node is not None:
        path.append(node)
        node = cause[node]
    first_backward = min(start[a] for a in start if a[0] in ("B", "I"))
    last_forward = max(end[a] for a in end if a[0] == "F")
    steady = [a for a in path if start[a] >= first_backward and end[a] <= last_forward] or path
    per_stage: dict[int, float] = {}
    for a in steady:
        per_stage[a[1]] = per_stage.get(a[1], 0.0) + end[a] - start[a]
    critical = max(sorted(per_stage), key=lambda s: per_stage[s])
    return SimulatedStep(time_ms=end[final], critical_stage=critical)


# ------------------------------------------------------------------ torch's auto_partition
def _layer_costs(model: LayerModel, size: int, recomputation: Recomputation) -> tuple[list[float], ...]:
    figures = model.at(size)
    kinds = model.kinds()
    again = [m.again_ms(recomputation.mode) if recomputation.every_block and kinds[i] == "layer" else 0.0
             for i, m in enumerate(figures)]
    fwd = [m.forward_ms for m in figures]
    bwd = [m.backward_ms + a for m, a in zip(figures, again)]
    inp = [(m.input_grad_ms if m.has_split else m.backward_ms / 2) + a for m, a in zip(figures, again)]
    wgt = [m.weight_grad_ms if m.has_split else m.backward_ms / 2 for m in figures]
    sends = [float(model.p2p.transfer_ms(m.p2p_bytes)) for m in figures]
    return fwd, bwd, inp, wgt, sends


def auto_partition(model: LayerModel, *, num_ranks: int, schedule_type: str = "1f1b",
                   microbatch_size: int | None = None, virtual_stages_per_rank: int | None = None,
                   recomputation: Recomputation | str = "none") -> Configuration:
    """torch's ``auto_partition`` on ``model`` (see the module docstring): its split, as a configuration.

    ``virtual_stages_per_rank``: 1 for ``1f1b``; for the interleaved types 2
    by default (1 when the model has fewer than ``2 * num_ranks`` layers), as
    its code chooses. The layer costs are the model's at ``microbatch_size``
    (default the smallest with a cost), with the recomputed forward added to
    the backward under ``recomputation="full"`` (``"none"`` and ``"full"``
    only: its costs are per layer, fixed before the split). A layer
    without a split backward counts half its backward as input gradient and
    half as weight gradient, as its code does.

    Examples
    --------
    >>> from schedsearch.plan.layers import LayerModel
    >>> from schedsearch.plan.peers import auto_partition
    >>> def layer(name, f, kind="layer"):
    ...     return {"name": name, "kind": kind, "measured": [{"microbatch_size": 1, "forward_ms": f,
    ...                                                        "backward_ms": 2 * f}]}
    >>> model = LayerModel(global_batch=8, num_ranks=2, layers=[layer("embed", 3.0, "embedding"),
    ...     layer("a", 1.0), layer("b", 1.0), layer("c", 1.0), layer("head", 2.0, "head")])
    >>> auto_partition(model, num_ranks=2).split
    ((0, 1), (2, 3, 4))
    """
    who = f"auto_partition ({schedule_type})"
    p = _degree(model, num_ranks, who)
    if schedule_type not in AUTO_PARTITION_SCHEDULES:
        raise InvalidPipelineError(
            f"{who}: 'schedule_type' must be one of {list(AUTO_PARTITION_SCHEDULES)}, got {schedule_type!r}")
    recomputation = recomputation if isinstance(recomputation, Recomputation) else Recomputation(mode=recomputation)
    if recomputation.mode not in ("none", "full", "op"):
        raise InvalidPipelineError(
            f"{who}: 'recomputation' must be 'none', 'full' or 'op', got {recomputation.mode!r}")
    if recomputation.mode == "op" and not model.runs_op():
        raise InvalidPipelineError(f"{who}: recomputation 'op' needs 'selective_bytes' and "
                                   f"'selective_recompute_ms' of every transformer block")
    n = model.num_layers
    if virtual_stages_per_rank is None:
        v = 1 if schedule_type == "1f1b" or n < 2 * p else 2
    else:
        v = virtual_stages_per_rank
    if isinstance(v, bool) or not isinstance(v, int) or v < 1 or (schedule_type == "1f1b" and v != 1) or p * v > n:
        raise InvalidPipelineError(f"{who}: 'virtual_stages_per_rank' must be 1 for 1f1b and at most "
                                   f"{n // p} here (a layer per stage), got {v!r}")
    size, m = _microbatching(model, microbatch_size, who)
    fwd, bwd, inp, wgt, sends = _layer_costs(model, size, recomputation)
    loads = [f + b for f, b in zip(fwd, bwd)]

    def score(split: list[list[int]]) -> SimulatedStep:
        stage = lambda costs: [math.fsum(costs[i] for i in g) for g in split]  # noqa: E731
        return simulate_schedule(schedule_type, stage(fwd), stage(bwd), stage(inp), stage(wgt),
                                 [sends[g[-1]] for g in split[:-1]], num_ranks=p, num_microbatches=m)

    def neighbours(split: list[list[int]], c: int) -> list[list[list[int]]]:
        out = []
        if 0 < c and len(split[c]) > 1:  # its first layer to the stage before; the prefix re-balanced
            moved = split[c][0]
            out.append(min_max_split(loads[:moved + 1], c) + [split[c][1:]] + split[c + 1:])
        if c < len(split) - 1 and len(split[c]) > 1:  # its last layer to the stage after
            moved = split[c][-1]
            out.append(min_max_split(loads[:moved], c + 1) + [[moved] + split[c + 1]] + split[c + 2:])
        return out

    base = min_max_split(loads, p * v)
    best, best_step = base, score(base)
    queue = [(base, best_step)]
    seen = {tuple(map(tuple, base))}
    while queue:
        split, step = queue.pop(0)
        if step.critical_stage == 0:
            continue
        for other in neighbours(split, step.critical_stage):
            key = tuple(map(tuple, other))
            if key in seen:
                continue
            seen.add(key)
            other_step = score(other)
            if other_step.time_ms < best_step.time_ms:
                best, best_step = other, other_step
            if other_step.critical_stage <= step.critical_stage:
                queue.append((other, other_step))
    return Configuration(split=best, num_ranks=p, layout="loop", microbatch_size=size, num_microbatches=m,
                         recomputation=recomputation)


# ------------------------------------------------------------------ AdaPipe
def _stage_options(blocks: Sequence[int]) -> list[frozenset[int]]:
    """The recomputation choices of a stage with these blocks: none, every q-th (q >= 2), all."""
    options = {frozenset(), frozenset(blocks)}
    for q in range(2, len(blocks) + 1):
        options.add(frozenset(blocks[q - 1::q]))
    return sorted(options, key=lambda o: (len(o), sorted(o)))


def adapipe(model: LayerModel, *, num_ranks: int, microbatch_size: int | None = None) -> Configuration:
    """An AdaPipe-style split and per-stage recomputation of ``model`` for 1F1B (see the module docstring).

    ``microbatch_size`` None tries every size with a cost and keeps the
    least step time. The DP is exact over its space (every contiguous split
    into ``num_ranks`` stages, every stage's recomputation choice): for each
    stage the fastest choice that fits the budget is the best one (it
    lowers both terms of the step time), and the step time's largest-stage
    term is handled by trying each candidate bound ``tau`` on the stage
    times, least sum under it by DP, in increasing order until
    ``(m - 1) * tau`` alone exceeds the best step found. The recomputation
    comes back as mode ``"none"``, ``"full"`` or ``"layers"`` (the set).
    Raises :class:`~schedsearch.errors.NoFittingPlanError` when no split fits.

    Examples
    --------
    >>> from schedsearch.plan.layers import LayerModel
    >>> from schedsearch.plan.peers import adapipe
    >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "4 GiB",
    ...         "checkpoint_bytes": "1 GiB"}]
    >>> model = LayerModel(global_batch=4, num_ranks=2, memory_budget_bytes="14 GiB",
    ...                    layers=[{"name": "block", "repeat": 4, "measured": at1}])
    >>> config = adapipe(model, num_ranks=2)
    >>> config.split, sorted(config.recomputation.layers)
    (((0, 1), (2, 3)), [1])
    """
    p = _degree(model, num_ranks, "adapipe")
    sizes = model.sizes() if microbatch_size is None else (_microbatching(model, microbatch_size, "adapipe")[0],)
    best: tuple[float, Configuration] | None = None
    for size in sizes:
        found = _adapipe_at(model, p, size)
        if found is not None and (best is None or found[0] < best[0]):
            best = found
    if best is None:
        raise NoFittingPlanError(
            f"adapipe: no split of {model} into {p} stages fits the memory budget per rank with any recomputation "
            f"of its blocks, at micro-batch sizes {list(sizes)}")
    return best[1]


def _adapipe_at(model: LayerModel, p: int, size: int) -> tuple[float, Configuration] | None:
    m = model.global_batch // size
    figures = model.at(size)
    kinds = model.kinds()
    params = [layer.parameter_bytes for layer in model.expanded]
    n = len(figures)
    budget = model.memory_budget_bytes
    # cost[s][i][j]: the least time of layers i..j-1 as stage s with a recomputation that fits (inf: none fits)
    cost = [[[math.inf] * (n + 1) for _ in range(n + 1)] for _ in range(p)]
    choice: dict[tuple[int, int, int], frozenset[int]] = {}
    for i in range(n):
        checkpoint((n - i) * (n - i))  # a call's hard stop ends the DP here (a unit per layer summed)
        for j in range(i + 1, n + 1):
            group = range(i, j)
            blocks = [k for k in group if kinds[k] == "layer"]
            base = math.fsum(figures[k].forward_ms + figures[k].backward_ms for k in group)
            held = sum(figures[k].activation_bytes for k in group)
            weights = sum(params[k] for k in group)
            options = sorted(
                ((base + math.fsum(figures[k].forward_ms for k in option),
                  held - sum(figures[k].activation_bytes - figures[k].held_when_recomputed for k in option), option)
                 for option in _stage_options(blocks)), key=lambda o: (o[0], len(o[2]), sorted(o[2])))
            for s in range(p):
                in_flight = min(p - s, m)
                for t, kept, option in options:  # the fastest choice that fits
                    if budget is None or weights + in_flight * kept <= budget:
                        cost[s][i][j], choice[s, i, j] = t, option
                        break
    sends = [model.p2p.transfer_ms(f.p2p_bytes) for f in figures]

    def least_sum(tau: float) -> tuple[float, list[int]] | None:
        # best[s][j]: least sum over stages 0..s-1 covering layers 0..j-1, every stage time <= tau
        best = [[math.inf] * (n + 1) for _ in range(p + 1)]
        back = [[-1] * (n + 1) for _ in range(p + 1)]
        best[0][0] = 0.0
        for s in range(p):
            for i in range(n):
                if best[s][i] == math.inf:
                    continue
                checkpoint(n - i)
                for j in range(i + 1, n + 1):
                    t = cost[s][i][j]
                    if t > tau:
                        continue
                    value = best[s][i] + t + (2 * sends[j - 1] if s < p - 1 else 0.0)
                    if value < best[s + 1][j]:
                        best[s + 1][j], back[s + 1][j] = value, i
        if best[p][n] == math.inf:
            return None
        cuts, j = [n], n
        for s in range(p, 0, -1):
            j = back[s][j]
            cuts.append(j)
        return best[p][n], cuts[::-1]

    taus = sorted({cost[s][i][j] for s in range(p) for i in range(n) for j in range(i + 1, n + 1)
                   if cost[s][i][j] < math.inf})
    found: tuple[float, list[int]] | None = None
    for tau in taus:
        if found is not None and (m - 1) * tau >= found[0]:
            break
        result = least_sum(tau)
        if result is None:
            continue
        cuts = result[1]
        largest = max(cost[s][cuts[s]][cuts[s + 1]] for s in range(p))
        value = result[0] + (m - 1) * largest
        if found is None or value < found[0]:
            found = (value, cuts)
    if found is None:
        return None
    cuts = found[1]
    split = [list(range(cuts[s], cuts[s + 1])) for s in range(p)]
    recomputed = frozenset().union(*(choice[s, cuts[s], cuts[s + 1]] for s in range(p)))
    all_blocks = frozenset(k for k in range(n) if kinds[k] == "layer")
    rec = (Recomputation(mode="none") if not recomputed else Recomputation(mode="full") if recomputed == all_blocks
           else Recomputation(mode="layers", layers=recomputed))
    return found[0], Configuration(split=split, num_ranks=p, layout="loop", microbatch_size=size,
                                   num_microbatches=m, recomputation=rec)
