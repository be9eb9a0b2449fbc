"""Job-shop and flexible job-shop instances as Problems.

Formats
-------
Classic job shop (``n m``, then one line per job with ``m`` pairs
``machine duration``; machines numbered from 0)::

    2 2
    0 3 1 2
    1 4 0 1

Flexible job shop (``n m``, then one line per job: the number of
operations, and for each operation the number of eligible machines
followed by that many ``machine duration`` pairs; machines from 0)::

    2 2
    2 2 0 3 1 4 1 1 2
    1 1 0 5

Mapping onto the problem model
------------------------------
* one micro-batch (``num_microbatches = 1``);
* one block per operation, named ``j{job}.o{index}`` (both from 0), kind
  ``"op"``, with one :class:`~schedsearch.problem.Option` per eligible
  machine (one for the classic format);
* a size-0 edge from each operation to the next of its job (job order);
* devices ``m0 .. m{m-1}`` without a memory capacity, no channels.

An operation of duration 0 (``orb07`` has some) is left out and its job's
chain is bridged over it; this is exact, because a zero-length operation
neither occupies its machine nor delays its successor. A flexible operation
keeps only its machines with a positive duration; if it has none, it is left
out likewise. The loaders report how many operations they dropped in
:attr:`JobShopInstance.dropped`.

The instance indexes (``classical.json`` for job shop, ``instances.json``
for flexible job shop) are read by :func:`read_index`; their optima are
data, not verified facts.

This module imports no solver.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
import attrs

from schedsearch.errors import FormatError, InvalidProblemError
from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Problem

__all__ = [
    "JobShopInstance",
    "IndexEntry",
    "operation_name",
    "machine_name",
    "jobshop_problem",
    "flexible_jobshop_problem",
    "parse_jobshop",
    "parse_flexible_jobshop",
    "read_jobshop",
    "read_flexible_jobshop",
    "read_instance",
    "detect_format",
    "read_index",
    "jobs_of",
]

#: A flexible operation: its eligible ``(machine, duration)`` pairs.
FlexibleOperation = Sequence[tuple[int, int]]


def operation_name(job: int, index: int) -> str:
    """Block name of operation ``index`` of job ``job`` (both from 0)."""
    return f"j{job}.o{index}"


def machine_name(machine: int) -> str:
    """Device name of machine ``machine`` (from 0)."""
    return f"m{machine}"


@attrs.frozen(kw_only=True)
class JobShopInstance:
    """A loaded instance: the problem and what the loader saw.

    Attributes
    ----------
    problem:
        The Problem (one micro-batch, one block per kept operation).
    num_jobs, num_machines:
        From the file's first line.
    num_operations:
        Operations in the file (including dropped ones).
    dropped:
        Operations of duration 0 left out (see the module notes).
    """

    problem: Problem
    num_jobs: int
    num_machines: int
    num_operations: int
    dropped: int = 0


def _int_token(tokens: list[str], pos: int, what: str, source: str) -> int:
    if pos >= len(tokens):
        raise FormatError(f"{source}: file ends where {what} was expected (token {pos + 1})")
    text = tokens[pos]
    try:
        return int(text)
    except ValueError:
        raise FormatError(f"{source}: {what} must be an integer, got {text!r} (token {pos + 1})") from None


def _check_header(n: int, m: int, source: str) -> None:
    if n < 1:
        raise FormatError(f"{source}: number of jobs must be >= 1, got {n}")
    if m < 1:
        raise FormatError(f"{source}: number of machines must be >= 1, got {m}")


def flexible_jobshop_problem(
    jobs: Sequence[Sequence[FlexibleOperation]], num_machines: int, *, name: str = ""
) -> JobShopInstance:
    """Build a flexible job-shop Problem.

    Parameters
    ----------
    jobs:
        Per job, its operations in order; each operation is a sequence of
        eligible ``(machine, duration)`` pairs.
    num_machines:
        Machines ``0 .. num_machines - 1``.
    name:
        Problem name.

    Raises
    ------
    InvalidProblemError
        A machine out of range, a negative duration, a machine listed twice
        for one operation, or no operation at all.
    """
    if isinstance(num_machines, bool) or not isinstance(num_machines, int) or num_machines < 1:
        raise InvalidProblemError(f"job shop: 'num_machines' must be an integer >= 1, got {num_machines!r}")
    blocks: list[Block] = []
    edges: list[Edge] = []
    num_ops = dropped = 0
    for j, operations in enumerate(jobs):
        previous: str | None = None
        for k, eligible in enumerate(operations):
            num_ops += 1
            entity = f"job {j}, operation {k}"
            pairs = list(eligible)
            if not pairs:
                raise InvalidProblemError(f"{entity}: 'machines' must list at least one machine, got []")
            seen: set[int] = set()
            options: list[Option] = []
            for machine, duration in pairs:
                if isinstance(machine, bool) or not isinstance(machine, int) or not 0 <= machine < num_machines:
                    raise InvalidProblemError(f"{entity}: 'machine' must be in 0..{num_machines - 1}, got {machine!r}")
                if machine in seen:
                    raise InvalidProblemError(f"{entity}: 'machine' {machine} is listed twice")
                seen.add(machine)
                if isinstance(duration, bool) or not isinstance(duration, int) or duration < 0:
                    raise InvalidProblemError(f"{entity}: 'duration' must be an integer >= 0, got {duration!r}")
                if duration > 0:
                    options.append(Option(devices=(machine_name(machine),), duration=duration))
            if not options:
                dropped += 1
                continue
            block = operation_name(j, k)
            blocks.append(Block(name=block, kind="op", options=options))
            if previous is not None:
                edges.append(Edge(src=previous, dst=block))
            previous = block
    if not blocks:
        raise InvalidProblemError("job shop: 'jobs' must hold at least one operation of positive duration")
    cluster = Cluster(devices=[Device(name=machine_name(i)) for i in range(num_machines)])
    problem = Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=1, cluster=cluster, name=name)
    return JobShopInstance(
        problem=problem, num_jobs=len(jobs), num_machines=num_machines, num_operations=num_ops, dropped=dropped
    )


def jobshop_problem(
    jobs: Sequence[Sequence[tuple[int, int]]], num_machines: int, *, name: str = ""
) -> JobShopInstance:
    """Build a classic job-shop Problem: per job, its ``(machine, duration)`` operations in order."""
    return flexible_jobshop_problem([[(op,) for op in job] for job in jobs], num_machines, name=name)


def parse_jobshop(text: str, *, name: str = "", source: str = "job-shop text") -> JobShopInstance:
    """Parse the classic job-shop format (see the module notes)."""
    tokens = text.split()
    n = _int_token(tokens, 0, "number of jobs", source)
    m = _int_token(tokens, 1, "number of machines", source)
    _check_header(n, m, source)
    expected = 2 + 2 * n * m
    if len(tokens) < expected:
        raise FormatError(
            f"{source}: {n} jobs x {m} machines need {2 * n * m} numbers after the header, got {len(tokens) - 2}"
        )
    if len(tokens) > expected:
        raise FormatError(
            f"{source}: {n} jobs x {m} machines need {2 * n * m} numbers after the header, "
            f"got {len(tokens) - 2} (extra data after job {n - 1})"
        )
    jobs: list[list[tuple[int, int]]] = []
    pos = 2
    for j in range(n):
        job = []
        for k in range(m):
            machine = _int_token(tokens, pos, f"machine of job {j}, operation {k}", source)
            duration = _int_token(tokens, pos + 1, f"duration of job {j}, operation {k}", source)
            pos += 2
            job.append((machine, duration))
        jobs.append(job)
    try:
        return jobshop_problem(jobs, m, name=name)
    except InvalidProblemError as exc:
        raise FormatError(f"{source}: {exc}") from None


def parse_flexible_jobshop(text: str, *, name: str = "", source: str = "flexible job-shop text") -> JobShopInstance:
    """Parse the flexible job-shop format (see the module notes).

    The first line may carry a third number (the average number of machines
    per operation, written by some generators); it is ignored.
    """
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if not lines:
        raise FormatError(f"{source}: empty")
    header = lines[0]
    n = _int_token(header, 0, "number of jobs", source)
    m = _int_token(header, 1, "number of machines", source)
    _check_header(n, m, source)
    if len(lines) - 1 < n:
        raise FormatError(f"{source}: header announces {n} jobs, but only {len(lines) - 1} job lines follow")
    jobs: list[list[list[tuple[int, int]]]] = []
    for j in range(n):
        tokens = lines[j + 1]
        where = f"{source}, job {j} (line {j + 2})"
        num_ops = _int_token(tokens, 0, "number of operations", where)
        if num_ops < 1:
            raise FormatError(f"{where}: number of operations must be >= 1, got {num_ops}")
        pos = 1
        operations = []
        for k in range(num_ops):
            count = _int_token(tokens, pos, f"number of machines of operation {k}", where)
            if count < 1:
                raise FormatError(f"{where}: operation {k} must list at least one machine, got {count}")
            pos += 1
            pairs = []
            for _ in range(count):
                machine = _int_token(tokens, pos, f"machine of operation {k}", where)
                duration = _int_token(tokens, pos + 1, f"duration of operation {k}", where)
                pos += 2
                pairs.append((machine, duration))
            operations.append(pairs)
        if pos != len(tokens):
            raise FormatError(f"{where}: {len(tokens) - pos} extra number(s) after operation {num_ops - 1}")
        jobs.append(operations)
    extra = lines[n + 1 :]
    if extra:
        raise FormatError(f"{source}: {len(extra)} extra line(s) after job {n - 1}")
    try:
        return flexible_jobshop_problem(jobs, m, name=name)
    except InvalidProblemError as exc:
        raise FormatError(f"{source}: {exc}") from None


def _read_text(path: str | os.PathLike[str]) -> tuple[str, str]:
    p = Path(path)
    try:
        return p.read_text(), p.stem
    except OSError as exc:
        raise FormatError(f"cannot read instance file {str(p)!r}: {exc.strerror}") from None


def read_jobshop(path: str | os.PathLike[str], *, name: str | None = None) -> JobShopInstance:
    """Read a classic job-shop file; the problem is named after the file stem."""
    text, stem = _read_text(path)
    return parse_jobshop(text, name=stem if name is None else name, source=f"job-shop file {str(path)!r}")


def read_flexible_jobshop(path: str | os.PathLike[str], *, name: str | None = None) -> JobShopInstance:
    """Read a flexible job-shop file; the problem is named after the file stem."""
    text, stem = _read_text(path)
    return parse_flexible_jobshop(
        text, name=stem if name is None else name, source=f"flexible job-shop file {str(path)!r}"
    )


def detect_format(text: str, *, source: str = "instance text") -> str:
    """``"jsp"`` when ``text`` reads as a classic job shop, else ``"fjsp"`` when
    it reads as a flexible one (a classic file is tried first: its token
    count is exact, so a flexible file rarely passes for one)."""
    try:
        parse_jobshop(text, source=source)
        return "jsp"
    except FormatError:
        pass
    try:
        parse_flexible_jobshop(text, source=source)
        return "fjsp"
    except FormatError as exc:
        raise FormatError(f"{source}: neither a job-shop nor a flexible job-shop instance ({exc})") from None


def read_instance(path: str | os.PathLike[str], *, format: str = "auto", name: str | None = None) -> JobShopInstance:
    """Read a job-shop (``"jsp"``) or flexible job-shop (``"fjsp"``) file;
    ``"auto"`` tells them apart with :func:`detect_format`."""
    if format not in ("auto", "jsp", "fjsp"):
        raise ValueError(f"read_instance: 'format' must be 'auto', 'jsp' or 'fjsp', got {format!r}")
    text, stem = _read_text(path)
    source = f"instance file {str(path)!r}"
    if format == "auto":
        format = detect_format(text, source=source)
    parse = parse_jobshop if format == "jsp" else parse_flexible_jobshop
    return parse(text, name=stem if name is None else name, source=source)


@attrs.frozen(kw_only=True)
class IndexEntry:
    """One instance of an index file: optimum (or bounds) and file path."""

    name: str
    path: Path
    num_jobs: int
    num_machines: int
    optimum: int | None = None
    lower_bound: int | None = None
    upper_bound: int | None = None

    @property
    def best_known(self) -> int | None:
        """The optimum when known, else the best known upper bound."""
        return self.optimum if self.optimum is not None else self.upper_bound


def read_index(path: str | os.PathLike[str]) -> dict[str, IndexEntry]:
    """Read an instance index (a JSON list of ``{name, jobs, machines,
    optimum, bounds: {lower, upper}, path}``); paths are made absolute
    relative to the index's folder."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as exc:
        raise FormatError(f"cannot read index file {str(p)!r}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise FormatError(f"index file {str(p)!r}: not valid JSON ({exc})") from None
    if not isinstance(data, list):
        raise FormatError(f"index file {str(p)!r}: must hold a JSON list, got {type(data).__name__}")
    out: dict[str, IndexEntry] = {}
    for i, item in enumerate(data):
        if not isinstance(item, Mapping) or "name" not in item or "path" not in item:
            raise FormatError(f"index file {str(p)!r}: entry {i} must be an object with 'name' and 'path'")
        bounds = item.get("bounds") or {}
        out[item["name"]] = IndexEntry(
            name=item["name"],
            path=p.parent / item["path"],
            num_jobs=int(item.get("jobs", 0)),
            num_machines=int(item.get("machines", 0)),
            optimum=item.get("optimum"),
            lower_bound=bounds.get("lower", item.get("optimum")),
            upper_bound=bounds.get("upper", item.get("optimum")),
        )
    return out


def jobs_of(problem: Problem) -> dict[int, tuple[str, ...]]:
    """Operations of each job of a problem built by this module, in job order."""
    out: dict[int, list[tuple[int, str]]] = {}
    for b in problem.graph.blocks:
        job_text, _, op_text = b.name.partition(".")
        if not (job_text.startswith("j") and op_text.startswith("o")):
            raise InvalidProblemError(f"block {b.name!r}: 'name' is not a job-shop operation name 'j<job>.o<index>'")
        try:
            job, op = int(job_text[1:]), int(op_text[1:])
        except ValueError:
            raise InvalidProblemError(
                f"block {b.name!r}: 'name' is not a job-shop operation name 'j<job>.o<index>'"
            ) from None
        out.setdefault(job, []).append((op, b.name))
    return {j: tuple(n for _, n in sorted(ops)) for j, ops in sorted(out.items())}
