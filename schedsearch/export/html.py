"""A plan report: one self-contained HTML file (inline CSS, JavaScript and SVG; no network when viewed).

The report leads with what a user reads in milliseconds and GiB, ranks named
``rank0``, ``rank1``... (a job shop's machines by their names):

* the headline: the plan's family and status (with the level left open:
  "makespan proven, peak memory not proven"), makespan, lower bound, gap
  and bubble in ms, the engine that found the plan and what proved the
  bound (from a :class:`~schedsearch.result.SearchResult`, the ``result`` of
  a plan document's metadata, or the planner's row of the written plan);
* a table per rank: peak memory and budget in GiB, busy and idle time in ms;
* the Gantt chart, one row per rank and per link, one rectangle per task on
  each of its devices (the members of an overlapped group as bands of one
  interval), coloured by micro-batch (a job shop's: by job), hatched by
  kind, with a mark per round of the palette from ``m20`` on (dots for
  ``m20``-``m39``, rings for ``m40``-``m59``...); each rectangle carries
  its micro-batch when it fits and one tooltip: rank, kind, micro-batch,
  stage, chunk, start, end and duration in ms;
* memory per rank over time with the budget as a dashed line;
* where given, the comparison table (the planner's ranked table, the
  ``table`` of a plan's metadata: ms, GiB per rank, yes/no) and the Pareto
  front as a plot;
* a details section with the solver's own units: times in time units,
  memory in memory units, the device each rank is, the unit sizes.

Without known units (a problem without ``time_unit_s``, metadata without
``units``) figures are in the problem's units and say so. Tasks are named
by the rule of :mod:`schedsearch.export.labels` (``F3·m12``: stage 3's
forward, micro-batch 12). The page checks its own drawing: once drawn, the
element ``#report-check`` carries ``data-tasks`` (the rectangles drawn),
``data-expected`` (the tasks times their devices), ``data-keys`` (distinct
tasks drawn), ``data-tips`` (rectangles with a tooltip) and ``data-errors``
(any script error).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from schedsearch._json import short_repr
from schedsearch.actions import COMPUTE_KINDS, kind_order
from schedsearch.errors import FormatError
from schedsearch.export.labels import (CYCLE_MARKS, channel_label, cycle_legend, device_labels, shade, task_style,
                                       text_colour)
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, memory_profile, metrics, peak_memory

__all__ = ["report_html", "write_report", "task_tooltip"]

_TRANSFER = "#937860"
_GIB = 2**30
_KIND_NAMES = {"F": "forward", "B": "backward", "I": "input gradient", "W": "weight gradient"}


def _figure(where: str, field: str, value: Any, positive: bool = False) -> None:
    """A figure the report writes out must be a finite number (> 0 for a unit) or absent; refused naming it."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or (positive and value <= 0):
        raise FormatError(f"{where}: {field!r} must be a {'positive ' if positive else ''}finite number or absent, "
                          f"got {short_repr(value)}")


def _table_of(where: str, value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FormatError(f"{where} must be a table of fields, got {short_repr(value)}")
    return value


def _rows_of(where: str, value: Any) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise FormatError(f"{where} must be a list of rows, got {short_repr(value)}")
    return [_table_of(f"{where}, row {i}", row) for i, row in enumerate(value)]


def _check_meta(meta: Mapping[str, Any], result: Any, table: Any) -> None:
    """The fields of a plan document's metadata the report reads, checked before it is drawn: units, the
    planner's table, a search result (see :func:`report_html`). A field of the wrong type is refused
    (:class:`~schedsearch.errors.FormatError`) naming it; fields the report does not read stay free."""
    units = _table_of("plan metadata: 'units'", meta.get("units"))
    _figure("plan metadata: 'units'", "time_unit_ms", units.get("time_unit_ms"), positive=True)
    _figure("plan metadata: 'units'", "memory_unit_bytes", units.get("memory_unit_bytes"), positive=True)
    for i, row in enumerate(_rows_of("plan metadata: 'table'", table)):
        for field in ("makespan_ms", "bound_ms", "gap", "bubble_pct", "handcrafted_ms"):
            _figure(f"plan metadata: 'table', row {i}", field, row.get(field))
        peaks = row.get("peak_gib")
        for peak in peaks if isinstance(peaks, (list, tuple)) else () if peaks is None else [peaks]:
            _figure(f"plan metadata: 'table', row {i}", "peak_gib", peak)
    if result is not None and not hasattr(result, "to_dict"):
        res = _table_of("search result", result)
        for field in ("objective", "lower_bound", "gap", "wall_time_s"):
            _figure("search result", field, res.get(field))
        for i, level in enumerate(_rows_of("search result: 'levels'", res.get("levels"))):
            for field in ("value", "bound"):
                _figure(f"search result: level {i}", field, level.get(field))


def _units(meta: Mapping[str, Any] | None, problem: Problem | None = None) -> dict[str, Any]:
    """Real units: the metadata's where it gives them, else the problem's own (``time_unit_s``, ``memory_unit_bytes``)."""
    units = dict((meta or {}).get("units") or {})
    time_ms = units.get("time_unit_ms")
    memory = units.get("memory_unit_bytes")
    if time_ms is None and problem is not None and problem.time_unit_s is not None:
        time_ms = problem.time_unit_s * 1e3
    if memory is None and problem is not None and problem.memory_unit_bytes is not None:
        memory = problem.memory_unit_bytes
    return {"time_unit_ms": time_ms, "memory_unit_bytes": memory}


def _ms_decimals(unit_ms: float) -> int:
    """Decimals that write every multiple of a time unit exactly in ms: at least 3, at most 9.

    >>> from schedsearch.export.html import _ms_decimals
    >>> _ms_decimals(0.05), _ms_decimals(0.0125), _ms_decimals(2.0)
    (3, 4, 3)
    """
    written = f"{unit_ms:.9f}".rstrip("0")
    return max(3, len(written.split(".")[1]))


def _ms(value: float | None, units: Mapping[str, Any]) -> str:
    """A time as the report leads with it: ``"12.350 ms"``, or ``"247 time units"`` without a known unit."""
    if value is None:
        return "-"
    unit = units.get("time_unit_ms")
    if not unit:
        return f"{value:g} time unit{'' if value == 1 else 's'}"
    return f"{value * unit:.{_ms_decimals(unit)}f} ms"


def _gib(value: float | None, units: Mapping[str, Any]) -> str:
    """A memory amount as the report leads with it: ``"15.62 GiB"``, or ``"4000 memory units"``."""
    if value is None:
        return "unbounded"
    unit = units.get("memory_unit_bytes")
    if not unit:
        return f"{value:g} memory unit{'' if value == 1 else 's'}"
    return f"{value * unit / _GIB:.2f} GiB"


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def task_tooltip(problem: Problem, block: str, microbatch: int, device: str, start: int, end: int,
                 units: Mapping[str, Any], *, devices: Sequence[str] = (), overlap: str | None = None) -> str:
    """The tooltip of one task rectangle: its label; rank, kind, micro-batch, stage and chunk; start, end, duration.

    Times are in ms when the unit is known (``units["time_unit_ms"]``), the
    solver's time units after them in brackets.

    Examples
    --------
    >>> from schedsearch.export.html import task_tooltip
    >>> from schedsearch.handcrafted import reproduce
    >>> problem = reproduce("zb-v", devices=2, microbatches=4).problem
    >>> print(task_tooltip(problem, "F3", 1, "d0", 7, 8, {"time_unit_ms": 0.5}))
    F3·m1
    rank0 · forward (F) · micro-batch 1 · stage 3 · chunk 1
    start 3.500 ms · end 4.000 ms · 0.500 ms
    (time units 7-8)
    """
    style = task_style(problem, block, microbatch, device)
    names = device_labels(problem, list(dict.fromkeys([device, *devices])))
    where = names[device] if len(devices) <= 1 else "on " + ", ".join(names[d] for d in devices)
    if style.by_job:
        what = f"{where} · job {style.group}"
    else:
        kind = _KIND_NAMES.get(style.kind)
        parts = [where, f"{kind} ({style.kind})" if kind else f"kind {style.kind}", f"micro-batch {microbatch}"]
        if style.stage is not None:
            parts.append(f"stage {style.stage}")
        parts.append(style.chunk_name or f"chunk {style.chunk}")
        what = " · ".join(parts)
    lines = [style.label, what]
    if units.get("time_unit_ms"):
        lines += [f"start {_ms(start, units)} · end {_ms(end, units)} · {_ms(end - start, units)}",
                  f"(time units {start}-{end})"]
    else:
        lines.append(f"start {start} · end {end} · {end - start} time units")
    if overlap:
        lines.append(f"overlapped group {overlap}")
    return "\n".join(lines)


def _data(problem: Problem, schedule: Schedule, units: Mapping[str, Any]) -> dict[str, Any]:
    devices = list(problem.cluster.device_names)
    names = device_labels(problem, devices)
    channels = sorted({tr.channel for tr in schedule.transfers if tr.end > tr.start})
    rows = devices + [f"channel {c}" for c in channels]
    shown = [names[d] for d in devices] + [channel_label(problem, c) for c in channels]
    groups: dict[tuple, list] = {}
    for t in schedule.tasks:
        if t.group_key is not None:
            groups.setdefault(t.group_key, []).append(t)
    band: dict[tuple[str, int], tuple[int, int]] = {}
    for members in groups.values():
        order = sorted(members, key=lambda m: (kind_order(problem.graph.block(m.block).kind)
                                               if m.block in problem.graph.by_name() else len(COMPUTE_KINDS) + 1,
                                               m.block, m.microbatch))
        for i, m in enumerate(order):
            band[m.key] = (i, len(order))
    tasks = []
    for t in schedule.tasks:
        block = problem.graph.by_name().get(t.block)
        i, n = band.get(t.key, (0, 1))
        for d in t.devices:
            style = task_style(problem, t.block, t.microbatch, d)
            fill = shade(style.colour, style.chunk)
            tasks.append({
                "row": rows.index(d) if d in rows else 0, "start": t.start, "end": t.end, "band": i, "bands": n,
                "fill": fill, "ink": text_colour(fill), "kind": style.kind, "hatch": style.kind_hatch,
                "mark": 0 if style.by_job else style.cycle % len(CYCLE_MARKS),
                "label": style.label, "short": style.labels[-1], "key": f"{t.block}#{t.microbatch}",
                "block": t.block, "microbatch": t.microbatch, "stage": None if block is None else block.stage,
                "group": style.group, "chunk": style.chunk_name, "cycle": style.cycle,
                "tip": task_tooltip(problem, t.block, t.microbatch, d, t.start, t.end, units, devices=t.devices,
                                    overlap=t.overlap),
            })
    transfers = []
    for tr in schedule.transfers:
        if tr.end > tr.start:
            span = (f"start {_ms(tr.start, units)} · end {_ms(tr.end, units)}" if units.get("time_unit_ms")
                    else f"start {tr.start} · end {tr.end} time units")
            row = rows.index(f"channel {tr.channel}")
            transfers.append({"row": row, "start": tr.start, "end": tr.end, "microbatch": tr.microbatch,
                              "tip": f"transfer {tr.src}->{tr.dst}·m{tr.microbatch} (block {tr.src}'s output to "
                                     f"{tr.dst}, micro-batch {tr.microbatch})\non {shown[row]}\n{span}"})
    profile = memory_profile(problem, schedule)
    peaks = peak_memory(problem, schedule)  # initial memory included, even under a free at time 0
    memory = [{"device": names[d], "steps": profile.get(d, [(0, 0)]), "peak": peaks.get(d, 0),
               "capacity": next(dev.memory for dev in problem.cluster.devices if dev.name == d),
               "title": f"{names[d]}: peak {_gib(peaks.get(d, 0), units)}"} for d in devices]
    return {"rows": shown, "num_devices": len(devices), "tasks": tasks, "transfers": transfers, "memory": memory, "makespan": schedule.makespan,
            "expected": sum(len(t.devices) for t in schedule.tasks), "num_tasks": len(schedule.tasks),
            "units": dict(units)}


def _plan_row(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The planner's row of the plan the document holds (its ``candidate``, else its ``family``), if any."""
    table = meta.get("table") or []
    rows = [r for r in table if isinstance(r, Mapping) and "family" in r]
    if meta.get("candidate") is not None:
        found = next((r for r in rows if r.get("candidate") == meta["candidate"]), None)
        if found is not None:
            return found
    if meta.get("family") is not None:
        return next((r for r in rows if r.get("family") == meta["family"]), None)
    return None


def _row_proof(row: Mapping[str, Any]) -> str:
    """What a planner's row has proven, in words: "makespan proven, peak memory not proven"."""
    status = row.get("status")
    if row.get("makespan_ms") is None:
        return ""
    if status == "OPTIMAL" or status == "FEASIBLE" and row.get("makespan_proven"):
        return "makespan proven, " + ("peak memory proven" if row.get("peak_proven") else "peak memory not proven")
    if status == "FEASIBLE" and row.get("bound_ms") is not None:
        return f"makespan not proven, within {100 * (row.get('gap') or 0.0):.1f}% of the bound"
    return ""


def _open_levels(res: Mapping[str, Any]) -> str:
    """Which levels of a lexicographic objective are proven, in words ("makespan proven, peak memory not proven")."""
    levels = res.get("levels") or []
    if len(levels) < 2:
        return ""
    return ", ".join(f"{str(lv.get('name', '')).replace('_', ' ')} {'proven' if lv.get('proven') else 'not proven'}"
                     for lv in levels)


def _level_value(level: Mapping[str, Any], value: Any, units: Mapping[str, Any]) -> str:
    return _gib(value, units) if "memory" in str(level.get("name", "")) else _ms(value, units)


def _headline(problem: Problem, schedule: Schedule, result: Any, meta: Mapping[str, Any],
              units: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The first table: the plan in ms (or the problem's units when none are known), no raw booleans."""
    fig = metrics(problem, schedule)
    res = result.to_dict() if hasattr(result, "to_dict") else dict(result or {})
    row = _plan_row(meta)
    rows: list[tuple[str, str]] = []
    if row is not None:
        rows.append(("plan", f"{row.get('family')}" + (f", for {meta['runtime']}'s runtime" if meta.get("runtime")
                                                       and meta["runtime"] != "any" else "")))
        proof = _row_proof(row)
        rows.append(("status", str(row.get("mark") or row.get("status", "-")) + (f": {proof}" if proof else "")))
        rows.append(("makespan", "-" if row.get("makespan_ms") is None else f"{row['makespan_ms']:.3f} ms"))
        rows.append(("lower bound", "-" if row.get("bound_ms") is None else f"{row['bound_ms']:.3f} ms"))
        rows.append(("gap", "-" if row.get("gap") is None else f"{100 * row['gap']:.1f}%"))
        if row.get("handcrafted"):
            rows.append((f"published {row['handcrafted']}",
                         ("-" if row.get("handcrafted_ms") is None else f"{row['handcrafted_ms']:.3f} ms")
                         + (f", fits the budget: {_yes_no(row.get('handcrafted_fits'))}"
                            if row.get("handcrafted_fits") is not None else "")))
        if row.get("engine"):
            rows.append(("found by", str(row["engine"])))
        if row.get("note"):
            rows.append(("note", str(row["note"])))
    elif res:
        status = str(res.get("status", "-"))
        open_levels = _open_levels(res)
        rows.append(("status", status + (f": {open_levels}" if open_levels else "")))
        name = str(res.get("objective_name") or "makespan").replace("_", " ")
        rows.append((name, _ms(res.get("objective"), units)))
        rows.append(("lower bound", _ms(res.get("lower_bound"), units)))
        gap = res.get("gap")
        rows.append(("gap", "-" if gap is None else f"{100 * gap:.2f}%"))
        for level in (res.get("levels") or [])[1:]:
            value = _level_value(level, level.get("value"), units)
            state = "proven" if level.get("proven") else f"bound {_level_value(level, level.get('bound'), units)}"
            rows.append((str(level.get("name", "")).replace("_", " "), f"{value} ({state})"))
        rows.append(("found by", str(res.get("engine") or res.get("strategy") or "-")))
        rows.append(("bound proved by", str(res.get("bound_engine") or "-")))
        if res.get("backend"):
            rows.append(("backend", str(res["backend"])))
        if res.get("wall_time_s") is not None:
            rows.append(("search time", f"{float(res['wall_time_s']):.2f} s"))
    if not any(k == "makespan" for k, _ in rows):
        rows.append(("makespan", _ms(fig.makespan, units)))
    rows.append(("bubble", f"{_ms(fig.bubble_global, units)} ({100 * fig.bubble_rate:.1f}% of the makespan, "
                           f"worst rank)"))
    return rows


def _per_rank_html(problem: Problem, schedule: Schedule, units: Mapping[str, Any]) -> str:
    fig = metrics(problem, schedule)
    names = device_labels(problem)
    who = "rank" if any(v != k for k, v in names.items()) else "device"
    body = ""
    for dev in problem.cluster.devices:
        busy = fig.busy.get(dev.name, 0)
        body += (f"<tr><th>{html.escape(names[dev.name])}</th><td>{_gib(fig.peak_memory.get(dev.name, 0), units)}</td>"
                 f"<td>{_gib(dev.memory, units)}</td><td>{_ms(busy, units)}</td>"
                 f"<td>{_ms(fig.makespan - busy, units)}</td></tr>")
    return (f"<table class='per-rank'><tr><th>{who}</th><th>peak memory</th><th>budget</th><th>busy</th>"
            f"<th>idle</th></tr>{body}</table>")


def _details(problem: Problem, schedule: Schedule, result: Any, meta: Mapping[str, Any],
             units: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The solver's own figures: time and memory units, which device each rank is."""
    fig = metrics(problem, schedule)
    res = result.to_dict() if hasattr(result, "to_dict") else dict(result or {})
    names = device_labels(problem)
    rows = [("problem", str(problem))]
    if units.get("time_unit_ms"):
        rows.append(("units", f"1 time unit = {units['time_unit_ms']:g} ms"
                     + (f", 1 memory unit = {units['memory_unit_bytes']} B" if units.get("memory_unit_bytes") else "")))
    if (meta.get("units") or {}).get("time_tolerance") is not None:
        rows.append(("rounding", "the chart and the per-rank figures are of the solver's times (your stage times "
                     "rounded to whole time units); the plan's makespan, bound and the comparison are of your "
                     "times, unrounded"))
    rows.append(("makespan", f"{fig.makespan} time units"))
    if res.get("lower_bound") is not None:
        rows.append(("lower bound", f"{res['lower_bound']} time units"))
    rows.append(("bubble", f"{fig.bubble_global} time units (worst rank), {fig.bubble_span} within the span"))
    rows.append(("peak memory", ", ".join(f"{names[d]} {v}" for d, v in fig.peak_memory.items()) + " memory units"))
    rows.append(("busy", ", ".join(f"{names[d]} {v}" for d, v in fig.busy.items()) + " time units"))
    if any(names[d] != d for d in names):
        rows.append(("devices", ", ".join(f"{names[d]} = {d}" for d in names)
                     + " (a rank is its device's index in the cluster)"))
    return rows


_TABLE_MS = {"makespan_ms": "makespan", "bound_ms": "bound", "handcrafted_ms": "published"}


def _table_html(table: Sequence[Mapping[str, Any]], ranks: Sequence[str], units: Mapping[str, Any]) -> str:
    if not table:
        return ""

    def cell(v: Any) -> str:
        if isinstance(v, bool):
            return _yes_no(v)
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, (list, tuple)):
            return " ".join(cell(x) for x in v)
        return "-" if v is None else str(v)

    if any("family" in r for r in table):  # the planner's rows: ms, GiB per rank, yes/no
        n = max((len(r.get("peak_gib") or ()) for r in table), default=0)
        rank_names = list(ranks[:n]) + [f"rank{i}" for i in range(len(ranks), n)]
        head = (["family", "makespan ms"] + [f"{r} GiB" for r in rank_names]
                + ["status", "bound ms", "gap", "bubble %", "published", "its ms", "fits", "note"])
        lines = []
        for r in table:
            peaks = list(r.get("peak_gib") or ()) or [None] * n
            values = [cell(r.get("family")), "-" if r.get("makespan_ms") is None else f"{r['makespan_ms']:.3f}",
                      *("-" if g is None else f"{g:.2f}" for g in peaks), cell(r.get("mark") or r.get("status")),
                      "-" if r.get("bound_ms") is None else f"{r['bound_ms']:.3f}",
                      "-" if r.get("gap") is None else f"{100 * r['gap']:.1f}%",
                      "-" if r.get("bubble_pct") is None else f"{r['bubble_pct']:.1f}",
                      cell(r.get("handcrafted")),
                      "-" if r.get("handcrafted_ms") is None else f"{r['handcrafted_ms']:.3f}",
                      _yes_no(r.get("handcrafted_fits")),
                      "; ".join(x for x in (_row_proof(r), str(r.get("note") or "")) if x)]
            lines.append(values)
    else:  # another comparison (reproduce --search, a Pareto walk): every plain column, times in ms when known
        keys = list(dict.fromkeys(k for r in table for k, v in r.items() if not isinstance(v, Mapping)))
        time_keys = {"makespan", "bubble", "lower bound", "objective", "lower_bound"}
        memory_keys = {"peak memory", "peak_memory"}
        head, lines = [], []
        for k in keys:
            label = k.replace("_", " ")
            if k in time_keys and units.get("time_unit_ms"):
                label += " ms"
            elif k in memory_keys and units.get("memory_unit_bytes"):
                label += " GiB"
            head.append(label)
        for r in table:
            values = []
            for k in keys:
                v = r.get(k)
                if k in time_keys and units.get("time_unit_ms") and isinstance(v, (int, float)) \
                        and not isinstance(v, bool):
                    values.append(_ms(v, units)[:-3])
                elif k in memory_keys and units.get("memory_unit_bytes") and isinstance(v, (int, float)) \
                        and not isinstance(v, bool):
                    values.append(_gib(v, units)[:-4])
                else:
                    values.append(cell(v))
            lines.append(values)
    head_html = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(f"<tr><td>{i}</td>" + "".join(f"<td>{html.escape(v)}</td>" for v in values) + "</tr>"
                   for i, values in enumerate(lines, 1))
    return f'<h2>Comparison</h2><table class="cmp"><tr><th>#</th>{head_html}</tr>{body}</table>'


def _front_points(front: Any) -> list[dict[str, Any]]:
    """The points of a front to plot; a point that is no table of numbers is refused naming it."""
    points = []
    for i, p in enumerate(front or ()):
        d = p.to_dict() if hasattr(p, "to_dict") else p
        if not isinstance(d, Mapping):
            raise FormatError(f"Pareto front: point {i} must be a table of its figures, got {short_repr(d)}")
        time = d.get("makespan", d.get("objective"))
        mem = d.get("peak_memory", d.get("peak_activations"))
        if time is None or mem is None:
            continue
        for field, value in (("makespan", time), ("peak memory", mem)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise FormatError(f"Pareto front: point {i}: its {field} must be a finite number, got "
                                  f"{short_repr(value)}")
        points.append({"time": time, "memory": mem, "how": str(d.get("how") or d.get("status") or ""),
                       "label": str(d.get("schedule") or d.get("placement") or "")})
    return points


_CSS = """
body{font:13px system-ui,sans-serif;margin:16px;color:#222}h1{font-size:18px}h2{font-size:15px;margin-top:22px}
table{border-collapse:collapse;margin-bottom:8px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
.cmp td{text-align:right;white-space:nowrap}.cmp td:nth-child(2),.cmp td:last-child{text-align:left}.cmp td:last-child{white-space:normal;min-width:280px}
#tip{position:fixed;display:none;background:#fffbe6;border:1px solid #999;padding:4px 6px;pointer-events:none;
white-space:pre;font:12px monospace;z-index:9}svg text{font:11px sans-serif}.lbl{pointer-events:none}
.task:hover,.xfer:hover{stroke:#000;stroke-width:2}.legend span{display:inline-block;margin-right:12px}
.sw{display:inline-block;width:14px;height:10px;border:1px solid #333;vertical-align:middle;margin-right:3px}
details{margin-top:22px}summary{font-weight:600;cursor:pointer}
"""

#: SVG paths of the kinds' hatches and of the palette rounds' marks (see :data:`~schedsearch.export.labels.CYCLE_MARKS`).
_KIND_PATHS = {"B": "M0,8 L8,0", "I": "M0,0 L8,8", "W": "M0,8 L8,0 M0,0 L8,8", "other": "M4,4 L4.5,4"}
_MARK_SVG = {
    1: "<circle cx='5' cy='5' r='1.3' fill='#000'/>",
    2: "<circle cx='5' cy='5' r='2.4' fill='none' stroke='#000' stroke-width='1'/>",
    3: "<path d='M1,5 L9,5' stroke='#000' stroke-width='1.4'/>",
    4: "<path d='M5,1 L5,9' stroke='#000' stroke-width='1.4'/>",
    5: "<path d='M5,1.5 L5,8.5 M1.5,5 L8.5,5' stroke='#000' stroke-width='1.2'/>",
    6: "<path d='M5,1.5 L5,8.5 M1.5,5 L8.5,5 M2.5,2.5 L7.5,7.5 M2.5,7.5 L7.5,2.5' stroke='#000' stroke-width='0.9'/>",
    7: "<circle cx='5' cy='5' r='3.8' fill='none' stroke='#000' stroke-width='1.2'/>",
}

_JS = r"""
(function(){
var errors=[];window.addEventListener('error',function(e){errors.push(String(e.message||e));});
var D=JSON.parse(document.getElementById('report-data').textContent);var NS='http://www.w3.org/2000/svg';
function el(n,a,p){var e=document.createElementNS(NS,n);for(var k in a)e.setAttribute(k,a[k]);if(p)p.appendChild(e);return e;}
var U=D.units||{},DEC=D.ms_decimals||3;
function t(v){return U.time_unit_ms?(v*U.time_unit_ms).toFixed(DEC)+' ms':v+' time units';}
function m(v){return U.memory_unit_bytes?(v*U.memory_unit_bytes/1073741824).toFixed(2)+' GiB':v+' memory units';}
var tip=document.getElementById('tip');
function hover(node,text){el('title',{},node).textContent=text;
node.addEventListener('mousemove',function(ev){tip.style.display='block';
tip.textContent=text;tip.style.left=(ev.clientX+12)+'px';tip.style.top=(ev.clientY+12)+'px';});
node.addEventListener('mouseleave',function(){tip.style.display='none';});}
var drawn=0,tips=0,keys={};
try{
 var L=120,R=20,RH=34,CH=16,rowY=[],rowH=[],H=20;
 D.rows.forEach(function(r,i){rowY.push(H);rowH.push(i<D.num_devices?RH:CH);H+=rowH[i];});H+=20;
 var W=Math.max(900,Math.min(8000,D.makespan/Math.max(1,D.shortest)*40+L+R));
 var sx=(W-L-R)/Math.max(1,D.makespan);
 var svg=el('svg',{width:W,height:H,id:'gantt'},document.getElementById('gantt-box'));
 var defs=el('defs',{},svg);
 Object.keys(D.kind_paths).forEach(function(k){
  var p=el('pattern',{id:'h-'+k,width:8,height:8,patternUnits:'userSpaceOnUse'},defs);
  el('path',{d:D.kind_paths[k],stroke:'rgba(0,0,0,.55)','stroke-width':1.2},p);});
 Object.keys(D.mark_svg).forEach(function(c){
  var p=el('pattern',{id:'c-'+c,width:10,height:10,patternUnits:'userSpaceOnUse'},defs);p.innerHTML=D.mark_svg[c];});
 D.rows.forEach(function(r,i){var y=rowY[i],rh=rowH[i];
  el('text',{x:4,y:y+rh/2+4,style:rh<RH?'font-size:10px':''},svg).textContent=r;
  el('line',{x1:L,x2:W-R,y1:y+rh,y2:y+rh,stroke:'#eee'},svg);});
 var ticks=Math.max(10,Math.floor((W-L-R)/110));
 var step=Math.pow(10,Math.floor(Math.log10(Math.max(1,D.makespan/ticks))));
 if(D.makespan/step>2*ticks)step*=5;else if(D.makespan/step>ticks)step*=2;
 for(var x=0;x<=D.makespan;x+=step){el('line',{x1:L+x*sx,x2:L+x*sx,y1:14,y2:H-18,stroke:'#ddd'},svg);
  el('text',{x:L+x*sx-4,y:H-4},svg).textContent=U.time_unit_ms?(x*U.time_unit_ms).toPrecision(4)/1:x;}
 el('text',{x:4,y:H-4},svg).textContent=U.time_unit_ms?'time (ms)':'time (units)';
 D.tasks.forEach(function(k){var h=(RH-8)/k.bands,y=rowY[k.row]+4+k.band*h,x=L+k.start*sx,w=Math.max(1,(k.end-k.start)*sx);
  var g=el('g',{},svg);
  var r=el('rect',{x:x,y:y,width:w,height:h,fill:k.fill,stroke:'#333','stroke-width':.5,'class':'task','data-key':k.key},g);
  if(k.hatch)el('rect',{x:x,y:y,width:w,height:h,fill:'url(#h-'+(k.kind in D.kind_paths?k.kind:'other')+')','pointer-events':'none'},g);
  if(k.mark)el('rect',{x:x,y:y,width:w,height:h,fill:'url(#c-'+k.mark+')','pointer-events':'none'},g);
  var fits=function(s,room){return s.length*6.6+4<=room;};
  var text=[k.label,k.short].filter(function(s){return fits(s,w)&&h>=11;})[0];
  if(text)el('text',{x:x+w/2,y:y+h/2+4,'text-anchor':'middle','class':'lbl',fill:k.ink},g).textContent=text;
  else{text=[k.label,k.short].filter(function(s){return fits(s,h)&&w>=12;})[0];
   if(text)el('text',{x:0,y:0,'text-anchor':'middle','class':'lbl',fill:k.ink,
    transform:'translate('+(x+w/2+4)+','+(y+h/2)+') rotate(-90)'},g).textContent=text;}
  hover(r,k.tip);tips++;drawn++;keys[k.key]=1;});
 D.transfers.forEach(function(k){var y=rowY[k.row]+2,x=L+k.start*sx,w=Math.max(1,(k.end-k.start)*sx);
  var r=el('rect',{x:x,y:y,width:w,height:CH-4,fill:'"""+_TRANSFER+r"""',stroke:'#333','stroke-width':.5,'class':'xfer'},svg);
  hover(r,k.tip);});
 var mb=document.getElementById('memory-box');
 D.memory.forEach(function(dev){var top=0;dev.steps.forEach(function(s){top=Math.max(top,s[1]);});
  if(dev.capacity!==null)top=Math.max(top,dev.capacity);top=Math.max(top,1);
  var MH=90,s=el('svg',{width:W,height:MH+22,'class':'mem'},mb),sy=MH/top;
  el('text',{x:4,y:16},s).textContent=dev.title;
  var pts=[];dev.steps.forEach(function(q,i){var nx=i+1<dev.steps.length?dev.steps[i+1][0]:D.makespan;
   pts.push((L+q[0]*sx)+','+(MH+4-q[1]*sy));pts.push((L+nx*sx)+','+(MH+4-q[1]*sy));});
  el('polyline',{points:pts.join(' '),fill:'none',stroke:'#1f77b4','stroke-width':1.5,'class':'mem-line'},s);
  el('line',{x1:L,x2:L+D.makespan*sx,y1:MH+4,y2:MH+4,stroke:'#999'},s);
  if(dev.capacity!==null){el('line',{x1:L,x2:L+D.makespan*sx,y1:MH+4-dev.capacity*sy,y2:MH+4-dev.capacity*sy,
   stroke:'#d62728','stroke-dasharray':'6 3','class':'capacity'},s);
   el('text',{x:L+D.makespan*sx-150,y:MH+2-dev.capacity*sy},s).textContent='budget '+m(dev.capacity);}});
 var F=D.front;if(F&&F.length){var fb=document.getElementById('front-box'),FW=520,FH=300;
  var s2=el('svg',{width:FW,height:FH,id:'front'},fb),tx=F.map(function(p){return p.time;}),my=F.map(function(p){return p.memory;});
  var x0=Math.min.apply(null,tx),x1=Math.max.apply(null,tx),y0=Math.min.apply(null,my),y1=Math.max.apply(null,my);
  function px(v){return 60+(v-x0)/Math.max(1,x1-x0)*(FW-90);}function py(v){return FH-40-(v-y0)/Math.max(1,y1-y0)*(FH-70);}
  el('text',{x:FW/2-40,y:FH-6},s2).textContent='makespan';el('text',{x:4,y:14},s2).textContent='peak memory';
  F.forEach(function(p){var c=el('circle',{cx:px(p.time),cy:py(p.memory),r:5,fill:p.how=='proven'||p.how=='optimal'?'#2ca02c':'#ff7f0e','class':'point'},s2);
   el('text',{x:px(p.time)+7,y:py(p.memory)-6},s2).textContent=t(p.time)+', '+m(p.memory);
   hover(c,(p.label?p.label+'\n':'')+'makespan '+t(p.time)+'\npeak memory '+m(p.memory)+'\n'+p.how);});}
}catch(e){errors.push(String(e&&e.stack||e));}
var c=document.getElementById('report-check');c.setAttribute('data-tasks',drawn);c.setAttribute('data-tips',tips);
c.setAttribute('data-expected',D.expected);c.setAttribute('data-keys',Object.keys(keys).length);
c.setAttribute('data-errors',errors.join(' | '));c.textContent=drawn+' of '+D.expected+' task rectangles drawn'+(errors.length?'; errors: '+errors.join(' | '):'');
})();
"""


def _rows_html(rows: Sequence[tuple[str, str]], css: str) -> str:
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table class='{css}'>{body}</table>"


def report_html(
    problem: Problem,
    schedule: Schedule,
    *,
    result: Any = None,
    meta: Mapping[str, Any] | None = None,
    table: Sequence[Mapping[str, Any]] | None = None,
    front: Any = None,
    title: str | None = None,
) -> str:
    """The report of ``schedule`` for ``problem`` as one HTML page (see the module docstring).

    Parameters
    ----------
    result:
        A :class:`~schedsearch.result.SearchResult` (or its ``to_dict()``):
        status, bound, gap, the engines; default: ``meta["result"]``.
    meta:
        A plan document's metadata: ``units`` (``time_unit_ms``,
        ``memory_unit_bytes``: real units in the report), ``table``,
        ``result``, and the planner's ``family`` and ``candidate`` (its row
        of the table heads the report).
    table:
        Rows of a comparison (the planner's rows as dicts); default
        ``meta["table"]``.
    front:
        A Pareto front (:class:`~schedsearch.search.pareto_front.ParetoFront` or
        dicts with ``makespan``/``objective`` and ``peak_memory``), drawn as
        a plot.

    Raises
    ------
    FormatError
        When a field the report writes out (a unit, a figure of the table,
        of the result or of a front point) is not a finite number, or a
        table, row or point is not a table of fields; the message names it.

    Examples
    --------
    >>> from schedsearch.export.html import report_html
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> page = report_html(problem, one_f_one_b(problem), meta={"units": {"time_unit_ms": 0.5}})
    >>> page.startswith("<!DOCTYPE html>"), "F1·m0" in page, "http" in page.replace("http://www.w3.org/2000/svg", "")
    (True, True, False)
    >>> "<th>makespan</th><td>4.500 ms</td>" in page, "<th>makespan</th><td>9 time units</td>" in page
    (True, True)
    """
    meta = dict(meta or {})
    if result is None:
        result = meta.get("result")
    if table is None:
        table = meta.get("table")
    _check_meta(meta, result, table)
    units = _units(meta, problem)
    data = _data(problem, schedule, units)
    data["front"] = _front_points(front)
    data["shortest"] = min((t.end - t.start for t in schedule.tasks if t.end > t.start), default=1)
    data["ms_decimals"] = _ms_decimals(units["time_unit_ms"]) if units.get("time_unit_ms") else 3
    data["kind_paths"] = _KIND_PATHS
    data["mark_svg"] = _MARK_SVG
    heading = title or problem.name or schedule.name or "plan"
    groups = list(dict.fromkeys((t["group"], t["fill"]) for t in data["tasks"] if not t["chunk"]
                                or t["chunk"] == data["tasks"][0]["chunk"]))
    seen: set[str] = set()
    swatches = []
    for group, fill in groups:
        if group in seen or len(seen) >= 20:
            continue
        seen.add(group)
        swatches.append(f'<span><i class="sw" style="background:{fill}"></i>{html.escape(group)}</span>')
    kinds = sorted({t["kind"] for t in data["tasks"]}, key=lambda k: (kind_order(k), k))
    hatch_names = {"B": "hatched /", "I": "hatched \\", "W": "cross-hatched"}
    by_job = any(not g.startswith("m") for g, _ in groups)
    cycles = sorted({t["cycle"] for t in data["tasks"]})
    legend = ("<div class='legend'>colour: " + ("job" if by_job else "micro-batch")
              + (f" (mod 20; {', '.join(cycle_legend(c) for c in cycles)})" if len(cycles) > 1 else "")
              + " " + "".join(swatches)
              + " &nbsp; kinds: " + ", ".join(f"{k} ({hatch_names.get(k, 'plain')})" for k in kinds)
              + ("; later chunks / the other direction lighter" if any(t["chunk"] for t in data["tasks"]) else "")
              + (". Labels: j0.o1 = job 0's operation 1" if by_job else
                 ". Labels: F3·m12 = stage 3's forward of micro-batch 12")
              + "; hover a task for its times.</div>")
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    front_html = "<h2>Pareto front</h2><div id='front-box'></div>" if data["front"] else ""
    ranks = [n for n in device_labels(problem).values()]
    details = _rows_html(_details(problem, schedule, result, meta, units), "details")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(heading)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(heading)}</h1>{_rows_html(_headline(problem, schedule, result, meta, units), 'summary')}"
        f"{_per_rank_html(problem, schedule, units)}"
        f"<h2>Schedule</h2>{legend}<div id='gantt-box' style='overflow-x:auto'></div>"
        f"<h2>Memory per {'rank' if any(r.startswith('rank') for r in ranks) else 'device'}</h2>"
        "<div id='memory-box' style='overflow-x:auto'></div>"
        f"{_table_html(table or [], ranks, units)}{front_html}"
        f"<details><summary>Details: the solver's units</summary>{details}</details>"
        "<p id='report-check' data-tasks='0' data-errors='not drawn'></p><div id='tip'></div>"
        f"<script type='application/json' id='report-data'>{payload}</script>"
        f"<script>{_JS}</script></body></html>\n"
    )


def write_report(path: str | Path, problem: Problem, schedule: Schedule, **options: Any) -> Path:
    """Write :func:`report_html` of ``schedule`` to ``path``; ``options`` go to it.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from schedsearch.export.html import write_report
    >>> from schedsearch.handcrafted import gpipe
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print(write_report(Path(folder) / "gpipe.html", problem, gpipe(problem)).name)
    gpipe.html
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report_html(problem, schedule, **options), encoding="utf-8")
    return path
