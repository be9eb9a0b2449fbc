"""Job-shop and flexible job-shop loaders."""

from __future__ import annotations

import pytest

from schedsearch.errors import FormatError, InvalidProblemError
from schedsearch.loaders import (
    flexible_jobshop_problem,
    jobs_of,
    jobshop_problem,
    parse_flexible_jobshop,
    parse_jobshop,
    read_flexible_jobshop,
    read_index,
    read_jobshop,
)

CLASSIC = """2 2
0 3 1 2
1 4 0 1
"""

FLEXIBLE = """2 3
2 2 0 3 1 4 1 2 5
1 1 1 6
"""


def test_classic_maps_operations_to_blocks_edges_and_machines():
    inst = parse_jobshop(CLASSIC, name="tiny")
    p = inst.problem
    assert (inst.num_jobs, inst.num_machines, inst.num_operations, inst.dropped) == (2, 2, 4, 0)
    assert p.num_microbatches == 1 and p.name == "tiny"
    assert p.cluster.device_names == ("m0", "m1")
    assert all(d.memory is None for d in p.cluster.devices) and not p.cluster.channels
    assert [(b.name, b.options[0].devices, b.options[0].duration) for b in p.graph.blocks] == [
        ("j0.o0", ("m0",), 3),
        ("j0.o1", ("m1",), 2),
        ("j1.o0", ("m1",), 4),
        ("j1.o1", ("m0",), 1),
    ]
    assert [(e.src, e.dst, e.size) for e in p.graph.edges] == [("j0.o0", "j0.o1", 0), ("j1.o0", "j1.o1", 0)]
    assert jobs_of(p) == {0: ("j0.o0", "j0.o1"), 1: ("j1.o0", "j1.o1")}


def test_flexible_gives_one_option_per_eligible_machine():
    p = parse_flexible_jobshop(FLEXIBLE).problem
    first = p.graph.block("j0.o0")
    assert [(o.devices, o.duration) for o in first.options] == [(("m0",), 3), (("m1",), 4)]
    assert [(o.devices, o.duration) for o in p.graph.block("j0.o1").options] == [(("m2",), 5)]
    assert [(o.devices, o.duration) for o in p.graph.block("j1.o0").options] == [(("m1",), 6)]
    assert len(p.graph.edges) == 1


def test_a_job_may_visit_a_machine_twice():
    p = parse_jobshop("1 2\n0 3 0 2").problem
    assert [b.options[0].devices for b in p.graph.blocks] == [("m0",), ("m0",)]


def test_zero_duration_operation_is_dropped_and_its_job_bridged():
    inst = jobshop_problem([[(0, 2), (1, 0), (0, 1)]], 2)
    assert inst.dropped == 1
    assert [b.name for b in inst.problem.graph.blocks] == ["j0.o0", "j0.o2"]
    assert [(e.src, e.dst) for e in inst.problem.graph.edges] == [("j0.o0", "j0.o2")]
    flex = flexible_jobshop_problem([[[(0, 0), (1, 3)]]], 2).problem
    assert [(o.devices, o.duration) for o in flex.graph.block("j0.o0").options] == [(("m1",), 3)]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "number of jobs"),
        ("2", "number of machines"),
        ("x 2", "number of jobs must be an integer, got 'x'"),
        ("0 2", "number of jobs must be >= 1, got 0"),
        ("1 2\n0 3 1", "need 4 numbers after the header, got 3"),
        ("1 2\n0 3 1 2 7", "extra data"),
        ("1 2\n0 3 5 2", "'machine' must be in 0..1, got 5"),
        ("1 2\n0 3 1 -2", "'duration' must be an integer >= 0, got -2"),
        ("1 2\n0 0 1 0", "at least one operation of positive duration"),
    ],
)
def test_classic_format_errors_name_the_problem(text, fragment):
    with pytest.raises(FormatError, match=fragment.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        parse_jobshop(text)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("2 2\n1 1 0 3", "only 1 job lines follow"),
        ("1 2\n2 1 0 3", "file ends where number of machines of operation 1 was expected"),
        ("1 2\n1 0", "operation 0 must list at least one machine, got 0"),
        ("1 2\n1 1 0 3 9", "1 extra number"),
        ("1 2\n1 1 0 3\n1 1 0 3", "1 extra line"),
        ("1 2\n0", "number of operations must be >= 1, got 0"),
        ("1 2\n1 1 2 3", "'machine' must be in 0..1, got 2"),
        ("1 2\n1 2 0 3 0 4", "'machine' 0 is listed twice"),
    ],
)
def test_flexible_format_errors_name_the_problem(text, fragment):
    with pytest.raises(FormatError, match=fragment):
        parse_flexible_jobshop(text)


def test_builder_rejects_bad_arguments():
    with pytest.raises(InvalidProblemError, match="'num_machines' must be an integer >= 1"):
        jobshop_problem([[(0, 1)]], 0)
    with pytest.raises(InvalidProblemError, match="job 0, operation 0: 'machines' must list at least one"):
        flexible_jobshop_problem([[[]]], 1)


def test_jobs_of_rejects_foreign_names():
    from schedsearch.placements import vshape

    with pytest.raises(InvalidProblemError, match="not a job-shop operation name"):
        jobs_of(vshape(2, 1))


def test_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(FormatError, match="cannot read instance file"):
        read_jobshop(tmp_path / "nope.txt")


def test_real_instances_load(shared_data):
    ft06 = read_jobshop(shared_data / "jsp" / "ft" / "ft06.txt")
    assert ft06.problem.name == "ft06"
    assert (ft06.num_jobs, ft06.num_machines, len(ft06.problem.graph.blocks)) == (6, 6, 36)
    # ft06, job 0: machine 2 for 1, then machine 0 for 3 (first line of the file)
    assert ft06.problem.graph.block("j0.o0").options[0].devices == ("m2",)
    assert ft06.problem.graph.block("j0.o1").options[0].duration == 3
    mk01 = read_flexible_jobshop(shared_data / "fjsp" / "brandimarte" / "mk01.txt")
    assert (mk01.num_jobs, mk01.num_machines, mk01.num_operations) == (10, 6, 55)
    assert any(len(b.options) > 1 for b in mk01.problem.graph.blocks)
    orb07 = read_jobshop(shared_data / "jsp" / "orb" / "orb07.txt")
    assert orb07.dropped > 0
    assert len(orb07.problem.graph.blocks) == orb07.num_operations - orb07.dropped


def test_index_reads_optima_and_bounds(shared_data):
    jsp = read_index(shared_data / "jsp" / "classical.json")
    assert jsp["ft06"].optimum == 55 and jsp["ft10"].optimum == 930
    assert jsp["ft06"].path.is_file()
    open_instance = next(e for e in jsp.values() if e.optimum is None)
    assert open_instance.lower_bound is not None and open_instance.best_known == open_instance.upper_bound
    fjsp = read_index(shared_data / "fjsp" / "instances.json")
    assert fjsp["mk01"].optimum == 40 and fjsp["mk01"].path.is_file()


# Files that used to give tracebacks from Python internals, hang, or the wrong
# parser's message: each gives one line naming the file and the line or field.
# (id, file bytes, reader, error fragment)
BAD_FILES = [
    ("UTF-16 with a byte-order mark", CLASSIC.encode("utf-16"), "auto",
     "the file is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8 or ASCII"),
    ("UTF-16 without a byte-order mark", CLASSIC.encode("utf-16-le"), "jsp", "the file holds NUL bytes"),
    ("UTF-32", CLASSIC.encode("utf-32"), "fjsp", "the file is UTF-32 text"),
    ("Latin-1 byte", "2 2\n0 3 1 2\n1 4 0 1 \xe9\n".encode("latin-1"), "auto", "line 3: not UTF-8 text (byte 0xe9"),
    ("header claims 10**8 machines (flexible)", b"10 100000000\n1 1 0 3\n", "auto",
     "line 1: number of machines must be <= 10000 (MAX_MACHINES), got 100000000"),
    ("header claims 10**8 machines (classic)", b"1 100000000\n0 3\n", "jsp",
     "number of machines must be <= 10000 (MAX_MACHINES), got 100000000"),
    ("header claims 10**8 machines (read as flexible)", b"1 100000000\n1 1 0 3\n", "fjsp",
     "number of machines must be <= 10000"),
    ("classic machine out of range", b"2 2\n0 3 1 2\n1 4 5 1\n", "auto",
     "line 3: job 1, operation 1: 'machine' must be in 0..1, got 5 (read as a classic job shop"),
    ("classic machine out of range, jsp", b"2 2\n0 3 1 2\n1 4 5 1\n", "jsp",
     "line 3: job 1, operation 1: 'machine' must be in 0..1, got 5"),
    ("classic negative duration", b"1 2\n0 3 1 -2\n", "auto", "line 2: job 0, operation 1: 'duration' must be an integer >= 0"),
    ("duration past MAX_INT", b"1 1\n0 99999999999999999999\n", "jsp",
     "line 2: job 0, operation 0: 'duration' must be an integer >= 0 and <= 1099511627776 (MAX_INT = 2**40)"),
    ("flexible machine out of range", b"1 2\n1 1 2 3\n", "fjsp", "line 2: job 0, operation 0: 'machine' must be in 0..1, got 2"),
    ("flexible line after a blank line", b"1 2\n\n1 1 2 3\n", "fjsp", "line 3: job 0, operation 0: 'machine'"),
    ("a word for a number", b"1 2\n0 3 one 2\n", "jsp", "machine of job 0, operation 1 must be an integer, got 'one' (line 2"),
    ("a 5000-digit number", b"1 1\n0 " + b"9" * 5000 + b"\n", "jsp", "must be an integer, got '99999"),
]


@pytest.mark.parametrize("data,reader,fragment", [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES])
def test_bad_files_give_one_clear_line(tmp_path, data, reader, fragment):
    import time

    from schedsearch.loaders import read_instance

    path = tmp_path / "instance.txt"
    path.write_bytes(data)
    t0 = time.perf_counter()
    with pytest.raises(FormatError) as info:
        if reader == "auto":
            read_instance(path)
        elif reader == "jsp":
            read_jobshop(path)
        else:
            read_flexible_jobshop(path)
    assert time.perf_counter() - t0 < 1.0
    message = str(info.value)
    assert fragment in message
    assert str(path) in message and "\n" not in message


def test_utf8_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(CLASSIC.encode("utf-8-sig"))
    assert read_jobshop(path).num_machines == 2


def test_builder_refuses_too_many_machines_at_once():
    import time

    from schedsearch.loaders.jobshop import MAX_MACHINES

    t0 = time.perf_counter()
    with pytest.raises(InvalidProblemError, match=f"'num_machines' must be <= {MAX_MACHINES}"):
        jobshop_problem([[(0, 1)]], 10**8)
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('[{"name": "a", "path": "a.txt", "jobs": "ten"}]', "entry 0: 'jobs' must be an integer, got 'ten'"),
        ('[{"name": "a", "path": "a.txt", "bounds": [1, 2]}]', "entry 0: 'bounds' must be an object"),
        ('[{"name": 3, "path": "a.txt"}]', "entry 0: 'name' and 'path' must be strings"),
    ],
    ids=["deep", "jobs a word", "bounds a list", "name a number"],
)
def test_bad_index_files(tmp_path, text, fragment):
    path = tmp_path / "index.json"
    path.write_text(text)
    with pytest.raises(FormatError, match=fragment):
        read_index(path)
