"""A plan report: one self-contained HTML file (inline CSS, JavaScript and SVG; no network when viewed).

The report shows

* the Gantt chart, one row per device and per channel, one rectangle per
  task on each of its devices (the members of an overlapped group as bands
  of one interval), coloured by micro-batch (a job shop's: by job), hatched
  by kind; hovering a rectangle shows the block, micro-batch, stage, start,
  end and duration (in the problem's time units, and in milliseconds when
  the problem carries its units (``time_unit_s``) or the plan's metadata
  does, as the planner's and the profiler's plans do);
* per-device memory over time with the capacity as a dashed line (in
  memory units, and GiB when the units are known);
* the metrics, the bound and the gap, the engine that found the plan and
  what proved the bound (from a :class:`~schedsearch.result.SearchResult`
  or the ``result`` of a plan document's metadata);
* where given, the comparison table (the planner's ranked table, the
  ``table`` of a plan's metadata) and the Pareto front as a plot.

Tasks are named by the rule of :mod:`schedsearch.export.labels` (``F3·m12``:
stage 3's forward, micro-batch 12). The page checks its own drawing: once
drawn, the element ``#report-check`` carries ``data-tasks`` (the
rectangles drawn), ``data-expected`` (the tasks times their devices),
``data-keys`` (distinct tasks drawn) and ``data-errors`` (any script
error).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from schedsearch.export.labels import shade, task_style
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, memory_profile, metrics, peak_memory

__all__ = ["report_html", "write_report"]

_TRANSFER = "#937860"


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


def _data(problem: Problem, schedule: Schedule, units: Mapping[str, Any]) -> dict[str, Any]:
    devices = list(problem.cluster.device_names)
    channels = sorted({tr.channel for tr in schedule.transfers if tr.end > tr.start})
    rows = devices + [f"channel {c}" for c in channels]
    groups: dict[tuple, list] = {}
    for t in schedule.tasks:
        if t.group_key is not None:
            groups.setdefault(t.group_key, []).append(t)
    band: dict[tuple[str, int], tuple[int, int]] = {}
    for members in groups.values():
        order = sorted(members, key=lambda m: ("FBIW".find(problem.graph.block(m.block).kind) % 5
                                               if m.block in problem.graph.by_name() else 5, m.block, m.microbatch))
        for i, m in enumerate(order):
            band[m.key] = (i, len(order))
    tasks = []
    for t in schedule.tasks:
        block = problem.graph.by_name().get(t.block)
        i, n = band.get(t.key, (0, 1))
        for d in t.devices:
            style = task_style(problem, t.block, t.microbatch, d)
            tasks.append({
                "row": rows.index(d) if d in rows else 0, "start": t.start, "end": t.end, "band": i, "bands": n,
                "fill": shade(style.colour, style.chunk), "kind": style.kind, "hatch": style.hatch,
                "label": style.label, "short": style.labels[-1], "key": f"{t.block}#{t.microbatch}",
                "block": t.block, "microbatch": t.microbatch, "stage": None if block is None else block.stage,
                "devices": list(t.devices), "overlap": t.overlap, "group": style.group, "chunk": style.chunk_name,
            })
    transfers = [{"row": rows.index(f"channel {tr.channel}"), "start": tr.start, "end": tr.end,
                  "label": f"{tr.src}->{tr.dst}·m{tr.microbatch}", "microbatch": tr.microbatch}
                 for tr in schedule.transfers if tr.end > tr.start]
    profile = memory_profile(problem, schedule)
    peaks = peak_memory(problem, schedule)  # initial memory included, even under a free at time 0
    memory = [{"device": d, "steps": profile.get(d, [(0, 0)]), "peak": peaks.get(d, 0),
               "capacity": next(dev.memory for dev in problem.cluster.devices if dev.name == d)} for d in devices]
    return {"rows": rows, "tasks": tasks, "transfers": transfers, "memory": memory, "makespan": schedule.makespan,
            "expected": sum(len(t.devices) for t in schedule.tasks), "num_tasks": len(schedule.tasks),
            "units": dict(units)}


def _fmt_time(value: int | float | None, units: Mapping[str, Any]) -> str:
    if value is None:
        return "-"
    ms = units.get("time_unit_ms")
    return f"{value:g}" + (f" ({value * ms:.6g} ms)" if ms else "")


def _fmt_memory(value: int | None, units: Mapping[str, Any]) -> str:
    if value is None:
        return "unbounded"
    unit = units.get("memory_unit_bytes")
    return f"{value}" + (f" ({value * unit / 2**30:.3g} GiB)" if unit else "")


def _summary(problem: Problem, schedule: Schedule, result: Any, units: Mapping[str, Any]) -> list[tuple[str, str]]:
    fig = metrics(problem, schedule)
    res = result.to_dict() if hasattr(result, "to_dict") else dict(result or {})
    rows = [("problem", str(problem))]
    if res:
        rows.append(("status", str(res.get("status", "-"))))
        name = str(res.get("objective_name") or "makespan").replace("_", " ")
        rows.append((name, _fmt_time(res.get("objective"), units)))
        rows.append(("lower bound", _fmt_time(res.get("lower_bound"), units)))
        gap = res.get("gap")
        rows.append(("gap", "-" if gap is None else f"{100 * gap:.2f}%"))
        for level in (res.get("levels") or [])[1:]:
            state = "proven" if level.get("proven") else f"bound {level.get('bound')}"
            rows.append((str(level.get("name", "")).replace("_", " "), f"{level.get('value')} ({state})"))
        rows.append(("found by", str(res.get("engine") or res.get("strategy") or "-")))
        rows.append(("bound proved by", str(res.get("bound_engine") or "-")))
        if res.get("backend"):
            rows.append(("backend", str(res["backend"])))
        if res.get("wall_time_s") is not None:
            rows.append(("search time", f"{float(res['wall_time_s']):.2f} s"))
    if not res or (res.get("objective_name") or "makespan") != "makespan":
        rows.append(("makespan", _fmt_time(fig.makespan, units)))
    rows.append(("bubble (global)", f"{_fmt_time(fig.bubble_global, units)}, rate {fig.bubble_rate:.3f}"))
    rows.append(("bubble (span)", _fmt_time(fig.bubble_span, units)))
    rows.append(("peak memory per device", ", ".join(f"{d} {_fmt_memory(v, units)}" for d, v in fig.peak_memory.items())))
    rows.append(("busy", ", ".join(f"{d} {v}" for d, v in fig.busy.items())))
    if units.get("time_unit_ms"):
        rows.append(("units", f"1 time unit = {units['time_unit_ms']:g} ms"
                     + (f", 1 memory unit = {units['memory_unit_bytes']} B" if units.get("memory_unit_bytes") else "")))
    return rows


def _table_html(table: Sequence[Mapping[str, Any]]) -> str:
    if not table:
        return ""
    preferred = ["family", "status", "makespan_ms", "bubble_pct", "bound_ms", "gap", "peak_gib", "handcrafted",
                 "handcrafted_ms", "handcrafted_fits", "engine", "note"]
    if any("family" in r for r in table):  # the planner's rows: their main columns
        keys = [k for k in preferred if any(k in r for r in table)]
    else:  # another comparison (reproduce --search, a Pareto walk): every plain column, in order
        keys = list(dict.fromkeys(k for r in table for k, v in r.items() if not isinstance(v, Mapping)))

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, (list, tuple)):
            return " ".join(cell(x) for x in v)
        return "-" if v is None else str(v)

    head = "".join(f"<th>{html.escape(k.replace('_', ' '))}</th>" for k in keys)
    body = "".join(f"<tr><td>{i}</td>" + "".join(f"<td>{html.escape(cell(r.get(k)))}</td>" for k in keys) + "</tr>"
                   for i, r in enumerate(table, 1))
    return f'<h2>Comparison</h2><table class="cmp"><tr><th>#</th>{head}</tr>{body}</table>'


def _front_points(front: Any) -> list[dict[str, Any]]:
    points = []
    for p in front or ():
        d = p.to_dict() if hasattr(p, "to_dict") else dict(p)
        time = d.get("makespan", d.get("objective"))
        mem = d.get("peak_memory", d.get("peak_activations"))
        if time is None or mem is None:
            continue
        points.append({"time": time, "memory": mem, "how": str(d.get("how") or d.get("status") or ""),
                       "label": str(d.get("schedule") or d.get("placement") or "")})
    return points


_CSS = """
body{font:13px system-ui,sans-serif;margin:16px;color:#222}h1{font-size:18px}h2{font-size:15px;margin-top:22px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
#tip{position:fixed;display:none;background:#fffbe6;border:1px solid #999;padding:4px 6px;pointer-events:none;
white-space:pre;font:12px monospace;z-index:9}svg text{font:11px sans-serif}.lbl{fill:#fff;pointer-events:none}
.task:hover,.xfer:hover{stroke:#000;stroke-width:2}.legend span{display:inline-block;margin-right:12px}
.sw{display:inline-block;width:14px;height:10px;border:1px solid #333;vertical-align:middle;margin-right:3px}
"""

_JS = r"""
(function(){
var errors=[];window.addEventListener('error',function(e){errors.push(String(e.message||e));});
var D=JSON.parse(document.getElementById('report-data').textContent);var NS='http://www.w3.org/2000/svg';
function el(n,a,p){var e=document.createElementNS(NS,n);for(var k in a)e.setAttribute(k,a[k]);if(p)p.appendChild(e);return e;}
var U=D.units||{};function t(v){return U.time_unit_ms?v+' ('+(v*U.time_unit_ms).toPrecision(6)/1+' ms)':String(v);}
function m(v){return U.memory_unit_bytes?v+' ('+(v*U.memory_unit_bytes/1073741824).toPrecision(4)/1+' GiB)':String(v);}
var tip=document.getElementById('tip');
function hover(node,text){node.addEventListener('mousemove',function(ev){tip.style.display='block';
tip.textContent=text;tip.style.left=(ev.clientX+12)+'px';tip.style.top=(ev.clientY+12)+'px';});
node.addEventListener('mouseleave',function(){tip.style.display='none';});}
var drawn=0,keys={};
try{
 var W=Math.max(900,Math.min(6000,D.makespan*30)),L=90,R=20,RH=34,H=D.rows.length*RH+40;
 var sx=(W-L-R)/Math.max(1,D.makespan);
 var svg=el('svg',{width:W,height:H,id:'gantt'},document.getElementById('gantt-box'));
 var defs=el('defs',{},svg);
 [['B','M0,8 L8,0'],['I','M0,0 L8,8'],['W','M0,8 L8,0 M0,0 L8,8'],['other','M4,4 L4.5,4']].forEach(function(h){
  var p=el('pattern',{id:'h-'+h[0],width:8,height:8,patternUnits:'userSpaceOnUse'},defs);
  el('path',{d:h[1],stroke:'rgba(0,0,0,.55)','stroke-width':1.2},p);});
 D.rows.forEach(function(r,i){var y=20+i*RH;el('text',{x:4,y:y+RH/2+4},svg).textContent=r;
  el('line',{x1:L,x2:W-R,y1:y+RH,y2:y+RH,stroke:'#eee'},svg);});
 var step=Math.pow(10,Math.floor(Math.log10(Math.max(1,D.makespan/10))));
 if(D.makespan/step>20)step*=5;else if(D.makespan/step>10)step*=2;
 for(var x=0;x<=D.makespan;x+=step){el('line',{x1:L+x*sx,x2:L+x*sx,y1:14,y2:H-18,stroke:'#ddd'},svg);
  el('text',{x:L+x*sx-4,y:H-4},svg).textContent=U.time_unit_ms?(x*U.time_unit_ms).toPrecision(4)/1:x;}
 el('text',{x:W-R-120,y:12},svg).textContent=U.time_unit_ms?'time (ms)':'time (problem units)';
 D.tasks.forEach(function(k){var h=(RH-8)/k.bands,y=20+k.row*RH+4+k.band*h,x=L+k.start*sx,w=Math.max(1,(k.end-k.start)*sx);
  var g=el('g',{},svg);
  var r=el('rect',{x:x,y:y,width:w,height:h,fill:k.fill,stroke:'#333','stroke-width':.5,'class':'task','data-key':k.key},g);
  if(k.hatch)el('rect',{x:x,y:y,width:w,height:h,fill:'url(#h-'+(k.kind in {B:1,I:1,W:1}?k.kind:'other')+')','pointer-events':'none'},g);
  var text=[k.label,k.short].filter(function(s){return s.length*6.6+4<=w&&h>=11;})[0];
  if(text)el('text',{x:x+w/2,y:y+h/2+4,'text-anchor':'middle','class':'lbl'},g).textContent=text;
  hover(r,k.label+'\nblock '+k.block+'\nmicro-batch '+k.microbatch+'\nstage '+(k.stage===null?'-':k.stage)+
   '\nstart '+t(k.start)+'\nend '+t(k.end)+'\nduration '+t(k.end-k.start)+'\ndevices '+k.devices.join(', ')+
   (k.overlap?'\noverlapped group '+k.overlap:'')+(k.chunk?'\n'+k.chunk:''));
  drawn++;keys[k.key]=1;});
 D.transfers.forEach(function(k){var y=20+k.row*RH+4,x=L+k.start*sx,w=Math.max(1,(k.end-k.start)*sx);
  var r=el('rect',{x:x,y:y,width:w,height:RH-8,fill:'"""+_TRANSFER+r"""',stroke:'#333','stroke-width':.5,'class':'xfer'},svg);
  hover(r,'transfer '+k.label+'\nstart '+t(k.start)+'\nend '+t(k.end));});
 var mb=document.getElementById('memory-box');
 D.memory.forEach(function(dev){var top=0;dev.steps.forEach(function(s){top=Math.max(top,s[1]);});
  if(dev.capacity!==null)top=Math.max(top,dev.capacity);top=Math.max(top,1);
  var MH=90,s=el('svg',{width:W,height:MH+22,'class':'mem'},mb),sy=MH/top;
  el('text',{x:4,y:16},s).textContent=dev.device+' (peak '+m(dev.peak)+')';
  var pts=[];dev.steps.forEach(function(q,i){var nx=i+1<dev.steps.length?dev.steps[i+1][0]:D.makespan;
   pts.push((L+q[0]*sx)+','+(MH+4-q[1]*sy));pts.push((L+nx*sx)+','+(MH+4-q[1]*sy));});
  el('polyline',{points:pts.join(' '),fill:'none',stroke:'#1f77b4','stroke-width':1.5,'class':'mem-line'},s);
  el('line',{x1:L,x2:L+D.makespan*sx,y1:MH+4,y2:MH+4,stroke:'#999'},s);
  if(dev.capacity!==null){el('line',{x1:L,x2:L+D.makespan*sx,y1:MH+4-dev.capacity*sy,y2:MH+4-dev.capacity*sy,
   stroke:'#d62728','stroke-dasharray':'6 3','class':'capacity'},s);
   el('text',{x:L+D.makespan*sx-150,y:MH+2-dev.capacity*sy},s).textContent='capacity '+m(dev.capacity);}});
 var F=D.front;if(F&&F.length){var fb=document.getElementById('front-box'),FW=520,FH=300;
  var s2=el('svg',{width:FW,height:FH,id:'front'},fb),tx=F.map(function(p){return p.time;}),my=F.map(function(p){return p.memory;});
  var x0=Math.min.apply(null,tx),x1=Math.max.apply(null,tx),y0=Math.min.apply(null,my),y1=Math.max.apply(null,my);
  function px(v){return 60+(v-x0)/Math.max(1,x1-x0)*(FW-90);}function py(v){return FH-40-(v-y0)/Math.max(1,y1-y0)*(FH-70);}
  el('text',{x:FW/2-40,y:FH-6},s2).textContent='makespan';el('text',{x:4,y:14},s2).textContent='peak memory';
  F.forEach(function(p){var c=el('circle',{cx:px(p.time),cy:py(p.memory),r:5,fill:p.how=='proven'||p.how=='optimal'?'#2ca02c':'#ff7f0e','class':'point'},s2);
   el('text',{x:px(p.time)+7,y:py(p.memory)-6},s2).textContent=p.time+', '+p.memory;
   hover(c,(p.label?p.label+'\n':'')+'makespan '+t(p.time)+'\npeak memory '+m(p.memory)+'\n'+p.how);});}
}catch(e){errors.push(String(e&&e.stack||e));}
var c=document.getElementById('report-check');c.setAttribute('data-tasks',drawn);
c.setAttribute('data-expected',D.expected);c.setAttribute('data-keys',Object.keys(keys).length);
c.setAttribute('data-errors',errors.join(' | '));c.textContent=drawn+' of '+D.expected+' task rectangles drawn'+(errors.length?'; errors: '+errors.join(' | '):'');
})();
"""


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
        ``result``.
    table:
        Rows of a comparison (the planner's rows as dicts); default
        ``meta["table"]``.
    front:
        A Pareto front (:class:`~schedsearch.search.pareto.ParetoFront` or
        dicts with ``makespan``/``objective`` and ``peak_memory``), drawn as
        a plot.

    Examples
    --------
    >>> from schedsearch.export.html import report_html
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> page = report_html(problem, one_f_one_b(problem), meta={"units": {"time_unit_ms": 0.5}})
    >>> page.startswith("<!DOCTYPE html>"), "F1·m0" in page, "http" in page.replace("http://www.w3.org/2000/svg", "")
    (True, True, False)
    """
    meta = dict(meta or {})
    units = _units(meta, problem)
    if result is None:
        result = meta.get("result")
    if table is None:
        table = meta.get("table")
    data = _data(problem, schedule, units)
    data["front"] = _front_points(front)
    heading = title or problem.name or schedule.name or "plan"
    summary = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                      for k, v in _summary(problem, schedule, result, units))
    groups = list(dict.fromkeys((t["group"], t["fill"]) for t in data["tasks"]))
    seen: set[str] = set()
    swatches = []
    for group, fill in groups:
        if group in seen or len(seen) >= 24:
            continue
        seen.add(group)
        swatches.append(f'<span><i class="sw" style="background:{fill}"></i>{html.escape(group)}</span>')
    kinds = sorted({t["kind"] for t in data["tasks"]}, key=lambda k: ("FBIW".find(k) % 5, k))
    hatch_names = {"B": "hatched /", "I": "hatched \\", "W": "cross-hatched"}
    legend = ("<div class='legend'>colour: " + ("job" if any(not g.startswith("m") for g, _ in groups) else
                                               "micro-batch") + " " + "".join(swatches)
              + " &nbsp; kinds: " + ", ".join(f"{k} ({hatch_names.get(k, 'plain')})" for k in kinds)
              + ("; later chunks / the other direction lighter" if any(t["chunk"] for t in data["tasks"]) else "")
              + ". Labels: F3·m12 = stage 3's forward of micro-batch 12.</div>")
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    front_html = "<h2>Pareto front</h2><div id='front-box'></div>" if data["front"] else ""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(heading)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(heading)}</h1><table class='summary'>{summary}</table>"
        f"<h2>Schedule</h2>{legend}<div id='gantt-box' style='overflow-x:auto'></div>"
        "<h2>Memory per device</h2><div id='memory-box' style='overflow-x:auto'></div>"
        f"{_table_html(table or [])}{front_html}"
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
