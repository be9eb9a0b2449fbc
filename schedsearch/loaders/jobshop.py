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
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
import attrs

from schedsearch._io import decode_text
from schedsearch._json import short_repr
from schedsearch.errors import FormatError, InvalidOptionsError, InvalidProblemError
from schedsearch.problem import MAX_INT, Block, Cluster, Device, Edge, Graph, Option, Problem

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
    "MAX_MACHINES",
]

#: Most machines an instance may declare. The largest public job-shop and
#: flexible job-shop benchmarks have at most a few hundred machines; the
#: limit turns a corrupt header (``10 100000000``) into an immediate error
#: instead of a cluster of a hundred million devices.
MAX_MACHINES = 10_000

#: A flexible operation: its eligible ``(machine, duration)`` pairs.
FlexibleOperation = Sequence[tuple[int, int]]


def operation_name(job: int, index: int) -> str:
    """Block name of operation ``index`` of job ``job`` (both from 0).

    Examples
    --------
    >>> from schedsearch.loaders import operation_name
    >>> operation_name(1, 0)
    'j1.o0'
    """
    return f"j{job}.o{index}"


def machine_name(machine: int) -> str:
    """Device name of machine ``machine`` (from 0).

    Examples
    --------
    >>> from schedsearch.loaders import machine_name
    >>> machine_name(2)
    'm2'
    """
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

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> instance = jobshop_problem([[(0, 3), (1, 0), (1, 2)]], 2)  # the zero-length operation is dropped
    >>> instance.num_operations, instance.dropped, instance.problem.graph.block_names
    (3, 1, ('j0.o0', 'j0.o2'))
    """

    problem: Problem
    num_jobs: int
    num_machines: int
    num_operations: int
    dropped: int = 0


def _int_token(tokens: list[str], pos: int, what: str, source: str, lines: list[int] | None = None) -> int:
    """Token ``pos`` as an int; ``lines`` (the line of each token) names the line in errors."""
    if pos >= len(tokens):
        raise FormatError(f"{source}: file ends where {what} was expected (token {pos + 1})")
    text = tokens[pos]
    where = f"line {lines[pos]}, token {pos + 1}" if lines is not None else f"token {pos + 1}"
    if not _INTEGER.fullmatch(text):
        raise FormatError(f"{source}: {what} must be an integer, got {text[:40]!r} ({where})")
    return int(text)


_INTEGER = re.compile(r"[+-]?[0-9]{1,30}")


def _tokens(text: str) -> tuple[list[str], list[int]]:
    """The whitespace-separated tokens of ``text`` and the line (from 1) of each."""
    tokens: list[str] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), 1):
        for token in line.split():
            tokens.append(token)
            lines.append(number)
    return tokens, lines


def _check_header(n: int, m: int, source: str) -> None:
    if n < 1:
        raise FormatError(f"{source}: number of jobs must be >= 1, got {n}")
    if m < 1:
        raise FormatError(f"{source}: number of machines must be >= 1, got {m}")
    if m > MAX_MACHINES:
        raise FormatError(
            f"{source}, line 1: number of machines must be <= {MAX_MACHINES} (MAX_MACHINES), got {m}"
        )


def _check_operation(where: str, j: int, k: int, machine: int, duration: int, m: int) -> None:
    """Machine and duration of one operation, before any object is built."""
    if not 0 <= machine < m:
        raise FormatError(f"{where}: job {j}, operation {k}: 'machine' must be in 0..{m - 1}, got {machine}")
    if not 0 <= duration <= MAX_INT:
        raise FormatError(
            f"{where}: job {j}, operation {k}: 'duration' must be an integer >= 0"
            + (f" and <= {MAX_INT} (MAX_INT = 2**40)" if duration > MAX_INT else "")
            + f", got {duration}"
        )


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

    Examples
    --------
    One job of two operations, the first on machine 0 (3 units) or
    machine 1 (4 units):

    >>> from schedsearch.loaders import flexible_jobshop_problem
    >>> instance = flexible_jobshop_problem([[[(0, 3), (1, 4)], [(1, 2)]]], 2)
    >>> instance.problem.graph.block("j0.o0").options
    (Option(devices=('m0',), duration=3), Option(devices=('m1',), duration=4))
    """
    if isinstance(num_machines, bool) or not isinstance(num_machines, int) or num_machines < 1:
        raise InvalidProblemError(f"job shop: 'num_machines' must be an integer >= 1, got {num_machines!r}")
    if num_machines > MAX_MACHINES:
        raise InvalidProblemError(
            f"job shop: 'num_machines' must be <= {MAX_MACHINES} (MAX_MACHINES), got {num_machines!r}"
        )
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
    """Build a classic job-shop Problem: per job, its ``(machine, duration)`` operations in order.

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> from schedsearch.search import optimal
    >>> instance = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2, name="two jobs")
    >>> print(instance.problem)
    two jobs: 4 blocks x 1 micro-batches, 2 edges, devices [m0(mem=inf), m1(mem=inf)], 0 channels
    >>> result = optimal(instance.problem, time_limit_s=10, workers=1)
    >>> result.status.value, result.objective
    ('OPTIMAL', 6)
    """
    return flexible_jobshop_problem([[(op,) for op in job] for job in jobs], num_machines, name=name)


def parse_jobshop(text: str, *, name: str = "", source: str = "job-shop text") -> JobShopInstance:
    """Parse the classic job-shop format (see the module notes).

    Examples
    --------
    >>> from schedsearch.loaders import parse_jobshop
    >>> instance = parse_jobshop("2 2\\n0 3 1 2\\n1 4 0 1\\n", name="ft2")
    >>> instance.num_jobs, instance.num_machines, instance.problem.graph.block_names
    (2, 2, ('j0.o0', 'j0.o1', 'j1.o0', 'j1.o1'))
    """
    tokens, lines = _tokens(text)
    n = _int_token(tokens, 0, "number of jobs", source, lines)
    m = _int_token(tokens, 1, "number of machines", source, lines)
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
            machine = _int_token(tokens, pos, f"machine of job {j}, operation {k}", source, lines)
            duration = _int_token(tokens, pos + 1, f"duration of job {j}, operation {k}", source, lines)
            _check_operation(f"{source}, line {lines[pos]}", j, k, machine, duration, m)
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

    Examples
    --------
    >>> from schedsearch.loaders import parse_flexible_jobshop
    >>> instance = parse_flexible_jobshop("2 2 1.5\\n2 2 0 3 1 4 1 1 2\\n1 1 0 5\\n")
    >>> instance.problem.graph.block("j0.o0").options
    (Option(devices=('m0',), duration=3), Option(devices=('m1',), duration=4))
    """
    numbered = [(no, line.split()) for no, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not numbered:
        raise FormatError(f"{source}: empty")
    line_of = [no for no, _ in numbered]
    lines = [tokens for _, tokens in numbered]
    header = lines[0]
    n = _int_token(header, 0, "number of jobs", f"{source}, line {line_of[0]}")
    m = _int_token(header, 1, "number of machines", f"{source}, line {line_of[0]}")
    _check_header(n, m, source)
    if len(lines) - 1 < n:
        raise FormatError(f"{source}: header announces {n} jobs, but only {len(lines) - 1} job lines follow")
    jobs: list[list[list[tuple[int, int]]]] = []
    for j in range(n):
        tokens = lines[j + 1]
        where = f"{source}, job {j} (line {line_of[j + 1]})"
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
                _check_operation(f"{source}, line {line_of[j + 1]}", j, k, machine, duration, m)
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
    """The text of an instance file (UTF-8; UTF-16 and unreadable files are
    refused with the file's name) and its stem."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read instance file {str(p)!r}: {exc.strerror}") from None
    return decode_text(data, f"instance file {str(p)!r}"), p.stem


def read_jobshop(path: str | os.PathLike[str], *, name: str | None = None) -> JobShopInstance:
    """Read a classic job-shop file; the problem is named after the file stem.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from schedsearch.loaders import read_jobshop
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "ft2.txt"
    ...     _ = path.write_text("2 2\\n0 3 1 2\\n1 4 0 1\\n")
    ...     print(read_jobshop(path).problem.name)
    ft2
    """
    text, stem = _read_text(path)
    return parse_jobshop(text, name=stem if name is None else name, source=f"job-shop file {str(path)!r}")


def read_flexible_jobshop(path: str | os.PathLike[str], *, name: str | None = None) -> JobShopInstance:
    """Read a flexible job-shop file; the problem is named after the file stem.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from schedsearch.loaders import read_flexible_jobshop
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "tiny.fjs"
    ...     _ = path.write_text("2 2\\n2 2 0 3 1 4 1 1 2\\n1 1 0 5\\n")
    ...     print(read_flexible_jobshop(path).problem)
    tiny: 3 blocks x 1 micro-batches, 1 edges, devices [m0(mem=inf), m1(mem=inf)], 0 channels
    """
    text, stem = _read_text(path)
    return parse_flexible_jobshop(
        text, name=stem if name is None else name, source=f"flexible job-shop file {str(path)!r}"
    )


def _classic_shape(text: str) -> bool:
    """True when ``text`` has the shape of a classic job shop: a header ``n m``
    and exactly ``2 n m`` numbers after it (checked without parsing them)."""
    tokens = text.split(maxsplit=2)
    if len(tokens) < 2 or not all(t.isascii() and t.isdigit() and len(t) < 10 for t in tokens[:2]):
        return False
    n, m = int(tokens[0]), int(tokens[1])
    if n < 1 or m < 1 or m > MAX_MACHINES:
        return False
    return len(text.split()) == 2 + 2 * n * m


def detect_format(text: str, *, source: str = "instance text") -> str:
    """``"jsp"`` when ``text`` reads as a classic job shop, else ``"fjsp"`` when
    it reads as a flexible one (a classic file is tried first: its token
    count is exact, so a flexible file rarely passes for one).

    When neither parser accepts the text, the error is the one of the format
    whose *shape* the text has: a file whose token count fits the classic
    format gets the classic parser's message (e.g. a machine out of range,
    with its line), any other the flexible parser's.

    Examples
    --------
    >>> from schedsearch.loaders import detect_format
    >>> detect_format("2 2\\n0 3 1 2\\n1 4 0 1\\n"), detect_format("2 2\\n2 2 0 3 1 4 1 1 2\\n1 1 0 5\\n")
    ('jsp', 'fjsp')
    """
    head = text.split(maxsplit=2)[:2]
    if len(head) == 2 and all(_INTEGER.fullmatch(t) for t in head):
        _check_header(int(head[0]), int(head[1]), source)  # the header is common to both formats
    classic = _classic_shape(text)
    classic_error: FormatError | None = None
    if classic:
        try:
            parse_jobshop(text, source=source)
            return "jsp"
        except FormatError as exc:
            classic_error = exc
    try:
        parse_flexible_jobshop(text, source=source)
        return "fjsp"
    except FormatError as exc:
        if classic_error is not None:
            raise FormatError(f"{classic_error} (read as a classic job shop: its size fits 'n m' "
                              f"and n x m operations)") from None
        raise FormatError(f"{source}: neither a job-shop nor a flexible job-shop instance ({exc})") from None


def read_instance(path: str | os.PathLike[str], *, format: str = "auto", name: str | None = None) -> JobShopInstance:
    """Read a job-shop (``"jsp"``) or flexible job-shop (``"fjsp"``) file;
    ``"auto"`` tells them apart with :func:`detect_format`.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from schedsearch.loaders import read_instance
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "mixed.txt"
    ...     _ = path.write_text("2 2\\n2 2 0 3 1 4 1 1 2\\n1 1 0 5\\n")
    ...     print(read_instance(path).num_operations)
    3
    """
    if format not in ("auto", "jsp", "fjsp"):
        raise InvalidOptionsError(f"read_instance: 'format' must be 'auto', 'jsp' or 'fjsp', got {format!r}")
    text, stem = _read_text(path)
    source = f"instance file {str(path)!r}"
    if format == "auto":
        format = detect_format(text, source=source)
    parse = parse_jobshop if format == "jsp" else parse_flexible_jobshop
    return parse(text, name=stem if name is None else name, source=source)


@attrs.frozen(kw_only=True)
class IndexEntry:
    """One instance of an index file: optimum (or bounds) and file path.

    Examples
    --------
    >>> from pathlib import Path
    >>> from schedsearch.loaders import IndexEntry
    >>> entry = IndexEntry(name="la01", path=Path("la01.txt"), num_jobs=10, num_machines=5,
    ...                    lower_bound=600, upper_bound=666)
    >>> entry.best_known
    666
    """

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
    relative to the index's folder.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from schedsearch.loaders import read_index
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     index = Path(folder) / "classical.json"
    ...     _ = index.write_text(json.dumps([{"name": "ft2", "jobs": 2, "machines": 2, "optimum": 6,
    ...                                        "path": "ft2.txt"}]))
    ...     entry = read_index(index)["ft2"]
    ...     print(entry.optimum, entry.path.name, entry.path.is_absolute())
    6 ft2.txt True
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read index file {str(p)!r}: {exc.strerror}") from None
    try:
        data = json.loads(decode_text(raw, f"index file {str(p)!r}"))
    except json.JSONDecodeError as exc:
        raise FormatError(f"index file {str(p)!r}: not valid JSON ({exc})") from None
    except RecursionError:
        raise FormatError(f"index file {str(p)!r}: nested too deeply to read") from None
    except FormatError:
        raise
    except ValueError as exc:
        raise FormatError(f"index file {str(p)!r}: cannot be read ({exc})") from None
    if not isinstance(data, list):
        raise FormatError(f"index file {str(p)!r}: must hold a JSON list, got {type(data).__name__}")
    out: dict[str, IndexEntry] = {}
    for i, item in enumerate(data):
        if not isinstance(item, Mapping) or "name" not in item or "path" not in item:
            raise FormatError(f"index file {str(p)!r}: entry {i} must be an object with 'name' and 'path'")
        if not isinstance(item["name"], str) or not isinstance(item["path"], str):
            raise FormatError(f"index file {str(p)!r}: entry {i}: 'name' and 'path' must be strings")
        bounds = item.get("bounds") or {}
        if not isinstance(bounds, Mapping):
            raise FormatError(f"index file {str(p)!r}: entry {i}: 'bounds' must be an object, got "
                              f"{short_repr(bounds)}")
        for key in ("jobs", "machines"):
            value = item.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise FormatError(f"index file {str(p)!r}: entry {i}: {key!r} must be an integer, got "
                                  f"{short_repr(value)}")
        for key, value in (("optimum", item.get("optimum")), ("bounds.lower", bounds.get("lower")),
                           ("bounds.upper", bounds.get("upper"))):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise FormatError(f"index file {str(p)!r}: entry {i}: {key!r} must be an integer >= 0 or null, got "
                                  f"{short_repr(value)}")
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
    """Operations of each job of a problem built by this module, in job order.

    Examples
    --------
    >>> from schedsearch.loaders import jobs_of, jobshop_problem
    >>> jobs_of(jobshop_problem([[(0, 3), (1, 2)], [(1, 4)]], 2).problem)
    {0: ('j0.o0', 'j0.o1'), 1: ('j1.o0',)}
    """
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
