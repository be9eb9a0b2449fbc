"""Fuzzing campaign: the job-shop loaders (classic and flexible job shops, operation DAGs) and the
operator-graph loaders (the dnn-partitioning JSON, its splits, PipeDream profiles), and the commands
that read them (``jobshop``, ``partition``).

The valid inputs are the samples in ``models/`` (``ft06``, ``bert24_training.json``, PipeDream's
VGG-16 ``graph.txt``), Kacem's first flexible instance (``../shared/data`` when present, else a
small instance written here), a split of the sample workload, and an operation DAG the library
generates. Each is parsed into records (lines of numbers, JSON trees, profile lines and edges),
mutated through the shared tree mutator or with every number pushed to extremes in turn, written
back and read: every mutation is answered or refused by the library's own error, within the
campaign's bounds (``tests/fuzzing.py``).
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fuzzing import attempt, attempt_cli, attempt_file, each_number_pushed, examples, mutated, written
from schedsearch.graphs import OperationDag, random_dag
from schedsearch.loaders import (read_dnn_partitioning, read_flexible_jobshop, read_index, read_instance,
                                 read_jobshop, read_pipedream_profile, read_split)

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
KACEM = ROOT.parent / "shared" / "data" / "fjsp" / "kacem" / "k1.txt"
FLEXIBLE = "2 3\n2 2 0 3 1 4 1 2 5\n2 1 1 2 3 0 1 1 2 2 6\n"


def _numbers(text: str) -> list[list[int]]:
    """A job-shop file as its lines of numbers (a tree to mutate)."""
    return [[int(float(t)) for t in line.split()] for line in text.splitlines() if line.strip()]


def _lines(tree) -> str:
    return "".join(" ".join(str(x) for x in (line if isinstance(line, list) else [line])) + "\n" for line in tree)


@functools.cache
def _jobshop_samples() -> dict[str, list[list[int]]]:
    flexible = KACEM.read_text() if KACEM.is_file() else FLEXIBLE
    return {"jsp": _numbers((MODELS / "jobshop" / "ft06.txt").read_text()), "fjsp": _numbers(flexible)}


_READERS = {"jsp": read_jobshop, "fjsp": read_flexible_jobshop}


@examples(ci=40)
@given(st.sampled_from(("jsp", "fjsp")), st.data())
def test_jobshop_files_are_read_or_refused(fmt, data) -> None:
    tree, moves = data.draw(mutated(_jobshop_samples()[fmt]))
    attempt_file(f"read_{'flexible_' if fmt == 'fjsp' else ''}jobshop", _READERS[fmt], f"instance.{fmt}", _lines(tree),
                 describe=moves)
    attempt_file("read_instance (auto)", read_instance, f"instance.{fmt}", _lines(tree), describe=moves)


@examples(ci=6)
@given(st.sampled_from(("jsp", "fjsp")), st.data())
def test_jobshop_command_answers_or_refuses_in_one_line(fmt, data) -> None:
    tree, moves = data.draw(mutated(_jobshop_samples()[fmt]))
    with written({"instance.txt": _lines(tree)}) as folder:
        attempt_cli("cli:jobshop", ["jobshop", str(folder / "instance.txt"), "--baseline-only", "--quiet", "--out",
                                    str(folder)], describe=(fmt, moves))


#: An instance index as the shared data's (``classical.json``, ``instances.json``) hold them.
INDEX = [{"name": "ft06", "jobs": 6, "machines": 6, "optimum": 55, "path": "ft06.txt"},
         {"name": "mk02", "jobs": 10, "machines": 6, "optimum": None, "bounds": {"upper": 26, "lower": 24},
          "path": "brandimarte/mk02.txt"}]


@examples(ci=25)
@given(mutated(INDEX))
def test_instance_indexes_are_read_or_refused(case) -> None:
    tree, moves = case
    attempt_file("read_index", read_index, "index.json", json.dumps(tree), describe=moves)


@functools.cache
def _dag() -> dict:
    return random_dag(12, seed=3).to_dict()


@examples(ci=30)
@given(mutated(_dag()))
def test_operation_dags_are_read_or_refused(case) -> None:
    tree, moves = case
    attempt("OperationDag.from_json", OperationDag.from_json, json.dumps(tree), describe=moves)


# --------------------------------------------------------------------------- operator graphs

@functools.cache
def _workload() -> dict:
    return json.loads((MODELS / "dnn-partitioning" / "bert24_training.json").read_text())


@functools.cache
def _split() -> dict:
    """A valid split of the sample workload: every node on the first accelerator."""
    return {"fpgas": [{"load": -1, "nodes": [n["id"] for n in _workload()["nodes"]]}], "cpus": [{"nodes": []}]}


@examples(ci=30)
@given(mutated(_workload()))
def test_dnn_partitioning_workloads_are_read_or_refused(case) -> None:
    tree, moves = case
    attempt_file("read_dnn_partitioning", read_dnn_partitioning, "workload.json", json.dumps(tree), describe=moves)


@examples(ci=25)
@given(mutated(_split()))
def test_splits_are_read_or_refused(case) -> None:
    tree, moves = case
    attempt_file("read_split", read_split, "split.json", json.dumps(tree), describe=moves)


@examples(ci=5)
@given(mutated(_workload()))
def test_partition_command_answers_or_refuses_in_one_line(case) -> None:
    tree, moves = case
    with written({"workload.json": json.dumps(tree)}) as folder:
        attempt_cli("cli:partition", ["partition", str(folder / "workload.json"), "--method", "greedy", "--out",
                                      str(folder)], describe=moves)


_PD_LINE = re.compile(r"^(\S+) -- (.*) -- (.*)$")


@functools.cache
def _profile() -> dict:
    """PipeDream's VGG-16 ``graph.txt`` as records: nodes with their fields, and edges."""
    nodes, edges = [], []
    for line in (MODELS / "pipedream" / "vgg16" / "graph.txt").read_text().splitlines():
        if line.startswith("\t"):
            edges.append(line.strip().split(" -- "))
        elif (m := _PD_LINE.match(line)) is not None:
            fields = dict(part.split("=") for part in m.group(3).split(", "))
            nodes.append({"name": m.group(1), "op": m.group(2), "fields": {k: float(v) for k, v in fields.items()}})
    return {"nodes": nodes, "edges": edges}


def _profile_text(tree) -> str:
    lines = []
    records = (lambda key: tree.get(key) if isinstance(tree, dict) and isinstance(tree.get(key), list) else [])
    for node in records("nodes"):
        if isinstance(node, dict):
            fields = node.get("fields", {})
            text = ", ".join(f"{k}={v}" for k, v in fields.items()) if isinstance(fields, dict) else str(fields)
            lines.append(f"{node.get('name')} -- {node.get('op')} -- {text}")
    for edge in records("edges"):
        lines.append("\t" + " -- ".join(map(str, edge)) if isinstance(edge, list) else f"\t{edge}")
    return "\n".join(lines) + "\n"


@examples(ci=30)
@given(mutated(_profile()))
def test_pipedream_profiles_are_read_or_refused(case) -> None:
    tree, moves = case
    attempt_file("read_pipedream_profile", read_pipedream_profile, "graph.txt", _profile_text(tree), describe=moves)


def test_the_unmutated_samples_are_read() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for fmt, tree in _jobshop_samples().items():
            path = Path(folder) / f"instance.{fmt}"
            path.write_text(_lines(tree))
            assert _READERS[fmt](path).problem.graph.blocks
        path = Path(folder) / "graph.txt"
        path.write_text(_profile_text(_profile()))
        assert len(read_pipedream_profile(path).operators) >= len(_profile()["nodes"])
        path = Path(folder) / "split.json"
        path.write_text(json.dumps(_split()))
        assert read_split(path)
    assert OperationDag.from_json(json.dumps(_dag())).to_dict() == _dag()


def test_every_number_of_the_samples_pushed_to_extremes_is_read_or_refused() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for fmt, sample in _jobshop_samples().items():
            path = Path(folder) / f"instance.{fmt}"
            for tree, what in each_number_pushed(sample, (-1, 10**9, 2**63, 10**30)):
                path.write_text(_lines(tree))
                attempt("read_instance (auto)", read_instance, path, describe=(fmt, what))
        path = Path(folder) / "workload.json"
        for tree, what in each_number_pushed(_workload()):
            path.write_text(json.dumps(tree))
            attempt("read_dnn_partitioning", read_dnn_partitioning, path, describe=what)
        path = Path(folder) / "graph.txt"
        for tree, what in each_number_pushed(_profile()):
            path.write_text(_profile_text(tree))
            attempt("read_pipedream_profile", read_pipedream_profile, path, describe=what)
        path = Path(folder) / "index.json"
        for tree, what in each_number_pushed(INDEX):
            path.write_text(json.dumps(tree))
            attempt("read_index", read_index, path, describe=what)
        for tree, what in each_number_pushed(_dag()):
            attempt("OperationDag.from_json", OperationDag.from_json, json.dumps(tree), describe=what)
