"""Fixtures of the partition tests: the dnn-partitioning workloads and their reference values
(``dnn_data``, the folder, is the suite's: ``tests/conftest.py``)."""

from __future__ import annotations

import json

import pytest

from schedsearch.loaders.opgraph import read_dnn_partitioning


@pytest.fixture(scope="session")
def reference(dnn_data) -> dict:
    """``{'LayerGraphs/bert24_inference': {...}, ...}`` from reference_values.json."""
    raw = json.loads((dnn_data / "reference_values.json").read_text())["workloads"]
    return {k.removeprefix("throughput-inputs/").removesuffix(".json"): v
            for k, v in raw.items() if k.startswith("throughput-inputs/")}


@pytest.fixture(scope="session")
def load_workload(dnn_data):
    cache = {}

    def load(name: str):
        if name not in cache:
            cache[name] = read_dnn_partitioning(dnn_data / "throughput-inputs" / f"{name}.json")
        return cache[name]

    return load
