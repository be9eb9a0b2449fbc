"""The HTML plan report: self-contained, drawn by a real browser (headless Chromium), one rectangle per task.

The browser is Debian's ``chromium``; where it is missing the set-up tries
``apt-get install -y chromium`` (as root) and skips, saying why, only when
that is not possible.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

import schedsearch
from schedsearch.cli import main
from schedsearch.export import export, write_json
from schedsearch.export.html import report_html
from schedsearch.handcrafted import reproduce
from schedsearch.loaders import jobshop_problem
from schedsearch.search.pareto_front import pareto
from schedsearch.placements import vshape

_BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _browser() -> str | None:
    return next((b for b in map(shutil.which, _BROWSERS) if b), None)


@pytest.fixture(scope="module")
def chromium() -> str:
    found = _browser()
    if found:
        return found
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("headless Chromium is not installed and cannot be installed here (needs root and apt-get: "
                    "apt-get install -y chromium)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.skip(f"headless Chromium could not be installed ({' '.join(command)}: {done.stderr.strip()[-300:]})")
    found = _browser()
    if not found:
        pytest.skip("headless Chromium could not be installed: apt-get installed no chromium binary")
    return found


def _render(chromium: str, path, tmp_path) -> dict[str, str]:
    """The attributes of #report-check after Chromium ran the page's scripts, and a screenshot's size."""
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,1000"]
    dom = subprocess.run([*common, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r'<p id="report-check"([^>]*)>', dom)
    assert match, dom[:500]
    attributes = dict(re.findall(r'(data-[a-z]+)="([^"]*)"', match.group(1)))
    shot = tmp_path / "shot.png"
    subprocess.run([*common, f"--screenshot={shot}", path.as_uri()], capture_output=True, timeout=60)
    attributes["screenshot_bytes"] = str(shot.stat().st_size if shot.exists() else 0)
    return attributes


def test_report_of_a_searched_plan_draws_one_rectangle_per_task(chromium, tmp_path):
    problem = reproduce("dualpipev", devices=2, microbatches=4).problem
    result = schedsearch.solve(problem, time_limit_s=5, workers=1, seed=0)
    path = result.export("html", tmp_path / "dualpipev.html")
    page = path.read_text()
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched when viewed
    assert result.engine in page and "bound proved by" in page
    seen = _render(chromium, path, tmp_path)
    assert seen["data-errors"] == ""
    assert int(seen["data-tasks"]) == int(seen["data-expected"]) == len(result.schedule.tasks)
    assert int(seen["data-keys"]) == len(result.schedule.tasks)
    assert int(seen["screenshot_bytes"]) > 10_000  # something was painted


def test_report_with_units_table_and_front(chromium, tmp_path):
    rep = reproduce("zb-v", devices=2, microbatches=4)
    table = [{"family": "ZB-V", "status": "OPTIMAL", "makespan_ms": 7.5}, {"family": "1F1B", "status": "OPTIMAL",
                                                                          "makespan_ms": 9.0}]
    front = pareto(vshape(2, 3), time_limit_s=10)
    page = report_html(rep.problem, rep.schedule, meta={"units": {"time_unit_ms": 0.5, "memory_unit_bytes": 2**30},
                                                         "table": table}, front=front)
    assert "Comparison" in page and "Pareto front" in page and "1 time unit = 0.5 ms" in page
    path = tmp_path / "zbv.html"
    path.write_text(page, encoding="utf-8")
    seen = _render(chromium, path, tmp_path)
    assert seen["data-errors"] == "" and int(seen["data-tasks"]) == len(rep.schedule.tasks)


def test_report_of_a_job_shop_names_operations(chromium, tmp_path):
    instance = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2, name="two jobs")
    result = schedsearch.solve(instance.problem, time_limit_s=5, workers=1)
    page = result._repr_html_()
    assert page.startswith("<iframe srcdoc=") and "j1.o0" in page
    path = result.export("html", tmp_path / "jobs.html")
    seen = _render(chromium, path, tmp_path)
    assert seen["data-errors"] == "" and int(seen["data-tasks"]) == 4


def test_report_command_reads_a_plan_document_and_a_result_summary(tmp_path, capsys):
    rep = reproduce("1f1b", devices=2, microbatches=3)
    plan = write_json(rep.problem, rep.schedule, tmp_path / "plan.json", meta={"units": {"time_unit_ms": 2.0}})
    assert main(["report", str(plan), "--out", str(tmp_path / "report.html")]) == 0
    makespan = rep.schedule.makespan
    page = (tmp_path / "report.html").read_text()
    assert f"<th>makespan</th><td>{2 * makespan:.3f} ms</td>" in page  # ms first
    assert f"<th>makespan</th><td>{makespan} time units</td>" in page.split("<details>")[1]  # units in the details
    # --out is a folder, as for every other command: DIR/report.html, the folder made when missing
    assert main(["report", str(plan), "--out", str(tmp_path / "reports" / "1f1b")]) == 0
    assert (tmp_path / "reports" / "1f1b" / "report.html").read_text() == (tmp_path / "report.html").read_text()
    assert str(tmp_path / "reports" / "1f1b" / "report.html") in capsys.readouterr().out
    assert main(["report", str(plan), "--out", ""]) == 0 and "nothing written" in capsys.readouterr().out
    stem = tmp_path / "run"
    (tmp_path / "run.problem.json").write_text(rep.problem.to_json())
    (tmp_path / "run.schedule.json").write_text(rep.schedule.to_json())
    (tmp_path / "run.result.json").write_text(json.dumps({"status": "FEASIBLE", "objective": rep.schedule.makespan,
                                                          "engine": "handcrafted 1F1B"}))
    assert main(["report", f"{stem}.result.json", "--out", str(tmp_path / "r2.html")]) == 0
    assert "handcrafted 1F1B" in (tmp_path / "r2.html").read_text()
    full = {"status": "OPTIMAL", "engine": "exact search (cpsat)", "problem": rep.problem.to_dict(),
            "schedule": rep.schedule.to_dict()}
    (tmp_path / "whole.result.json").write_text(json.dumps(full))
    assert main(["report", str(tmp_path / "whole.result.json"), "--out", str(tmp_path / "r4.html")]) == 0
    assert "exact search (cpsat)" in (tmp_path / "r4.html").read_text()
    (tmp_path / "run.schedule.json").unlink()
    assert main(["report", f"{stem}.result.json", "--out", str(tmp_path / "r3.html")]) == 2
    assert "needs run.problem.json and run.schedule.json beside it" in capsys.readouterr().err


def test_result_without_a_plan_shows_its_summary():
    problem = vshape(2, 2)
    result = schedsearch.SearchResult(status=schedsearch.Status.TIMEOUT, problem=problem)
    assert result._repr_html_() == "<pre>TIMEOUT, 0.00 s</pre>"
    assert export(problem, reproduce("1f1b", devices=2, microbatches=2).schedule, "html").startswith("<!DOCTYPE")


def test_reports_written_by_reproduce_search_and_pareto_carry_their_comparison(tmp_path, capsys):
    """reproduce --search: the searched plan's report has its status, bound and the handcrafted schedule beside
    it; pareto: each point's report draws the front and lists the points."""
    from schedsearch.cli import main

    out = tmp_path / "rep"
    assert main(["reproduce", "1f1b", "--devices", "2", "--microbatches", "3", "--search", "--time-limit", "20",
                 "--out", str(out), "--format", "html"]) == 0
    page = (out / "1f1b-searched.html").read_text()
    table = page.split("<h2>Comparison</h2>")[1].split("</table>")[0]
    assert "handcrafted" in table and "searched" in table and "OPTIMAL" in table and "lower bound" in table
    assert "lower bound" in page.split("<h2>")[0]  # the summary names the bound too
    front_dir = tmp_path / "front"
    assert main(["pareto", "1f1b", "--devices", "2", "--microbatches", "3", "--time-limit", "20", "--quiet",
                 "--out", str(front_dir), "--format", "html"]) == 0
    pages = sorted(front_dir.glob("*.html"))
    assert pages and all("Pareto front" in p.read_text() and "Comparison" in p.read_text() for p in pages)


def _payload(page: str) -> dict:
    """The data the page draws from (its JSON script)."""
    text = page.split("<script type='application/json' id='report-data'>")[1].split("</script>")[0]
    return json.loads(text.replace("<\\/", "</"))


def _visible(page: str) -> str:
    """The page without its scripts: what a reader sees as text."""
    return re.sub(r"<script.*?</script>", "", page, flags=re.S)


_KINDS = {"F": "forward", "B": "backward", "I": "input gradient", "W": "weight gradient"}


def _expected_tips(problem, schedule, unit_ms: float) -> list[tuple[int, str]]:
    """Per task and device: (rank, the tip's time line), in ms straight from the schedule and the unit."""
    ranks = {d: i for i, d in enumerate(problem.cluster.device_names)}
    block = problem.graph.block
    return sorted((ranks[d], f"{t.block}·m{t.microbatch}\nrank{ranks[d]} · {_KINDS[block(t.block).kind]}"
                   f" ({block(t.block).kind}) · micro-batch {t.microbatch} · stage {block(t.block).stage}",
                   f"start {t.start * unit_ms:.3f} ms · end {t.end * unit_ms:.3f} ms · "
                   f"{(t.end - t.start) * unit_ms:.3f} ms")
                  for t in schedule.tasks for d in t.devices)


def test_every_task_of_an_8x32_plan_has_one_tooltip_in_ms(chromium, tmp_path):
    """One tooltip per task and rank, with rank, kind, micro-batch, stage and times in ms worked out here."""
    rep = reproduce("zb-v", devices=8, microbatches=32)
    unit_ms = 0.05
    plan = write_json(rep.problem, rep.schedule, tmp_path / "plan.json",
                      meta={"units": {"time_unit_ms": unit_ms, "memory_unit_bytes": 2**22}})
    assert main(["report", str(plan), "--out", str(tmp_path)]) == 0
    path = tmp_path / "report.html"
    tips = [t["tip"] for t in _payload(path.read_text())["tasks"]]
    expected = _expected_tips(rep.problem, rep.schedule, unit_ms)
    assert len(tips) == len(expected) == 8 * 32 * 6
    drawn = sorted((int(re.match(r"[^\n]*\nrank(\d+)", tip).group(1)), *tip.split("\n")[:3]) for tip in tips)
    for got, want in zip(drawn, expected):
        assert (got[0], got[1] + "\n" + got[2].split(" · chunk")[0], got[3]) == want
    seen = _render(chromium, path, tmp_path)
    assert seen["data-errors"] == ""
    assert int(seen["data-tips"]) == int(seen["data-tasks"]) == len(expected)
    # in the browser: every task rectangle holds its tooltip as its title
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=60).stdout
    titles = re.findall(r'<rect [^>]*class="task"[^>]*><title>([^<]*)</title></rect>', dom)
    assert sorted(titles) == sorted(t.replace("&", "&amp;") for t in tips)
    # and every rectangle of this 8x32 chart is wide or tall enough to name its micro-batch
    boxes = re.findall(r'<g><rect [^>]*class="task"[^>]*><title>([^<]*)</title></rect>(?:<rect [^>]*></rect>)*'
                       r'(?:<text [^>]*>([^<]*)</text>)?</g>', dom)
    assert len(boxes) == len(tips)
    for tip, label in boxes:
        microbatch = re.search(r"·m(\d+)$", tip.split("\n")[0]).group(1)
        assert re.fullmatch(rf"(\S+·)?m{microbatch}", label), (tip, label)


def test_the_report_leads_with_ms_gib_and_rank_names(tmp_path):
    """The first table is in ms, the second names rank0.. in GiB; the solver's units only in the details."""
    rep = reproduce("1f1b", devices=4, microbatches=24)
    unit_ms, unit_bytes = 0.25, 2**28
    page = report_html(rep.problem, rep.schedule,
                       meta={"units": {"time_unit_ms": unit_ms, "memory_unit_bytes": unit_bytes}})
    head, details = _visible(page).split("<details>")
    first = re.search(r"<table class='summary'>(.*?)</table>", head).group(1)
    values = re.findall(r"<td>(.*?)</td>", first)
    assert values and all(re.match(r"\d+\.\d{3} ms", v) for v in values), values
    assert f"<th>makespan</th><td>{rep.schedule.makespan * unit_ms:.3f} ms</td>" in first
    per_rank = re.search(r"<table class='per-rank'>(.*?)</table>", head).group(1)
    peaks = schedsearch.metrics(rep.problem, rep.schedule).peak_memory
    for i, d in enumerate(rep.problem.cluster.device_names):
        assert f"<th>rank{i}</th><td>{peaks[d] * unit_bytes / 2**30:.2f} GiB</td>" in per_rank
    assert "time unit" not in head and "memory unit" not in head and ">d0<" not in head
    assert f"<th>makespan</th><td>{rep.schedule.makespan} time units</td>" in details and "rank0 = d0" in details
    # micro-batches past the palette are told apart: m20-m23 carry the dots mark, m0-m19 none
    tasks = _payload(page)["tasks"]
    assert {t["microbatch"] for t in tasks if t["mark"]} == set(range(20, 24))
    assert "dots (..): m20-m39" in head


def test_a_planner_plan_heads_its_report_with_its_row_and_shows_no_raw_booleans(tmp_path, capsys):
    pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"],
                                    memory_budget_bytes="8 GiB",
                                    stages=[{"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB",
                                             "parameter_bytes": "1 GiB"}] * 2)
    result = schedsearch.plan(pipeline, time_limit_s=10, parallel=1, deterministic=True)
    paths = result.write(tmp_path / "plan")
    assert main(["report", str(paths["json"]), "--out", str(tmp_path / "rep")]) == 0
    page = _visible((tmp_path / "rep" / "report.html").read_text())
    best = result.best
    first = re.search(r"<table class='summary'>(.*?)</table>", page).group(1)
    assert f"<th>plan</th><td>{best.family}" in first
    assert f"<th>makespan</th><td>{best.makespan_ms:.3f} ms</td>" in first
    assert "makespan proven" in first if best.makespan_proven else "makespan not proven" in first
    table = page.split("<h2>Comparison</h2>")[1].split("</table>")[0]
    assert "<th>rank0 GiB</th><th>rank1 GiB</th>" in table
    assert all(f"<td>{g:.2f}</td>" in table for g in best.peak_gib)
    if best.handcrafted_fits is not None:
        assert f"<td>{'yes' if best.handcrafted_fits else 'no'}</td>" in table
    assert not re.search(r">\s*(True|False|None)\s*<", page) and "Traceback" not in page
