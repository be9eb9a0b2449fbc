"""A :class:`~schedsearch.plan.pipeline.Pipeline` from the torch profiler traces of a pipelined run.

``torch.profiler`` writes one Chrome trace (JSON) per rank, as a torchtitan
profiling run leaves them (``rank0_trace.json``, ``rank1_trace.json``, ...).
torch's pipeline runtime (``_PipelineScheduleRuntime``, which torchtitan's
CSV and its built-in schedules run on) wraps every action it runs in a
``record_function`` labelled ``PP:`` and the action as torch prints it:
``PP:1F3`` (stage 1's forward of micro-batch 3), ``PP:0B2``, ``PP:2I0``,
``PP:2W0``, ``PP:(0F2;1B1)OVERLAP_F_B`` (an overlapped pair), ``PP:0SEND_F3``,
``PP:1RECV_F3``, ``PP:1SEND_B0``, ``PP:0RECV_B0``, and the bookkeeping
actions (``UNSHARD``, ``RESHARD``, ``REDUCE_GRAD``). They are complete
events (``"ph": "X"``) with a start ``ts`` and a duration ``dur`` in
microseconds.

:func:`read_traces` reads them and :func:`pipeline_from_traces` builds a
pipeline:

* each stage's forward, backward, input- and weight-gradient time is the
  median duration of its actions of that kind (over every micro-batch and
  every step the traces hold); a stage without full backwards (a
  zero-bubble run) gets its backward as its I plus its W; one without
  I/W actions gets no split times. torch's runtime waits for a received
  activation inside the forward that uses it (a received gradient inside
  the backward or input gradient): when the trace holds the backend's
  asynchronous receives (``gloo:recv``, ``nccl:recv``, from posted to
  completed), such an action counts from its data's arrival, the
  completion of the receive posted during its receive action;
* an overlapped pair's median duration becomes ``fb_overlap_ms``;
* a transfer is a send matched with its receive (the ``k``-th ``SEND_F`` of
  stage ``s``, micro-batch ``m`` with the ``k``-th ``RECV_F`` of stage
  ``s + 1``, micro-batch ``m``; gradients alike): it lasts from the send's
  start to the data's arrival (without the backend's receives in the trace:
  from the later of the two actions' starts to the receive action's end);
  ``p2p.time_ms`` is the median. The traces' timestamps are put on one clock as written:
  torch's profiler writes them on the host's clock, so traces of one host
  agree, and traces of several hosts as well as their clocks do.
* the ranks and the stage each holds, and the micro-batch count, come from
  the actions; a trace's rank is its ``distributedInfo.rank`` (torch writes
  it for a distributed run), else its position in the list given.

On a GPU the action spans time the CPU side of the actions (launching
kernels, waiting); the kernels' own times are not read from the trace.
The traces hold no memory figures: stages get ``activation_bytes`` and
``parameter_bytes`` 0 unless given (``stage_fields``), and no memory
budget unless given.

:func:`record_traces` records such traces with the library's own runtime
set-up (gloo on loopback, one process per rank): a plan run for a few
steps under ``torch.profiler``.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from schedsearch._io import read_text
from schedsearch._json import listed, missing_numbers, short_repr
from schedsearch.actions import COMPUTE_KINDS, Action, Kind, OnAction
from schedsearch.errors import FormatError, InvalidPipelineError
from schedsearch.plan.pipeline import Pipeline, Stage
from schedsearch.units import MAX_MS

__all__ = ["ActionSpan", "RankTrace", "read_trace", "read_traces", "pipeline_from_traces", "record_traces",
           "LABEL_PREFIX", "parse_label"]

#: The prefix of torch's pipeline runtime's ``record_function`` labels.
LABEL_PREFIX = "PP:"
#: The backends' asynchronous receive operations in a trace (gloo on CPU; NCCL).
_RECEIVE = re.compile(r"^(gloo|nccl):recv$")
#: Largest duration (us) a trace's event may give: a pipeline's longest time (:data:`~schedsearch.units.MAX_MS`).
_MAX_US = 1e3 * MAX_MS
#: Largest timestamp (us, either sign) a trace's event may give; torch's profiler writes microseconds since
#: the epoch (about 1.8e15 now) or since the profile's start.
_MAX_TS_US = 1e18


@attrs.frozen(kw_only=True)
class ActionSpan(OnAction):
    """One action of torch's pipeline runtime in a trace, with its start and duration (us).

    ``action`` is any of torch's kinds (compute, send, receive, sharding,
    gradient reduction) or an overlapped pair (its members in
    ``action.sub_actions``).
    """

    action: Action
    start_us: float
    duration_us: float

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


@attrs.frozen(kw_only=True)
class RankTrace:
    """The pipeline actions of one rank's trace, in start order, and the receives' lifetimes.

    ``receives`` are the backend's asynchronous receive operations
    (``gloo:recv``, ``nccl:recv``: from posted to completed, in us), in
    start order.
    """

    path: str
    rank: int | None
    host: str | None
    spans: tuple[ActionSpan, ...]
    receives: tuple[tuple[float, float], ...] = ()

    def arrivals(self) -> dict[tuple[str, int, int | None, int], float]:
        """When each receive action's data arrived: ``(F or B, stage, micro-batch, occurrence) -> us``.

        A receive action's data arrived when the last backend receive posted
        during the action completed; actions without one are left out.
        """
        out: dict[tuple[str, int, int | None, int], float] = {}
        seen: dict[tuple[str, int, int | None], int] = {}
        used = 0
        for s in self.spans:
            if s.kind not in (Kind.RECV_F, Kind.RECV_B):
                continue
            key = (s.kind[-1], s.stage, s.microbatch)
            k = seen[key] = seen.get(key, -1) + 1
            while used < len(self.receives) and self.receives[used][0] < s.start_us:
                used += 1
            ends = []
            while used < len(self.receives) and self.receives[used][0] <= s.end_us:
                ends.append(self.receives[used][1])
                used += 1
            if ends:
                out[(*key, k)] = max(ends)
        return out


def parse_label(name: str) -> Action | None:
    """The action of a ``PP:`` label, or None when it is not an action's.

    Examples
    --------
    >>> from schedsearch.runtime.profiler_traces import parse_label
    >>> parse_label("PP:1F3"), parse_label("PP:0SEND_B12"), parse_label("PP:2REDUCE_GRAD")
    (Action.parse('1F3'), Action.parse('0SEND_B12'), Action.parse('2REDUCE_GRAD'))
    >>> parse_label("PP:(0F2;1B1)OVERLAP_F_B").sub_actions
    (Action.parse('0F2'), Action.parse('1B1'))
    >>> parse_label("aten::mm") is None, parse_label("PP:unknown") is None
    (True, True)
    """
    if not isinstance(name, str) or not name.startswith(LABEL_PREFIX):
        return None
    try:
        return Action.parse(name[len(LABEL_PREFIX):])
    except FormatError:
        return None


def _time(value: Any) -> bool:
    """True when ``value`` is a finite number (a time in a trace)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def read_trace(path: str | os.PathLike) -> RankTrace:
    """The pipeline actions of one torch profiler Chrome trace (a JSON object with ``traceEvents``, or a list).

    Raises :class:`~schedsearch.errors.InvalidPipelineError` naming the file
    when it cannot be read, is not a Chrome trace, or holds no action of
    torch's pipeline runtime.
    """
    path = Path(path)
    where = f"trace {str(path)!r}"
    text = read_text(path, where, InvalidPipelineError)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidPipelineError(
            f"{where}: not JSON: {exc.msg.lower()} at line {exc.lineno}, column {exc.colno}") from None
    except ValueError:  # the one other failure of json.loads on text: an integer past Python's digit limit
        raise InvalidPipelineError(f"{where}: holds an integer too long to read "
                                   f"(more than {sys.get_int_max_str_digits()} digits)") from None
    except RecursionError:
        raise InvalidPipelineError(f"{where}: nested too deeply to read") from None
    if isinstance(document, list):
        events, info, host = document, {}, None
    elif isinstance(document, dict) and isinstance(document.get("traceEvents"), list):
        events = document["traceEvents"]
        info = document.get("distributedInfo") if isinstance(document.get("distributedInfo"), dict) else {}
        host = document.get("host_name") if isinstance(document.get("host_name"), str) else None
    else:
        raise InvalidPipelineError(
            f"{where}: not a Chrome trace: expected a JSON object with a 'traceEvents' list (what torch.profiler's "
            f"export_chrome_trace writes) or a list of events")
    spans = []
    receives = []
    labelled = 0
    for i, event in enumerate(events):
        if isinstance(event, dict) and event.get("ph") == "X" and _RECEIVE.match(str(event.get("name", ""))):
            ts, dur = event.get("ts"), event.get("dur")
            if _time(ts) and _time(dur) and 0 <= dur <= _MAX_US and abs(ts) <= _MAX_TS_US:
                receives.append((float(ts), float(ts) + float(dur)))
            continue
        if not isinstance(event, dict) or not str(event.get("name", "")).startswith(LABEL_PREFIX):
            continue
        labelled += 1
        action = parse_label(event["name"])
        if action is None or event.get("ph") != "X":
            continue
        ts, dur = event.get("ts"), event.get("dur")
        if not (_time(ts) and _time(dur) and 0 <= dur <= _MAX_US and abs(ts) <= _MAX_TS_US):
            raise InvalidPipelineError(f"{where}: event {i} ({short_repr(event['name'])}) needs a number 'ts' and "
                                       f"a 'dur' >= 0 (finite microseconds, 'ts' at most {_MAX_TS_US:.0e} in size, "
                                       f"'dur' at most {_MAX_US:.0e}), got ts={short_repr(ts)}, dur={short_repr(dur)}")
        spans.append(ActionSpan(action=action, start_us=float(ts), duration_us=float(dur)))
    if not any(s.action.is_compute for s in spans):
        seen = f"{labelled} '{LABEL_PREFIX}' events, none a compute action" if labelled else \
            f"no event named '{LABEL_PREFIX}...'"
        raise InvalidPipelineError(
            f"{where}: no action of torch's pipeline runtime ({seen} among {len(events)} events): the runtime labels "
            f"each action it runs 'PP:<stage><kind><micro-batch>' (e.g. 'PP:0F3') with record_function; record the "
            f"trace with torch.profiler around a pipelined step")
    rank = info.get("rank") if isinstance(info, dict) else None
    rank = rank if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0 else None
    return RankTrace(path=str(path), rank=rank, host=host, spans=tuple(sorted(spans, key=lambda s: s.start_us)),
                     receives=tuple(sorted(receives)))


def read_traces(paths: Sequence[str | os.PathLike] | str | os.PathLike) -> tuple[RankTrace, ...]:
    """Read one trace per rank (a list of files, or a folder: its ``*.json`` files in name order), by rank.

    A trace's rank is its ``distributedInfo.rank``, else its position;
    two traces of one rank, or ranks that are not ``0..n-1``, are refused.
    """
    if isinstance(paths, (str, os.PathLike)):
        folder = Path(paths)
        if not folder.is_dir():
            raise InvalidPipelineError(f"traces: {str(folder)!r} is not a folder (give the folder of the per-rank "
                                       f"traces or the list of files)")
        files = sorted(folder.glob("*.json"))
        if not files:
            raise InvalidPipelineError(f"traces: the folder {str(folder)!r} holds no *.json trace")
        paths = files
    traces = [read_trace(p) for p in paths]
    if not traces:
        raise InvalidPipelineError("traces: give one trace per rank, got none")
    ranks = [t.rank if t.rank is not None else i for i, t in enumerate(traces)]
    if sorted(ranks) != list(range(len(traces))):
        raise InvalidPipelineError(
            f"traces: the ranks of the traces must be 0..{len(traces) - 1}, one each, got "
            + listed([f"{t.path!r}: rank {r}" for t, r in zip(traces, ranks)], shown=3))
    return tuple(attrs.evolve(t, rank=r) for r, t in sorted(zip(ranks, traces), key=lambda x: x[0]))


def _ms(values: Sequence[float]) -> float:
    return statistics.median(values) / 1e3


def _transfers(traces: Sequence[RankTrace]) -> list[float]:
    """Every matched send/receive's time (us): from the send's start to the data's arrival, or, without the
    backend's receive in the trace, from the later start to the receive action's end."""
    sends: dict[tuple[str, int, int | None], list[ActionSpan]] = {}
    recvs: dict[tuple[str, int, int | None], list[tuple[ActionSpan, float | None]]] = {}
    for t in traces:
        arrived = t.arrivals()
        for s in t.spans:
            if s.kind in (Kind.SEND_F, Kind.SEND_B):
                sends.setdefault((s.kind[-1], s.stage, s.microbatch), []).append(s)
            elif s.kind in (Kind.RECV_F, Kind.RECV_B):
                key = (s.kind[-1], s.stage, s.microbatch)
                got = recvs.setdefault(key, [])
                got.append((s, arrived.get((*key, len(got)))))
    out = []
    for (direction, stage, mb), sent in sends.items():
        peer = stage + 1 if direction == "F" else stage - 1
        for a, (b, arrival) in zip(sent, recvs.get((direction, peer, mb), [])):
            if arrival is not None:
                out.append(max(0.0, arrival - a.start_us))
            else:
                out.append(max(0.0, b.end_us - max(a.start_us, b.start_us)))
    return out


def _compute_durations(trace: RankTrace) -> list[tuple[ActionSpan, float]]:
    """Each compute action of ``trace`` and its duration (us) after the data it waits for arrived.

    torch's runtime waits for a received activation inside the forward that
    uses it, and for a received gradient inside the backward (or input
    gradient) that uses it: such an action counts from the arrival (when
    the trace holds the backend's receive), not from its start.
    """
    arrived = trace.arrivals()
    seen: dict[tuple[str, int, int | None], int] = {}
    out = []
    for s in trace.spans:
        start = s.start_us
        needs = "F" if s.kind is Kind.FORWARD else "B" if s.kind in (Kind.FULL_BACKWARD, Kind.BACKWARD_INPUT) else None
        if needs is not None:
            key = (needs, s.stage, s.microbatch)
            k = seen[key] = seen.get(key, -1) + 1
            arrival = arrived.get((*key, k))
            if arrival is not None:
                start = min(s.end_us, max(start, arrival))
        out.append((s, s.end_us - start))
    return out


def pipeline_from_traces(
    paths: Sequence[str | os.PathLike] | str | os.PathLike,
    *,
    num_microbatches: int | None = None,
    stage_fields: Sequence[Mapping[str, Any]] | None = None,
    **fields: Any,
) -> Pipeline:
    """A pipeline (one stage per pipeline stage of the run) from the per-rank traces of a pipelined run.

    Parameters
    ----------
    paths:
        One torch profiler trace per rank, or their folder.
    num_microbatches:
        Micro-batches per step; default: the largest micro-batch index in
        the traces plus one.
    stage_fields:
        Per stage, fields the traces do not hold (``activation_bytes``,
        ``parameter_bytes``, ``send_bytes``, ``name``).
    fields:
        Further :class:`~schedsearch.plan.pipeline.Pipeline` fields
        (``memory_budget_bytes``, ``families``, ``name``, ...).

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from schedsearch.runtime.profiler_traces import pipeline_from_traces
    >>> def span(name, ts, dur): return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur}
    >>> rank0 = [span("PP:0F0", 0, 1000), span("PP:0SEND_F0", 1000, 10), span("PP:0RECV_B0", 1010, 3090),
    ...          span("PP:0B0", 4100, 2000)]
    >>> rank1 = [span("PP:1RECV_F0", 0, 1100), span("PP:1F0", 1100, 1500), span("PP:1B0", 2600, 1400),
    ...          span("PP:1SEND_B0", 4000, 10)]
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     for r, events in enumerate((rank0, rank1)):
    ...         _ = (Path(folder) / f"rank{r}_trace.json").write_text(json.dumps({"traceEvents": events}))
    ...     pipeline = pipeline_from_traces(folder)
    >>> [(s.forward_ms, s.backward_ms) for s in pipeline.stages], pipeline.p2p.time_ms, pipeline.num_microbatches
    ([(1.0, 2.0), (1.5, 1.4)], 0.1, 1)
    """
    traces = read_traces(paths)
    where = "traces " + listed([repr(t.path) for t in traces], shown=2)
    durations: dict[tuple[int, str], list[float]] = {}
    stage_rank: dict[int, int] = {}
    pairs: list[float] = []
    microbatches: set[int] = set()
    for t in traces:
        for s, duration in _compute_durations(t):
            for a in s.action.members:
                if a.kind.is_compute:
                    if stage_rank.setdefault(a.stage, t.rank) != t.rank:
                        raise InvalidPipelineError(
                            f"{where}: stage {a.stage} runs actions on rank {stage_rank[a.stage]} and on rank {t.rank}")
                if a.microbatch is not None:
                    microbatches.add(a.microbatch)
            if s.kind is Kind.OVERLAP_F_B:
                pairs.append(s.duration_us)
            elif s.kind in COMPUTE_KINDS:
                durations.setdefault((s.stage, s.kind), []).append(duration)
    num_stages = max(stage_rank) + 1
    missing, count = missing_numbers(stage_rank, num_stages)
    if count:
        raise InvalidPipelineError(f"{where}: no compute action of stage(s) [{listed(missing, count)}] (the "
                                   f"stages run are [{listed(sorted(stage_rank))}]): give the trace of every rank")
    if num_microbatches is None and microbatches:
        missing, count = missing_numbers(microbatches, max(microbatches) + 1)
        if count:
            raise InvalidPipelineError(
                f"{where}: no compute action of micro-batch(es) {listed(missing, count)}, though micro-batch "
                f"{max(microbatches)} runs: a step runs every micro-batch 0..M-1 (give 'num_microbatches' to plan "
                f"another count)")
    idle = [t.rank for t in traces if t.rank not in stage_rank.values()]
    if idle:
        raise InvalidPipelineError(f"{where}: rank(s) [{listed(idle)}] run no compute action")
    if stage_fields is not None and len(stage_fields) != num_stages:
        raise InvalidPipelineError(f"{where}: 'stage_fields' gives {len(stage_fields)} stages, the traces run "
                                   f"{num_stages}")
    stages = []
    for s in range(num_stages):
        got = {k: durations[(s, k)] for k in COMPUTE_KINDS if (s, k) in durations}
        if "F" not in got:
            raise InvalidPipelineError(f"{where}: stage {s} (rank {stage_rank[s]}) runs no forward ('PP:{s}F<mb>') "
                                       f"outside overlapped pairs: its forward time is unknown")
        split = "I" in got and "W" in got
        if "B" not in got and not split:
            raise InvalidPipelineError(
                f"{where}: stage {s} (rank {stage_rank[s]}) runs no backward ('PP:{s}B<mb>', or 'PP:{s}I<mb>' and "
                f"'PP:{s}W<mb>') outside overlapped pairs: its backward time is unknown")
        times: dict[str, float] = {"forward_ms": _ms(got["F"])}
        if split:
            times.update(input_grad_ms=_ms(got["I"]), weight_grad_ms=_ms(got["W"]))
        times["backward_ms"] = _ms(got["B"]) if "B" in got else times["input_grad_ms"] + times["weight_grad_ms"]
        extra = dict(stage_fields[s]) if stage_fields is not None else {}
        extra.setdefault("name", f"stage{s}")
        stages.append(Stage(**times, **extra))
    if not stages or len(traces) > len(stages):
        raise InvalidPipelineError(f"{where}: {len(traces)} ranks but {len(stages)} stages")
    transfers = _transfers(traces)
    if transfers and "p2p" not in fields:
        fields["p2p"] = {"time_ms": _ms(transfers)}
    if pairs and "fb_overlap_ms" not in fields:
        fields["fb_overlap_ms"] = _ms(pairs)
    if num_microbatches is None:
        num_microbatches = max(microbatches, default=-1) + 1
    fields.setdefault("name", "from torch profiler traces")
    return Pipeline(num_ranks=len(traces), num_microbatches=num_microbatches, stages=stages, **fields)


# ------------------------------------------------------------------ recording
def _record(rank: int, torch: Any, dist: Any, plan: Any, csv_path: str, stages: Sequence[Any],
            inputs: Sequence[Any], targets: Sequence[Any], loss: Any, steps: int, warmup_steps: int,
            folder: str) -> str:  # pragma: no cover - runs in a child process
    from schedsearch.runtime._torch import load_compute_csv, pipelining_internals, step_microbatches

    tp = pipelining_internals()
    mine = plan.stages_of(rank)
    built = [tp.PipelineStage(stages[s], s, plan.num_stages, torch.device("cpu")) for s in mine]
    schedule = tp.ScheduleRuntime(built, plan.num_microbatches, loss_fn=loss)
    load_compute_csv(schedule, csv_path)
    args = [(c,) for c in inputs] if 0 in mine else [()] * plan.num_microbatches
    for _ in range(warmup_steps):
        dist.barrier()
        step_microbatches(schedule, built, args, list(targets), [])
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(steps):
            dist.barrier()
            step_microbatches(schedule, built, args, list(targets), [])
    path = os.path.join(folder, f"rank{rank}_trace.json")
    prof.export_chrome_trace(path)
    return path


def record_traces(plan: Any, workload: Any, folder: str | os.PathLike, *, steps: int = 2, warmup_steps: int = 1,
                  timeout_s: float = 120.0) -> list[Path]:
    """Run ``plan`` on ``workload`` under ``torch.profiler`` and write one Chrome trace per rank into ``folder``.

    One forked process per rank (gloo on loopback, one thread each) runs
    ``warmup_steps`` untraced steps, then ``steps`` traced ones, with torch's
    ``_PipelineScheduleRuntime`` loading the plan's compute-only CSV, as
    :func:`~schedsearch.runtime.run` does (without its gradient check);
    micro-batches are an even split of the workload's batch. Returns the
    files, ``rank{r}_trace.json``.
    """
    from schedsearch.errors import PlanError
    from schedsearch.runtime._ranks import run_ranks
    from schedsearch.runtime._torch import require_torch
    from schedsearch.runtime.execute import microbatch_split
    from schedsearch.runtime.plan import CsvPlan
    from schedsearch.runtime.torch_checks import torch_check

    torch = require_torch("recording profiler traces")
    if not isinstance(plan, CsvPlan):
        raise PlanError(f"record_traces: 'plan' must be a CsvPlan, got {type(plan).__name__}")
    for name, value, low in (("steps", steps, 1), ("warmup_steps", warmup_steps, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise PlanError(f"record_traces: {name!r} must be an integer >= {low}, got {value!r}")
    if workload.num_stages != plan.num_stages:
        raise PlanError(f"record_traces: the plan has {plan.num_stages} stages, the workload {workload.num_stages}")
    if list(plan.forward_order(plan.num_stages - 1)) != list(range(plan.num_microbatches)):
        raise PlanError("record_traces: the plan's last stage must run its forwards in micro-batch order (torch's "
                        "runtime looks its losses up by index)")
    torch_check(plan)
    sizes = microbatch_split(workload.batch_size, plan.num_microbatches)
    inputs = torch.split(workload.inputs, list(sizes))
    targets = torch.split(workload.target, list(sizes))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="schedsearch-traces-") as tmp:
        csv_path = Path(tmp) / "plan.csv"
        csv_path.write_text(plan.text)
        paths = run_ranks("record_traces", _record, plan.num_ranks, timeout_s, plan, str(csv_path),
                          tuple(workload.stages), tuple(inputs), tuple(targets), workload.loss_fn, steps,
                          warmup_steps, str(folder))
    return [Path(p) for p in paths]
