"""Hypothesis strategies: scheduling problems that are valid by construction.

:func:`problems` draws small :class:`~schedsearch.problem.Problem`\\ s with a
switch per feature of the model, so a test can cover every feature and every
intersection of features, or only the ones a scheduler under test supports.

What it generates
-----------------
* devices ``d0 .. d{k-1}``; blocks ``b0 .. b{n-1}`` whose edges run only from a
  lower to a higher index (so every graph is acyclic);
* options: one device, or (``multi_device``) two devices in either order
  (the first is the lead device); with ``flexible``, a second option on
  other devices, or on the same devices with another duration;
* memory deltas in ``-2..2`` and workspace in ``0..1``, initial memory, and
  capacities that leave room for every block on at least one option (memory
  may still make a problem infeasible: that is a legitimate outcome);
* transfers on channels: every device pair an edge may need has a channel
  serving it (undirected, or directed where only one direction is needed),
  with ``parallel`` a second, slower channel beside some of them;
* releases, fixed orders (which may contradict the edges: infeasible
  problems are part of the space), duration overrides, overlapped groups of
  two or three fixed blocks on one device tuple (``same_microbatch`` sets
  included) and both objectives.

What it never generates: cycles in the graph, an edge whose transfer has no
channel, a block that fits on none of its devices, more than ``max_tasks``
task instances. Every drawn problem passes the problem model's own checks.

The strategies shrink towards fewer devices, blocks, micro-batches and
features, and towards unit durations.
"""

from __future__ import annotations

from typing import Any

from schedsearch.problem import (
    Block,
    Channel,
    Cluster,
    Device,
    Edge,
    Graph,
    Option,
    Overlap,
    Problem,
    Release,
)

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the installation
    from schedsearch.errors import MissingDependencyError

    raise MissingDependencyError(
        "schedsearch.testing needs hypothesis: pip install 'schedsearch[testing]'"
    ) from exc

__all__ = ["problems", "ALL_FEATURES"]

#: Every switch of :func:`problems`.
ALL_FEATURES = (
    "flexible",
    "multi_device",
    "memory",
    "transfers",
    "parallel",
    "directed",
    "releases",
    "fixed_orders",
    "overrides",
    "overlaps",
    "max_span",
)


def _draw_options(draw: Any, names: list[str], flexible: bool, multi_device: bool, max_duration: int) -> list[Option]:
    def devices() -> tuple[str, ...]:
        if multi_device and len(names) > 1 and draw(st.integers(0, 3)) == 0:
            return tuple(draw(st.permutations(draw(st.lists(st.sampled_from(names), min_size=2, max_size=2,
                                                              unique=True)))))
        return (draw(st.sampled_from(names)),)

    first = devices()
    options = [Option(devices=first, duration=draw(st.integers(1, max_duration)))]
    if flexible and draw(st.booleans()):
        kind = draw(st.integers(0, 2))
        if kind == 0:  # the same devices, another duration
            other = first
        elif kind == 1 and len(first) == 2:  # the same devices led by the other one
            other = (first[1], first[0])
        else:
            other = devices()
        duration = draw(st.integers(1, max_duration))
        if Option(devices=other, duration=duration) not in options:
            options.append(Option(devices=other, duration=duration))
    return options


@st.composite
def problems(
    draw: Any,
    *,
    max_devices: int = 3,
    max_blocks: int = 4,
    max_microbatches: int = 3,
    max_tasks: int = 6,
    max_duration: int = 3,
    flexible: bool = True,
    multi_device: bool = True,
    memory: bool = True,
    transfers: bool = True,
    parallel: bool = True,
    directed: bool = True,
    releases: bool = True,
    fixed_orders: bool = True,
    overrides: bool = True,
    overlaps: bool = True,
    max_span: bool = True,
) -> Problem:
    """A small valid problem (module docstring); each switch turns a feature off.

    ``max_tasks`` bounds blocks x micro-batches, so the brute-force oracle
    (:func:`schedsearch.testing.oracle.exact_optimum`) can solve every draw.
    """
    num_devices = draw(st.integers(1, max_devices))
    names = [f"d{i}" for i in range(num_devices)]
    num_blocks = draw(st.integers(1, min(max_blocks, max_tasks)))
    num_mb = draw(st.integers(1, max(1, min(max_microbatches, max_tasks // num_blocks))))
    blocks = []
    for i in range(num_blocks):
        options = _draw_options(draw, names, flexible, multi_device, max_duration)
        mem = draw(st.integers(-2, 2)) if memory else 0
        ws = draw(st.integers(0, 1)) if memory else 0
        blocks.append(Block(name=f"b{i}", kind=draw(st.sampled_from("FBIW")), options=options, memory=mem,
                            workspace=ws))
    edges = []
    for j in range(num_blocks):
        for i in range(j):
            if draw(st.integers(0, 2)) == 0:
                size = draw(st.integers(0, 2)) if transfers else 0
                edges.append(Edge(src=f"b{i}", dst=f"b{j}", size=size))
    channels = _channels(draw, blocks, edges, parallel=parallel, directed=directed)

    initial: dict[str, int] = {}
    devices = []
    for name in names:
        init = draw(st.integers(0, 1)) if memory else 0
        if init:
            initial[name] = init
        need = max((max(b.memory, 0) + b.workspace for b in blocks if name in b.devices), default=0)
        cap = None
        if memory and draw(st.booleans()):
            cap = init + need + draw(st.integers(0, 3))
        devices.append(Device(name=name, memory=cap))

    tasks = [(b.name, m) for m in range(num_mb) for b in blocks]
    release_list = []
    if releases and draw(st.integers(0, 2)) == 0:
        for key in draw(st.lists(st.sampled_from(tasks), max_size=2, unique=True)):
            release_list.append(Release(block=key[0], microbatch=key[1], time=draw(st.integers(1, 4))))
    orders = []
    if fixed_orders and len(tasks) > 1 and draw(st.integers(0, 2)) == 0:
        orders.append(tuple(draw(st.lists(st.sampled_from(tasks), min_size=2, max_size=3, unique=True))))
    override_list = []
    if overrides and draw(st.integers(0, 2)) == 0:
        by_name = {b.name: b for b in blocks}
        for key in draw(st.lists(st.sampled_from(tasks), max_size=2, unique=True)):
            n_opt = len(by_name[key[0]].options)
            override_list.append((key[0], key[1], tuple(draw(st.integers(1, max_duration + 2)) for _ in range(n_opt))))
    overlap_list = _overlaps(draw, blocks) if overlaps else []
    objective = draw(st.sampled_from(["makespan", "max_span"])) if max_span else "makespan"
    return Problem(
        graph=Graph(blocks=blocks, edges=edges),
        num_microbatches=num_mb,
        cluster=Cluster(devices=devices, channels=channels),
        initial_memory=initial,
        releases=release_list,
        fixed_orders=orders,
        duration_overrides=override_list,
        overlaps=overlap_list,
        objective=objective,
    )


def _channels(draw: Any, blocks: list[Block], edges: list[Edge], *, parallel: bool, directed: bool) -> list[Channel]:
    """A channel for every (lead, lead) pair a transfer may need."""
    by_name = {b.name: b for b in blocks}
    needed: set[tuple[str, str]] = set()
    for e in edges:
        if e.size <= 0:
            continue
        for oa in by_name[e.src].options:
            for ob in by_name[e.dst].options:
                if not set(oa.devices) & set(ob.devices):
                    needed.add((oa.devices[0], ob.devices[0]))
    channels: list[Channel] = []
    done: set[tuple[str, str]] = set()
    for a, b in sorted(needed):
        if (a, b) in done:
            continue
        one_way = directed and (b, a) not in needed and draw(st.booleans())
        name = f"c{a}{b}"
        channels.append(Channel(name=name, endpoints=(a, b), time_per_unit=draw(st.integers(0, 2)),
                                latency=draw(st.integers(0, 2)), directed=one_way))
        done.add((a, b))
        if not one_way:
            done.add((b, a))
        if parallel and draw(st.integers(0, 2)) == 0:
            channels.append(Channel(name=f"{name}x", endpoints=(a, b), time_per_unit=draw(st.integers(1, 3)),
                                    latency=draw(st.integers(0, 2)), directed=one_way))
    return channels


def _overlaps(draw: Any, blocks: list[Block]) -> list[Overlap]:
    """One or two overlaps of fixed blocks that share their device tuple."""
    fixed: dict[tuple[str, ...], list[Block]] = {}
    for b in blocks:
        if b.is_fixed:
            fixed.setdefault(b.options[0].devices, []).append(b)
    pools = [group for group in fixed.values() if len(group) >= 2]
    if not pools or draw(st.integers(0, 2)) != 0:
        return []
    out: list[Overlap] = []
    for _ in range(draw(st.integers(1, 2))):
        pool = draw(st.sampled_from(pools))
        members = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=min(3, len(pool)),
                                unique_by=lambda b: b.name))
        names = [b.name for b in members]
        if any(set(o.blocks) == set(names) for o in out):
            continue
        durations = [b.options[0].duration for b in members]
        tied: tuple[tuple[str, ...], ...] = ()
        if draw(st.integers(0, 2)) == 0:
            tied = (tuple(names[:2]),)
        out.append(Overlap(blocks=names, duration=draw(st.integers(max(durations), sum(durations) + 1)),
                           name=f"g{len(out)}", same_microbatch=tied))
    return out
