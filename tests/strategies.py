"""Hypothesis strategies: valid-by-construction scheduling problems.

Graphs are acyclic by construction (edges only from a lower to a higher block
index). Every pair of devices gets at least one undirected channel, so any
placement of a transfer edge has a channel. Capacities leave room for every
block on at least one of its options; the memory may still make a problem
infeasible, which is a legitimate outcome.
"""

from __future__ import annotations

from hypothesis import strategies as st

from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem


@st.composite
def problems(
    draw,
    max_devices: int = 4,
    max_blocks: int = 4,
    max_microbatches: int = 2,
    max_tasks: int = 8,
    flexible: bool = True,
    memory: bool = True,
    transfers: bool = True,
    multi_device: bool = True,
) -> Problem:
    num_devices = draw(st.integers(1, max_devices))
    names = [f"d{i}" for i in range(num_devices)]
    num_blocks = draw(st.integers(1, max_blocks))
    num_mb = draw(st.integers(1, max(1, min(max_microbatches, max_tasks // num_blocks))))
    blocks = []
    for i in range(num_blocks):
        n_opt = draw(st.integers(1, 2)) if flexible and num_devices > 1 else 1
        options = []
        seen = set()
        for _ in range(n_opt):
            width = 2 if multi_device and num_devices > 1 and draw(st.integers(0, 5)) == 0 else 1
            devs = tuple(sorted(draw(st.lists(st.sampled_from(names), min_size=width, max_size=width, unique=True))))
            if devs in seen:
                continue
            seen.add(devs)
            options.append(Option(devices=devs, duration=draw(st.integers(1, 4))))
        mem = draw(st.integers(-2, 2)) if memory else 0
        ws = draw(st.integers(0, 1)) if memory else 0
        blocks.append(Block(name=f"b{i}", kind=draw(st.sampled_from("FBIW")), options=options, memory=mem, workspace=ws))
    edges = []
    for j in range(num_blocks):
        for i in range(j):
            if draw(st.integers(0, 2)) == 0:
                size = draw(st.integers(0, 2)) if transfers else 0
                edges.append(Edge(src=f"b{i}", dst=f"b{j}", size=size))
    channels = []
    if transfers:
        for a in range(num_devices):
            for b in range(a + 1, num_devices):
                channels.append(
                    Channel(name=f"c{a}{b}", endpoints=(names[a], names[b]), time_per_unit=1, latency=draw(st.integers(0, 1)))
                )
                if draw(st.integers(0, 4)) == 0:
                    channels.append(Channel(name=f"c{a}{b}x", endpoints=(names[a], names[b]), time_per_unit=2))
    initial = {}
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
    return Problem(
        graph=Graph(blocks=blocks, edges=edges),
        num_microbatches=num_mb,
        cluster=Cluster(devices=devices, channels=channels),
        initial_memory=initial,
    )



@st.composite
def overlap_problems(draw, max_microbatches: int = 2) -> Problem:
    """Fixed-placement problems on 1-2 devices with one or two declared
    overlapped groups between blocks of one device (group durations from
    the longest member to one more than their sum)."""
    from schedsearch.problem import Overlap

    num_devices = draw(st.integers(1, 2))
    names = [f"d{i}" for i in range(num_devices)]
    num_blocks = draw(st.integers(2, 4))
    blocks = []
    for i in range(num_blocks):
        dev = "d0" if i < 2 else draw(st.sampled_from(names))
        blocks.append(Block(name=f"b{i}", kind=draw(st.sampled_from("FBIW")),
                            options=[Option(devices=(dev,), duration=draw(st.integers(1, 3)))],
                            memory=draw(st.integers(-1, 1))))
    edges = [Edge(src=f"b{i}", dst=f"b{j}") for j in range(num_blocks) for i in range(j) if draw(st.integers(0, 2)) == 0]
    overlaps = []
    on_d0 = [b for b in blocks if b.options[0].devices == ("d0",)]
    for _ in range(draw(st.integers(1, 2))):
        pair = draw(st.lists(st.sampled_from(on_d0), min_size=2, max_size=2, unique_by=lambda b: b.name))
        if any(set(o.blocks) == {b.name for b in pair} for o in overlaps):
            continue
        durs = [b.options[0].duration for b in pair]
        overlaps.append(Overlap(blocks=[b.name for b in pair], duration=draw(st.integers(max(durs), sum(durs) + 1)),
                                name=f"g{len(overlaps)}"))
    capacity = draw(st.one_of(st.none(), st.integers(1, 3)))
    return Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=draw(st.integers(1, max_microbatches)),
                   cluster=Cluster(devices=[Device(name=n, memory=capacity) for n in names]), overlaps=overlaps)
