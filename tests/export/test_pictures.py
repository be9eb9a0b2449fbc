"""Pictures and timelines tell tasks apart: the naming rule, labels never cut, job shops by job, a legend."""

from __future__ import annotations

import re

import pytest

from optional import require

from schedsearch.export import chrome_trace, render_ascii
from schedsearch.export.labels import shade, task_label, task_style
from schedsearch.handcrafted import reproduce
from schedsearch.loaders import jobshop_problem
from schedsearch.schedule import Schedule, TaskInstance


def _jobshop():
    # 3 jobs x 3 machines, a plan by hand: every machine runs o0, o1, o2 of the jobs in turn
    instance = jobshop_problem([[(0, 3), (1, 2), (2, 4)], [(1, 4), (0, 1), (2, 3)], [(2, 2), (0, 3), (1, 1)]], 3)
    tasks = [TaskInstance(block="j0.o0", microbatch=0, devices="m0", start=0, end=3),
             TaskInstance(block="j1.o0", microbatch=0, devices="m1", start=0, end=4),
             TaskInstance(block="j2.o0", microbatch=0, devices="m2", start=0, end=2),
             TaskInstance(block="j0.o1", microbatch=0, devices="m1", start=4, end=6),
             TaskInstance(block="j1.o1", microbatch=0, devices="m0", start=4, end=5),
             TaskInstance(block="j2.o1", microbatch=0, devices="m0", start=5, end=8),
             TaskInstance(block="j0.o2", microbatch=0, devices="m2", start=6, end=10),
             TaskInstance(block="j1.o2", microbatch=0, devices="m2", start=10, end=13),
             TaskInstance(block="j2.o2", microbatch=0, devices="m1", start=8, end=9)]
    return instance.problem, Schedule(tasks=tasks)


def test_one_naming_rule_in_labels_traces_and_timelines():
    rep = reproduce("1f1b", devices=4, microbatches=16)
    assert task_label(rep.problem, "F3", 12) == "F3·m12"  # stage 3's forward, micro-batch 12
    names = {e["name"] for e in chrome_trace(rep.problem, rep.schedule)["traceEvents"] if e.get("ph") == "X"}
    assert "F3·m12" in names and all(re.fullmatch(r"[FB]\d·m\d+", n) for n in names)
    assert "rank3: " in render_ascii(rep.problem, rep.schedule, labels="stage") and "F3m12" in render_ascii(
        rep.problem, rep.schedule, labels="stage")


@pytest.mark.parametrize("max_width", [400, 120, 60])
def test_ascii_never_cuts_a_label_into_another_number(max_width):
    rep = reproduce("1f1b", devices=4, microbatches=16)
    text = render_ascii(rep.problem, rep.schedule, max_width=max_width, legend=False)
    valid = {f"{k}m{m}" for k in "FB" for m in range(16)} | {f"m{m}" for m in range(16)}
    for row in text.splitlines()[1:]:
        for word in re.findall(r"[A-Za-z0-9]+", row.split(": ", 1)[1]):
            assert word in valid or not any(c.isdigit() for c in word), (max_width, word, row)
    if max_width == 400:  # room enough: every micro-batch of 10-15 reads whole
        assert "Fm15" in text and "Bm10" in text


def test_jobshop_timeline_and_trace_name_job_and_operation():
    problem, schedule = _jobshop()
    text = render_ascii(problem, schedule)
    assert all(f"j{j}.o{o}" in text for j in range(3) for o in range(3)) and "op0" not in text
    names = [e["name"] for e in chrome_trace(problem, schedule)["traceEvents"] if e.get("ph") == "X"]
    assert sorted(names) == sorted(t.block for t in schedule.tasks)


def test_styles_colour_by_microbatch_or_job_and_shade_by_chunk():
    zbv = reproduce("zb-v", devices=2, microbatches=4).problem
    first, second = task_style(zbv, "F0", 1, "d0"), task_style(zbv, "F3", 1, "d0")
    assert (first.colour, first.chunk, second.chunk) == (second.colour, 0, 1)
    assert shade(first.colour, second.chunk) != first.colour
    dual = reproduce("dualpipe", devices=4, microbatches=8).problem
    assert {task_style(dual, b, 0, "d0").chunk_name for b in ("F0.down", "F3.up")} == {"down pipeline", "up pipeline"}
    assert task_style(zbv, "F0", 1).colour != task_style(zbv, "F0", 2).colour
    problem, _ = _jobshop()
    jobs = {task_style(problem, f"j{j}.o0", 0).colour for j in range(3)}
    assert len(jobs) == 3 and task_style(problem, "j1.o0", 0).colour == task_style(problem, "j1.o2", 0).colour


def _texts(figure):
    return [(t.get_text(), t.get_position()[0]) for t in figure.axes[0].texts]


@pytest.mark.parametrize("width", [None, 8.0, 4.0])
def test_picture_labels_are_whole_or_absent(width):
    require("matplotlib")
    from schedsearch.export.plot import _pyplot, chart_boxes, plot_schedule

    rep = reproduce("1f1b", devices=4, microbatches=16)
    figure = plot_schedule(rep.problem, rep.schedule, width=width)
    try:
        allowed = {(x, (b.start + b.end) / 2) for b in chart_boxes(rep.problem, rep.schedule) for x in b.labels}
        texts = _texts(figure)
        assert all(t in allowed for t in texts), [t for t in texts if t not in allowed][:5]
        if width is None:
            # a backward (2 units) has room for a 5-character label, a forward (1 unit) for its micro-batch
            assert {"B3·m9", "m12"} <= {text for text, _ in texts}
    finally:
        _pyplot().close(figure)


def test_jobshop_picture_has_distinct_labels_colours_and_a_legend():
    require("matplotlib")
    from schedsearch.export.plot import _pyplot, plot_schedule

    problem, schedule = _jobshop()
    figure = plot_schedule(problem, schedule)
    try:
        texts = [t for t, _ in _texts(figure)]
        assert len(texts) == len(set(texts)) == len(schedule.tasks)  # before: nine boxes all reading "0"
        colours = {p.get_facecolor() for p in figure.axes[0].patches}
        assert len(colours) == 3  # one per job
        legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
        assert legend == ["colour: job", "j0", "j1", "j2"]
    finally:
        _pyplot().close(figure)


def test_pipeline_picture_legend_names_kinds_microbatches_and_chunks():
    require("matplotlib")
    from schedsearch.export.plot import _pyplot, plot_schedule

    rep = reproduce("dualpipev", devices=4, microbatches=10)
    figure = plot_schedule(rep.problem, rep.schedule)
    try:
        legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
        assert {"F", "B (hatched //)", "I (hatched \\\\)", "W (hatched xx)", "colour: micro-batch", "m0"} <= set(legend)
        assert "shade: chunk 1" in legend
        hatches = {p.get_hatch() for p in figure.axes[0].patches}
        assert {None, "//", "\\\\", "xx"} <= hatches
    finally:
        _pyplot().close(figure)


def test_folded_channels_draw_every_transfer_in_one_row():
    require("matplotlib")
    import schedsearch
    from schedsearch.export.plot import _pyplot, plot_schedule

    pipeline = schedsearch.Pipeline(num_ranks=4, num_microbatches=4, families=["1f1b"], p2p={"time_ms": 0.5},
                                    stages=[{"forward_ms": 1.0, "backward_ms": 2.0}] * 4)
    result = schedsearch.plan(pipeline, time_limit_s=10, parallel=1)
    devices = list(result.problem.cluster.device_names)
    channels = sorted({tr.channel for tr in result.schedule.transfers if tr.end > tr.start})
    assert len(channels) >= 3
    rows, patches = {}, {}
    for fold in (False, True):
        figure = plot_schedule(result.problem, result.schedule, fold_channels=fold)
        try:
            rows[fold] = [t.get_text() for t in figure.axes[0].get_yticklabels()]
            patches[fold] = sorted((p.get_x(), p.get_width()) for p in figure.axes[0].patches)
        finally:
            _pyplot().close(figure)
    ranks = [f"rank{i}" for i in range(len(devices))]  # torch's rank: the device's index in the cluster
    links = []
    for c in channels:
        a, b = next(ch.endpoints for ch in result.problem.cluster.channels if ch.name == c)
        links.append(f"link rank{devices.index(a)}-rank{devices.index(b)}")
    assert rows[False] == ranks + links
    assert rows[True] == ranks + [f"transfers ({len(channels)} links)"]
    assert patches[True] == patches[False]  # the same boxes, every transfer still drawn


def _row_identity(problem, schedule):
    """Per device row: (kind, chunk shade, fill, hatch) of each task box -> the micro-batches drawn that way."""
    from schedsearch.export.plot import chart_boxes

    seen: dict[tuple, set[int]] = {}
    for box in chart_boxes(problem, schedule):
        if box.style is not None:
            key = (box.row, box.style.kind, box.fill, box.style.hatch)
            seen.setdefault(key, set()).update(m for _, m in box.members)
    return seen


@pytest.mark.parametrize("family", ["1f1b", "zb-v"])
def test_microbatches_beyond_the_palette_are_told_apart_by_colour_and_hatch(family):
    """8 ranks x 32 micro-batches: within a rank's row, no two micro-batches of one kind share colour and hatch."""
    require("matplotlib")
    from schedsearch.export.plot import _pyplot, plot_schedule

    rep = reproduce(family, devices=8, microbatches=32)
    clashes = {k: v for k, v in _row_identity(rep.problem, rep.schedule).items() if len(v) > 1}
    assert not clashes, list(clashes.items())[:3]
    # the figure draws what the boxes say: one patch per box, with its fill and hatch
    figure = plot_schedule(rep.problem, rep.schedule, show_labels=False)
    try:
        hatches = {p.get_hatch() or "" for p in figure.axes[0].patches}
        assert {"", "..", "\\\\", "\\\\.."} <= hatches if family == "zb-v" else {"", "..", "//", "//.."} <= hatches
        legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
        assert {"no mark: m0-m19", "dots (..): m20-m39", "colour: micro-batch mod 20"} <= set(legend)
    finally:
        _pyplot().close(figure)


def test_colour_and_mark_pairs_stay_distinct_up_to_160_microbatches():
    """Independent of any schedule: the (colour, hatch) of a kind is one-to-one over m0..m159 and repeats at m160."""
    from schedsearch.placements import vshape

    problem = vshape(2, 161)
    for block in ("F0", "B1"):
        pairs = [(task_style(problem, block, m).colour, task_style(problem, block, m).hatch) for m in range(161)]
        assert len(set(pairs[:160])) == 160
        assert pairs[160] == pairs[0]


def test_an_8_rank_32_microbatch_chart_names_the_microbatch_in_every_box():
    """The default width leaves every box of an 8x32 ZB-V plan room for its micro-batch, across or upright."""
    require("matplotlib")
    from schedsearch.export.plot import _pyplot, chart_boxes, plot_schedule

    rep = reproduce("zb-v", devices=8, microbatches=32)
    figure = plot_schedule(rep.problem, rep.schedule)
    try:
        boxes = [b for b in chart_boxes(rep.problem, rep.schedule) if b.style is not None]
        at = {}
        for b in boxes:
            at.setdefault(((b.start + b.end) / 2, b.row), b)
        texts = figure.axes[0].texts
        rows = [t.get_text() for t in figure.axes[0].get_yticklabels()]
        assert rows == [f"rank{i}" for i in range(8)]
        assert len(texts) == len(boxes)
        for t in texts:
            x, y = t.get_position()
            box = at[(x, rep.problem.cluster.device_names[round(y)])]
            microbatch = box.members[0][1]
            assert re.search(rf"(^|·)m{microbatch}$", t.get_text()), (t.get_text(), box)
        assert {t.get_rotation() for t in texts} == {90.0}  # too narrow across: every label upright
        assert figure.get_size_inches()[0] <= 48
    finally:
        _pyplot().close(figure)
