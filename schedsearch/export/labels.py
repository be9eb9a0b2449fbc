"""How exports name and colour a task: one naming rule for stage and micro-batch.

**The naming rule.** A block's name carries its stage (``F3`` is stage 3's
forward, as in the problem JSON and in messages); a micro-batch is always
written with an ``m`` (``m12``). A task instance is its block's name, a
middle dot, then its micro-batch: ``F3·m12`` is stage 3's forward of
micro-batch 12 (``F3.down·m2`` for DualPipe's down pipeline). Pictures,
Chrome traces and the HTML report use that label; ASCII timelines write it
without the dot (``F3m12`` with ``labels="stage"``, ``Fm12`` by default:
the row already says which device). A problem of one micro-batch whose
blocks have no stage (a job shop, an operator graph) names a task by its
block alone (``j0.o1``: job 0, operation 1). PyTorch's CSV keeps PyTorch's
own action names (``3F12``: stage 3, micro-batch 12).

**Colours.** Pipeline tasks are coloured by micro-batch; job-shop and
operator-graph tasks by job (the part of the block's name before the first
``.``, or the whole name). Pictures hatch by kind (``F`` plain, ``B``
``//``, ``I`` ``\\\\``, ``W`` ``xx``) and shade by chunk: the blocks of
one device are numbered by (direction, stage) — ZB-V's two chunks,
interleaved chunks, DualPipe's down and up pipelines — and every chunk
after the first is drawn lighter.

**Beyond the palette.** The palette holds 20 colours; micro-batch ``m``
takes colour ``m % 20`` and, from ``m20`` on, a mark over its kind's hatch
for its round of the palette (``m // 20``): dots for ``m20``-``m39``, rings
for ``m40``-``m59``, then dashes, bars, crosses, stars and large rings
(:data:`CYCLE_MARKS`). Up to 160 micro-batches no two of one kind and chunk
share both colour and hatch.

**Rows.** A pipeline problem's device ``i`` is ``rank{i}``, the rank that
runs it in torch's runtime (its index in the cluster): ``rank0``,
``rank1``... A device named otherwise than ``d{i}`` keeps its name beside
the rank (``rank0 (gpu-a)``). A job shop's or an operator graph's devices
keep their names (machines ``m0``...).
"""

from __future__ import annotations

import re
import attrs

from schedsearch.problem import Problem

__all__ = ["TaskStyle", "kind_and_stage", "task_label", "task_style", "PALETTE", "KIND_HATCHES", "CYCLE_MARKS",
           "shade", "text_colour", "device_label", "device_labels", "channel_label", "cycle_legend"]

#: Colours cycled over micro-batches (or jobs): well apart; labels on them are written in :func:`text_colour`.
PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22", "#393b79", "#ad494a", "#637939", "#7b4173", "#843c39", "#3182bd",
    "#e6550d", "#31a354", "#756bb1", "#636363",
)

#: Hatch of each block kind (matplotlib hatch strings); other kinds get ``".."``.
KIND_HATCHES = {"F": "", "B": "//", "I": "\\\\", "W": "xx"}
OTHER_HATCH = ".."

#: Mark added to the kind's hatch for each round of :data:`PALETTE` (``m // len(PALETTE)``), with its name.
CYCLE_MARKS = (("", ""), ("..", "dots"), ("oo", "rings"), ("--", "dashes"), ("||", "bars"), ("++", "crosses"),
               ("**", "stars"), ("OO", "large rings"))

_JOB_OP = re.compile(r"^(?P<job>[^.]+)\.(?P<op>.+)$")


@attrs.frozen(kw_only=True)
class TaskStyle:
    """How one task is drawn: its labels (longest first), colour group, kind and chunk.

    ``labels`` are the texts a picture may write in the task's box, longest
    first; a picture writes the first that fits and nothing when none does
    (never a cut label). ``group`` is what the colour stands for
    (``"m12"``, ``"j3"``), ``colour_index`` its index in :data:`PALETTE`
    (cycled), ``chunk`` the chunk or direction on its device (0 = first),
    ``chunk_name`` how a legend names it and ``by_job`` whether the colour
    is a job's (a job shop) rather than a micro-batch's. ``hatch`` is the
    kind's hatch (``kind_hatch``) followed by the ``mark`` of the palette's
    round the colour is from (``cycle``).

    Examples
    --------
    >>> from schedsearch.export.labels import task_style
    >>> from schedsearch.placements import vshape
    >>> style = task_style(vshape(2, 16), "F1", 12)
    >>> style.labels, style.group, style.kind, style.stage
    (('F1·m12', 'm12'), 'm12', 'F', 1)
    """

    labels: tuple[str, ...]
    group: str
    colour_index: int
    kind: str
    stage: int | None
    chunk: int = 0
    chunk_name: str = ""
    by_job: bool = False

    @property
    def label(self) -> str:
        """The full label (see the naming rule in the module docstring)."""
        return self.labels[0]

    @property
    def colour(self) -> str:
        return PALETTE[self.colour_index % len(PALETTE)]

    @property
    def kind_hatch(self) -> str:
        """The kind's hatch; none for a job's task (the colour and label say it all)."""
        return "" if self.by_job else KIND_HATCHES.get(self.kind, OTHER_HATCH)

    @property
    def cycle(self) -> int:
        """The round of :data:`PALETTE` the colour is from (micro-batch ``m``: ``m // 20``; a job's: 0)."""
        return 0 if self.by_job else self.colour_index // len(PALETTE)

    @property
    def mark(self) -> str:
        """The hatch marking the palette's round (:data:`CYCLE_MARKS`, cycled): ``""`` for ``m0``-``m19``."""
        return CYCLE_MARKS[self.cycle % len(CYCLE_MARKS)][0]

    @property
    def hatch(self) -> str:
        """The whole hatch of the box: its kind's, then its palette round's mark (``"//.."``: B of ``m20``-``m39``).

        >>> from schedsearch.export.labels import task_style
        >>> from schedsearch.placements import vshape
        >>> [task_style(vshape(2, 48), "B0", m).hatch for m in (3, 23, 43)]
        ['//', '//..', '//oo']
        """
        return self.kind_hatch + self.mark


def _is_job_problem(problem: Problem | None) -> bool:
    """One micro-batch and no staged block: a job shop or an operator graph."""
    if problem is None:
        return False
    return problem.num_microbatches == 1 and all(b.stage is None for b in problem.graph.blocks)


def kind_and_stage(problem: Problem | None, block: str, default_kind: str) -> tuple[str, int | None]:
    """A block's kind and stage from the problem; ``(default_kind, None)`` without a problem or for a block it lacks.

    >>> from schedsearch.placements import vshape
    >>> kind_and_stage(vshape(2, 1), "B1", "?"), kind_and_stage(None, "B1", "?")
    (('B', 1), ('?', None))
    """
    if problem is not None:
        try:
            b = problem.graph.block(block)
        except KeyError:
            return default_kind, None
        return b.kind, b.stage
    return default_kind, None


def task_label(problem: Problem | None, block: str, microbatch: int, *, separator: str = "·") -> str:
    """The label of a task by the naming rule: ``F3·m12`` (stage 3's forward, micro-batch 12).

    A job shop's or an operator graph's task (one micro-batch, blocks
    without a stage) is its block's name.

    Examples
    --------
    >>> from schedsearch.export.labels import task_label
    >>> from schedsearch.loaders import jobshop_problem
    >>> from schedsearch.placements import vshape
    >>> task_label(vshape(4, 16), "F3", 12), task_label(vshape(4, 16), "B0", 7, separator="")
    ('F3·m12', 'B0m7')
    >>> task_label(jobshop_problem([[(0, 3), (1, 2)]], 2).problem, "j0.o1", 0)
    'j0.o1'
    """
    if _is_job_problem(problem):
        return block
    return f"{block}{separator}m{microbatch}"


def _chunks(problem: Problem) -> dict[tuple[str, str], tuple[int, str]]:
    """(block, device) -> (chunk index on that device, its legend name)."""
    per_device: dict[str, list[tuple[str, int, str]]] = {}
    for b in problem.graph.blocks:
        if b.stage is None:
            continue
        direction = b.name.split(".", 1)[1] if "." in b.name else ""
        for option in b.options:
            for d in option.devices:
                per_device.setdefault(d, []).append((direction, b.stage, b.name))
    directions: list[str] = []
    for b in problem.graph.blocks:
        direction = b.name.split(".", 1)[1] if "." in b.name else ""
        if b.stage is not None and direction not in directions:
            directions.append(direction)
    out: dict[tuple[str, str], tuple[int, str]] = {}
    for d, entries in per_device.items():
        lanes = sorted({(directions.index(di), st) for di, st, _ in entries})
        for di, st, name in entries:
            k = lanes.index((directions.index(di), st))
            label = (f"{di} pipeline" if di else f"chunk {k}") if len(lanes) > 1 else ""
            out[(name, d)] = (k, label)
    return out


_CHUNK_CACHE: dict[int, tuple[Problem, dict[tuple[str, str], tuple[int, str]]]] = {}


def task_style(problem: Problem | None, block: str, microbatch: int, device: str | None = None) -> TaskStyle:
    """How the task ``(block, microbatch)`` is labelled and coloured (on ``device``: its chunk there).

    Examples
    --------
    ZB-V holds two chunks per device; a job shop's tasks are coloured by job:

    >>> from schedsearch.export.labels import task_style
    >>> from schedsearch.loaders import jobshop_problem
    >>> from schedsearch.handcrafted import reproduce
    >>> problem = reproduce("zb-v", devices=2, microbatches=4).problem
    >>> [(task_style(problem, b, 0, "d0").chunk, task_style(problem, b, 0, "d0").chunk_name) for b in ("F0", "F3")]
    [(0, 'chunk 0'), (1, 'chunk 1')]
    >>> style = task_style(jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem, "j1.o0", 0)
    >>> style.labels, style.group, style.colour_index
    (('j1.o0', 'o0'), 'j1', 1)
    """
    kind, stage = block[:1], None
    if problem is not None:
        try:
            b = problem.graph.block(block)
            kind, stage = b.kind, b.stage
        except KeyError:
            pass
    if _is_job_problem(problem):
        assert problem is not None
        m = _JOB_OP.match(block)
        job = m.group("job") if m else block
        names = problem.graph.block_names
        jobs: list[str] = []
        for n in names:
            jm = _JOB_OP.match(n)
            j = jm.group("job") if jm else n
            if j not in jobs:
                jobs.append(j)
        labels = (block, m.group("op")) if m else (block,)
        return TaskStyle(labels=labels, group=job, colour_index=jobs.index(job) if job in jobs else 0,
                         kind=kind, stage=stage, by_job=True)
    chunk, chunk_name = 0, ""
    if problem is not None and device is not None:
        cached = _CHUNK_CACHE.get(id(problem))
        if cached is None or cached[0] is not problem:
            cached = (problem, _chunks(problem))
            _CHUNK_CACHE.clear()
            _CHUNK_CACHE[id(problem)] = cached
        chunk, chunk_name = cached[1].get((block, device), (0, ""))
    return TaskStyle(labels=(task_label(problem, block, microbatch), f"m{microbatch}"), group=f"m{microbatch}",
                     colour_index=microbatch, kind=kind, stage=stage, chunk=chunk, chunk_name=chunk_name)


def text_colour(fill: str) -> str:
    """The colour of a label written on ``fill`` (``#rrggbb``): white on a dark fill, near-black on a light one.

    A later chunk's lighter shade of a light palette colour takes dark text;
    the palette's own colours take white.

    >>> from schedsearch.export.labels import text_colour, shade
    >>> text_colour("#1f77b4"), text_colour(shade("#e377c2", 1))
    ('#ffffff', '#111111')
    """
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    luminance = 0.299 * r + 0.587 * g + 0.114 * b
    return "#111111" if luminance > 0.6 else "#ffffff"


def cycle_legend(cycle: int) -> str:
    """How a legend names the mark of palette round ``cycle``: ``"dots (..): m20-m39"``.

    >>> from schedsearch.export.labels import cycle_legend
    >>> cycle_legend(0), cycle_legend(1)
    ('no mark: m0-m19', 'dots (..): m20-m39')
    """
    mark, name = CYCLE_MARKS[cycle % len(CYCLE_MARKS)]
    first = cycle * len(PALETTE)
    span = f"m{first}-m{first + len(PALETTE) - 1}"
    return f"no mark: {span}" if not mark else f"{name} ({mark}): {span}"


def _is_pipeline(problem: Problem | None) -> bool:
    return problem is not None and not _is_job_problem(problem) and any(
        b.stage is not None for b in problem.graph.blocks)


def device_labels(problem: Problem | None, devices: tuple[str, ...] | list[str] | None = None) -> dict[str, str]:
    """How a face names each device: ``rank{i}`` in a pipeline problem, else the device's own name.

    ``devices`` defaults to the problem's cluster; a device the problem's
    cluster lacks keeps its name.

    Examples
    --------
    >>> from schedsearch.export.labels import device_labels
    >>> from schedsearch.loaders import jobshop_problem
    >>> from schedsearch.placements import vshape
    >>> device_labels(vshape(2, 4))
    {'d0': 'rank0', 'd1': 'rank1'}
    >>> device_labels(jobshop_problem([[(0, 3), (1, 2)]], 2).problem)
    {'m0': 'm0', 'm1': 'm1'}
    """
    names = list(problem.cluster.device_names) if problem is not None else []
    if devices is None:
        devices = names
    if not _is_pipeline(problem):
        return {d: d for d in devices}
    out = {}
    for d in devices:
        if d not in names:
            out[d] = d
            continue
        i = names.index(d)
        out[d] = f"rank{i}" if d in (f"d{i}", f"rank{i}") else f"rank{i} ({d})"
    return out


def device_label(problem: Problem | None, device: str) -> str:
    """How a face names ``device`` (see :func:`device_labels`): ``rank3`` for a pipeline's ``d3``."""
    return device_labels(problem, [device])[device]


def channel_label(problem: Problem | None, channel: str) -> str:
    """How a face names a channel's row: ``link rank0-rank1`` in a pipeline problem, else ``channel NAME``.

    >>> import attrs
    >>> from schedsearch import Channel
    >>> from schedsearch.export.labels import channel_label
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> linked = attrs.evolve(problem, cluster=attrs.evolve(problem.cluster,
    ...                       channels=[Channel(name="d0-d1", endpoints=("d0", "d1"))]))
    >>> channel_label(linked, "d0-d1"), channel_label(None, "d0-d1")
    ('link rank0-rank1', 'channel d0-d1')
    """
    if _is_pipeline(problem):
        assert problem is not None
        found = next((c for c in problem.cluster.channels if c.name == channel), None)
        if found is not None:
            a, b = (device_label(problem, d) for d in found.endpoints)
            return f"link {a}{'->' if found.directed else '-'}{b}"
    return f"channel {channel}"


def shade(colour: str, chunk: int) -> str:
    """``colour`` (``#rrggbb``) for chunk ``chunk``: chunk 0 as it is, later chunks mixed with white.

    Examples
    --------
    >>> from schedsearch.export.labels import shade
    >>> shade("#000000", 0), shade("#000000", 1)
    ('#000000', '#8c8c8c')
    """
    if chunk <= 0:
        return colour
    mix = min(0.75, 0.55 + 0.1 * (chunk - 1))
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * mix):02x}" for c in rgb)

