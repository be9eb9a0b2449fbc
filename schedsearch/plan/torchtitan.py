"""The files a torchtitan user launches, for a plan of :func:`schedsearch.plan`.

torchtitan (checked: :data:`TORCHTITAN_VERSION` with torch
:data:`TORCH_VERSION`, the pair whose trainer runs these files: torchtitan
0.3.0's trainer steps the schedule with ``step(arg_mbs=..., kwarg_mbs=...)``,
which torch's ``step`` takes from 2.14 on) reads no settings file: its trainer takes
``--module NAME --config FUNCTION`` (a Python config function of the model)
and command-line overrides that its ``ConfigManager().parse_args`` reads.
:func:`torchtitan_overrides` gives those overrides for a plan, one per
line in ``torchtitan.args``:

* ``--parallelism.pipeline_parallel_degree``: the plan's ranks;
* ``--parallelism.pipeline_parallel_schedule``: a class that places the
  stages on the ranks as the plan does. torchtitan places them "V"-style
  (rank ``r`` holds stages ``r`` and ``2P-1-r``) only for ``ZBVZeroBubble``
  and ``DualPipeV``, and "loop"-style (rank ``r`` holds ``r, r+P, ...``)
  for every other name; with a CSV it runs torch's CSV-loading runtime
  whatever the name, so the name only chooses the placement:
  ``PipelineScheduleSingle`` (one stage per rank), ``PipelineScheduleMulti``
  (several, loop) or the V class of the plan's family (its record's
  ``torchtitan_schedule``, :mod:`schedsearch.handcrafted.families`);
* ``--parallelism.pipeline_parallel_schedule_csv``: the absolute path of
  ``schedule.csv`` (torchtitan resolves a relative one against the launch
  folder);
* ``--parallelism.pipeline_parallel_microbatch_size`` and
  ``--training.local_batch_size`` (= micro-batches x micro-batch size: the
  real per-rank batch);
* ``--training.disable_cuda_graphs``: torchtitan refuses to start a
  pipeline of more than one rank without it;
* ``activation_checkpoint:none`` (last: torchtitan's parser reads what
  follows a subcommand as its options) for a split backward (``I`` and
  ``W``): torchtitan's default selective activation checkpointing allows
  one backward per checkpointed region and fails on the second; the stage
  times of the description are those of a step without recomputation, as
  ``schedsearch profile`` measures them. For a plan of a model in layers,
  the configuration's recomputation instead (:func:`checkpoint_words`):
  ``activation_checkpoint:none``, ``activation_checkpoint:full`` or
  ``activation_checkpoint:selective`` (per operator, mode ``"op"``); a
  recomputation torchtitan cannot run (every k-th block, an explicit set,
  any with a split backward) gets no ``torchtitan.args``, with the reason;
* the split in torchtitan's terms. torchtitan counts the layers of a stage
  as its transformer layers plus one for the embedding (first stage) and one
  for the output (last stage), less
  ``pipeline_parallel_first_stage_less_layers`` /
  ``..._last_stage_less_layers``. When its rule gives exactly the plan's
  split, the overrides set ``pipeline_parallel_layers_per_stage`` and both
  adjustments; otherwise ``module_fqns_per_model_part`` lists each stage's
  modules (``tok_embeddings``, ``layers.i``, ``norm``, ``lm_head``).

The split reads each entry of the pipeline description (a layer with
``partition = "dp"``, a stage otherwise) as ``layers_per_entry``
consecutive transformer layers of the model (1 by default), the first entry
also holding the embedding and the last the norm and the output; a
description whose entries are named after torchtitan's modules
(``tok_embeddings``, ``layers.0``, ..., ``norm+lm_head``: names joined with
``+``) is split by those names instead, each module named exactly once and
in model order (:func:`entry_modules`). Given the torchtitan config the
files are for (:func:`torchtitan_model`: ``llama3_debugmodel``,
``llama3_8b``, ``llama3_70b``, ...), the split is checked against that
model's layers before anything is written, and the stages torchtitan will
build from the settings against the plan's; a mismatch is refused with the
fix. ``train.sh`` checks the installed torch and torchtitan and the model's
layers again at launch. A plan that torchtitan cannot run as written (two
model replicas, micro-batches of different sizes) gets no
``torchtitan.args`` and the reason is given instead.

:func:`write_plan_outputs` writes everything: ``schedule.csv``,
``torchtitan.args``, ``train.sh``, a Perfetto trace and a Gantt picture in
milliseconds, the plan JSON (with the units in its metadata) and the table.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path
from typing import Any

import attrs

from schedsearch.errors import (
    FormatError,
    InvalidOptionsError,
    InvalidPipelineError,
    SchedSearchError,
    UnsupportedFeatureError,
)
from schedsearch.handcrafted.families import family as family_record

__all__ = ["TORCHTITAN_LAYERS", "TORCHTITAN_VERSION", "TORCH_VERSION", "TorchtitanModel", "entry_modules",
           "not_written", "torchtitan_model", "torchtitan_overrides", "torchtitan_schedule_name", "torchtitan_split", "train_script",
           "write_plan_outputs"]

#: The torchtitan release whose configuration these files are written for (its trainer runs them in the
#: integration test).
TORCHTITAN_VERSION = "0.3.0"
#: The torch release torchtitan :data:`TORCHTITAN_VERSION`'s trainer runs with: its ``step`` takes the
#: ``arg_mbs`` and ``kwarg_mbs`` the trainer passes (torch 2.13's does not); what pip installs beside it.
TORCH_VERSION = "2.14.1"

#: Transformer layers of torchtitan's own configs, by ``(module, config)``: used when torchtitan is not
#: installed (with torchtitan, its own config is read; the integration test checks this table against it).
TORCHTITAN_LAYERS = {
    ("llama3", "llama3_debugmodel"): 6,
    ("llama3", "llama3_8b"): 32,
    ("llama3", "llama3_70b"): 80,
}


@attrs.frozen
class TorchtitanModel:
    """A torchtitan model config (``--module``, ``--config``) and its transformer layer count.

    ``source`` says where the count was read: ``"torchtitan X"`` (its own
    config) or ``"table"`` (:data:`TORCHTITAN_LAYERS`).
    """

    module: str
    config: str
    num_layers: int
    source: str

    def modules(self) -> list[str]:
        """The model's top-level modules in order, as torchtitan names them in ``module_fqns_per_model_part``."""
        return ["tok_embeddings", *(f"layers.{i}" for i in range(self.num_layers)), "norm", "lm_head"]


def torchtitan_model(config: str, module: str = "llama3") -> TorchtitanModel:
    """The torchtitan model ``module``/``config``: read with torchtitan's ``ConfigManager`` where it is installed.

    Without torchtitan, :data:`TORCHTITAN_LAYERS` gives the layer count;
    a config it does not list is refused (install torchtitan to check it).
    Raises :class:`~schedsearch.errors.InvalidOptionsError` for a config
    torchtitan does not know.

    Examples
    --------
    >>> from schedsearch.plan.torchtitan import torchtitan_model
    >>> torchtitan_model("llama3_8b").num_layers
    32
    """
    for name, value in (("module", module), ("config", config)):
        if not isinstance(value, str) or not value:
            raise InvalidOptionsError(f"torchtitan: {name} must be a non-empty name, got {value!r}")
    try:
        import torchtitan
        from torchtitan.config import ConfigManager
    except ImportError:
        known = TORCHTITAN_LAYERS.get((module, config))
        if known is None:
            raise InvalidOptionsError(
                f"torchtitan: config {module} {config} is not one the library knows without torchtitan "
                f"({', '.join(c for _, c in TORCHTITAN_LAYERS)} of llama3); install torchtitan "
                f"{TORCHTITAN_VERSION} to read it") from None
        return TorchtitanModel(module, config, known, "table")
    import contextlib
    import io
    import logging

    logging.disable(logging.WARNING)  # torchtitan warns about asset folders a config names
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            parsed = ConfigManager().parse_args(["--module", module, "--config", config])
    except (Exception, SystemExit) as exc:  # torchtitan's parser exits on an unknown config
        raise InvalidOptionsError(f"torchtitan {torchtitan.__version__} has no config {config!r} in module "
                                  f"{module!r} ({type(exc).__name__})") from None
    finally:
        logging.disable(logging.NOTSET)
    layers = getattr(getattr(parsed.model_spec, "model", None), "layers", None)
    if layers is None:
        raise InvalidOptionsError(f"torchtitan: {module} {config} is not a decoder with transformer layers")
    return TorchtitanModel(module, config, len(layers), f"torchtitan {torchtitan.__version__}")


_MODULE_NAME = re.compile(r"tok_embeddings|layers\.(0|[1-9][0-9]*)|norm|lm_head")


def _check_layers_per_entry(layers_per_entry: Any) -> None:
    if isinstance(layers_per_entry, bool) or not isinstance(layers_per_entry, int) or layers_per_entry < 1:
        raise InvalidOptionsError(f"torchtitan settings: layers_per_entry must be a positive integer (transformer "
                                  f"layers per entry of the pipeline description), got {layers_per_entry!r}")


def entry_modules(pipeline: Any, *, layers_per_entry: int = 1, model: TorchtitanModel | None = None) -> list[list[str]]:
    """The torchtitan modules each entry of the pipeline description stands for.

    Entries named after torchtitan's modules (``tok_embeddings``,
    ``layers.N``, ``norm``, ``lm_head``, joined with ``+``) hold those:
    every module named once, in model order, and, given ``model``, every
    module of it. Otherwise entry ``e`` holds layers ``e*k`` .. ``e*k+k-1``
    (``k = layers_per_entry``), the first also the embedding, the last the
    norm and the output; given ``model``, the entries must cover its layers.
    A mismatch raises :class:`~schedsearch.errors.InvalidOptionsError` (or
    :class:`~schedsearch.errors.InvalidPipelineError` for names that are
    wrong whatever the model) saying how to fix it.

    Examples
    --------
    >>> import schedsearch
    >>> from schedsearch.plan.torchtitan import entry_modules, torchtitan_model
    >>> names = ["tok_embeddings", "layers.0", "layers.1+layers.2", "norm+lm_head"]
    >>> pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=2, partition="dp",
    ...     stages=[{"name": n, "forward_ms": 1.0, "backward_ms": 2.0} for n in names])
    >>> entry_modules(pipeline)
    [['tok_embeddings'], ['layers.0'], ['layers.1', 'layers.2'], ['norm', 'lm_head']]
    >>> entry_modules(pipeline, model=torchtitan_model("llama3_debugmodel"))
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOptionsError: torchtitan llama3_debugmodel has 6 transformer layers (layers.0 .. layers.5); the description's entries name 3 (layers.0 .. layers.2): name every module of the model once
    """
    _check_layers_per_entry(layers_per_entry)
    names = [s.name for s in pipeline.stages]
    named = [bool(n) and all(_MODULE_NAME.fullmatch(t) for t in n.split("+")) for n in names]
    if any(named):
        if not all(named):
            i, j = named.index(True), named.index(False)
            raise InvalidPipelineError(
                f"torchtitan: entry {i} {names[i]!r} names torchtitan modules, entry {j} {names[j]!r} does not: "
                "name every entry after its modules (tok_embeddings, layers.N, norm, lm_head, joined with '+'), "
                "or none")
        if layers_per_entry != 1:
            raise InvalidOptionsError(
                f"torchtitan settings: layers_per_entry = {layers_per_entry} does not apply to entries named after "
                "torchtitan's modules (each holds the modules it names): leave it at 1")
        mods = [n.split("+") for n in names]
        flat = [m for ms in mods for m in ms]
        twice = sorted({m for m in flat if flat.count(m) > 1}, key=flat.index)
        if twice:
            where = [e for e, ms in enumerate(mods) if twice[0] in ms]
            raise InvalidPipelineError(
                f"torchtitan: module {twice[0]!r} is named more than once (entries {', '.join(map(str, where))}): "
                "name each module in exactly one entry")
        layers = sorted(int(m[len("layers."):]) for m in flat if m.startswith("layers."))
        if model is not None and layers != list(range(model.num_layers)):
            shown = f"{len(layers)} (layers.{layers[0]} .. layers.{layers[-1]})" if layers else "none"
            raise InvalidOptionsError(
                f"torchtitan {model.config} has {model.num_layers} transformer layers (layers.0 .. "
                f"layers.{model.num_layers - 1}); the description's entries name {shown}: name every module of "
                "the model once")
        expected = TorchtitanModel("", "", len(layers), "").modules()
        missing = [m for m in expected if m not in flat]
        if missing:
            raise InvalidPipelineError(
                f"torchtitan: no entry names {missing[0]!r}: name every module of the model once "
                f"({', '.join(expected[:2])}, ..., {', '.join(expected[-2:])})")
        if flat != expected:
            k = next(k for k, (a, b) in enumerate(zip(flat, expected)) if a != b)
            raise InvalidPipelineError(
                f"torchtitan: the entries name {flat[k]!r} where the model's order has {expected[k]!r}: list the "
                "modules in model order (tok_embeddings, layers.0, layers.1, ..., norm, lm_head)")
        return mods
    E, k = len(names), layers_per_entry
    if model is not None and E * k != model.num_layers:
        L = model.num_layers
        fix = (f"describe the {L} layers (one entry each), or set layers_per_entry = {L // E} "
               f"(plan --layers-per-entry {L // E})" if L % E == 0 and L > E
               else f"describe the {L} layers, one entry each" if k == 1
               else f"describe the {L} layers, or set layers_per_entry so that {E} entries hold them")
        raise InvalidOptionsError(
            f"torchtitan {model.config} has {L} transformer layers, the description's {E} entries stand for "
            f"{E * k} ({k} each): {fix}")
    return _plain_entries(E, k)


def torchtitan_schedule_name(family: str, layout: str, stages_per_rank: int) -> str:
    """The ``pipeline_parallel_schedule`` name that makes torchtitan place the stages as the plan does.

    Examples
    --------
    >>> from schedsearch.plan.torchtitan import torchtitan_schedule_name
    >>> torchtitan_schedule_name("1f1b", "loop", 1), torchtitan_schedule_name("interleaved", "loop", 2)
    ('PipelineScheduleSingle', 'PipelineScheduleMulti')
    >>> torchtitan_schedule_name("zb-v", "v", 2)
    'ZBVZeroBubble'
    """
    if layout == "v":
        if stages_per_rank != 2:
            raise FormatError(f"torchtitan: its V placement holds 2 stages per rank, the plan has {stages_per_rank}")
        name = family_record(family).torchtitan_schedule
        if name is None:
            raise FormatError(f"torchtitan: family {family!r} names no schedule that places its stages 'v' style")
        return name
    if layout != "loop":
        raise FormatError(f"torchtitan: it places stages 'loop' or 'v' style, not {layout!r}")
    return "PipelineScheduleSingle" if stages_per_rank == 1 else "PipelineScheduleMulti"


def _stage_modules(groups: list[list[int]]) -> list[list[str]]:
    """Each stage's torchtitan modules: entry ``i`` is ``layers.i``; embedding first, norm and output last."""
    out = []
    for k, group in enumerate(groups):
        names = [f"layers.{i}" for i in group]
        if k == 0:
            names.insert(0, "tok_embeddings")
        if k == len(groups) - 1:
            names += ["norm", "lm_head"]
        out.append(names)
    return out


def _rule_counts(num_stages: int, num_layers: int, less_first: int, less_last: int) -> list[int] | None:
    """Transformer layers per stage under torchtitan's even split, or None when it refuses these numbers."""
    effective = num_layers + less_first + less_last
    base, extra = divmod(effective, num_stages)
    if base == 0 or less_first > base or less_last > base:
        return None
    counts = [base + (k < extra) for k in range(num_stages)]
    counts[0] -= less_first
    counts[-1] -= less_last
    return counts if min(counts) >= 0 and sum(counts) == num_layers else None


def torchtitan_split(groups: list[list[int]]) -> list[str]:
    """The split overrides for stages holding the description entries ``groups`` (one transformer layer each).

    ``pipeline_parallel_layers_per_stage`` with both end adjustments when
    torchtitan's own rule gives exactly these stages (the defaults of 1 are
    tried first), else ``module_fqns_per_model_part``.

    Examples
    --------
    >>> from schedsearch.plan.torchtitan import torchtitan_split
    >>> torchtitan_split([[0, 1], [2, 3], [4, 5]])  # 2 layers per stage: the ends count embedding and output
    ['--parallelism.pipeline_parallel_layers_per_stage=2', '--parallelism.pipeline_parallel_first_stage_less_layers=0', '--parallelism.pipeline_parallel_last_stage_less_layers=0']
    >>> torchtitan_split([[0, 1, 2], [3], [4, 5]])  # no layers-per-stage setting gives 3, 1, 2
    ['--parallelism.module_fqns_per_model_part', 'tok_embeddings,layers.0,layers.1,layers.2', 'layers.3', 'layers.4,layers.5,norm,lm_head']
    """
    S, L = len(groups), sum(len(g) for g in groups)
    if S > 1 and [i for g in groups for i in g] == list(range(L)):
        want = [len(g) for g in groups]
        for less_first, less_last in [(1, 1)] + [(a, b) for a in range(L + 1) for b in range(L + 1) if (a, b) != (1, 1)]:
            if _rule_counts(S, L, less_first, less_last) != want:
                continue
            effective = L + less_first + less_last
            # torchtitan derives the stage count as ceil(effective / layers_per_stage)
            per_stage = next((n for n in range(1, effective + 1) if math.ceil(effective / n) == S), None)
            if per_stage is not None:
                return [f"--parallelism.pipeline_parallel_layers_per_stage={per_stage}",
                        f"--parallelism.pipeline_parallel_first_stage_less_layers={less_first}",
                        f"--parallelism.pipeline_parallel_last_stage_less_layers={less_last}"]
    return ["--parallelism.module_fqns_per_model_part", *(",".join(m) for m in _stage_modules(groups))]


def _split_words(stages: list[list[str]]) -> list[str]:
    """The split overrides for stages holding the torchtitan modules ``stages`` (in model order)."""
    groups = [[int(m[len("layers."):]) for m in ms if m.startswith("layers.")] for ms in stages]
    if _stage_modules(groups) == stages:  # the embedding first, the norm and the output last: the layer split says it
        return torchtitan_split(groups)
    return ["--parallelism.module_fqns_per_model_part", *(",".join(m) for m in stages)]


def _torchtitan_builds(words: list[list[str]], model: TorchtitanModel) -> list[list[str]] | None:
    """The modules of each stage torchtitan builds from ``words`` for ``model``, by its own code (None without it)."""
    try:
        from torchtitan.config import ConfigManager
        from torchtitan.distributed import pipeline_parallel as tt_pp
    except ImportError:
        return None
    import contextlib
    import io
    import logging

    logging.disable(logging.WARNING)
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            config = ConfigManager().parse_args(["--module", model.module, "--config", model.config,
                                                 *(w for o in words for w in o)])
    except (Exception, SystemExit) as exc:  # its parser exits on settings it refuses
        lines = [line for line in said.getvalue().splitlines() if line.strip()]
        raise FormatError(f"torchtitan refuses these settings for {model.config} ({type(exc).__name__}"
                          f"{': ' + lines[-1].strip() if lines else ''})") from None
    finally:
        logging.disable(logging.NOTSET)
    par = config.parallelism
    if par.module_fqns_per_model_part is not None:
        return [list(m) for m in par.module_fqns_per_model_part]
    first, last = par.pipeline_parallel_first_stage_less_layers, par.pipeline_parallel_last_stage_less_layers
    stages = math.ceil((model.num_layers + first + last) / par.pipeline_parallel_layers_per_stage)
    return [list(m) for m in tt_pp._generate_llm_fqn_per_model_part(stages, model.num_layers, first, last)]


def _microbatch_size(pipeline: Any, microbatch_size: int | None) -> int:
    sizes = pipeline.microbatch_sizes
    if sizes is not None and len(set(sizes)) > 1:
        raise FormatError(
            "torchtitan cuts the per-rank batch into equal micro-batches of pipeline_parallel_microbatch_size; "
            f"the description's micro-batches differ in size ({', '.join(f'{s:g}' for s in sizes)})")
    if microbatch_size is None:
        return int(sizes[0]) if sizes is not None and float(sizes[0]).is_integer() else 1
    _check_microbatch_size(microbatch_size)
    return microbatch_size


def _check_microbatch_size(microbatch_size: Any) -> None:
    if microbatch_size is not None and (isinstance(microbatch_size, bool) or not isinstance(microbatch_size, int)
                                        or microbatch_size < 1):
        raise InvalidOptionsError(f"torchtitan settings: microbatch_size must be a positive integer (samples per "
                                  f"micro-batch), got {microbatch_size!r}")


def torchtitan_overrides(result: Any, csv_path: str | Path, *, microbatch_size: int | None = None,
                         model: TorchtitanModel | None = None, layers_per_entry: int = 1,
                         recomputation: Any = None) -> list[list[str]]:
    """torchtitan's command-line overrides for the best plan of ``result`` (a :class:`~schedsearch.plan.planner.PlanResult`).

    One list of argument words per override (the flag, then its values), in
    the order ``torchtitan.args`` lists them; ``csv_path`` is made absolute.
    Each stage holds the modules of its entries (:func:`entry_modules`,
    ``layers_per_entry`` transformer layers per entry unless the entries
    name modules); given ``model`` (:func:`torchtitan_model`) the entries
    must cover its modules, and where torchtitan is installed its own code
    must build exactly the plan's stages from the overrides.
    ``recomputation`` (a :class:`~schedsearch.plan.layers.Recomputation`,
    the configuration of a plan of a model in layers) sets torchtitan's
    activation checkpointing to it (:func:`checkpoint_words`); without it
    only a split backward sets it (to ``none``).
    Raises :class:`~schedsearch.errors.FormatError` saying why when
    torchtitan cannot run the plan as written, and
    :class:`~schedsearch.errors.InvalidOptionsError` (or
    :class:`~schedsearch.errors.InvalidPipelineError`) with the fix when the
    description does not match the model.

    Examples
    --------
    >>> import schedsearch
    >>> from schedsearch.plan.torchtitan import torchtitan_overrides
    >>> pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"],
    ...     stages=[{"forward_ms": 1.0, "backward_ms": 2.0}] * 2)
    >>> result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1)
    >>> for words in torchtitan_overrides(result, "/plans/schedule.csv", microbatch_size=2):
    ...     print(" ".join(words))
    --parallelism.pipeline_parallel_degree=2
    --parallelism.pipeline_parallel_schedule=PipelineScheduleSingle
    --parallelism.pipeline_parallel_schedule_csv=/plans/schedule.csv
    --parallelism.pipeline_parallel_microbatch_size=2
    --training.local_batch_size=8
    --parallelism.pipeline_parallel_layers_per_stage=2
    --parallelism.pipeline_parallel_first_stage_less_layers=1
    --parallelism.pipeline_parallel_last_stage_less_layers=1
    --training.disable_cuda_graphs
    """
    best = result.best
    if best is None:
        raise SchedSearchError("torchtitan settings: the plan has no schedule (no candidate fitted in time)")
    cand, pipeline = best.candidate, result.pipeline
    if cand.record.two_pipelines:
        raise FormatError("torchtitan runs one model replica with each stage on one rank; "
                          f"{best.family} needs two copies of every stage's parameters")
    P = pipeline.num_ranks
    name = torchtitan_schedule_name(cand.family, cand.layout, len(result.layers) // P)
    mbs = _microbatch_size(pipeline, microbatch_size)
    m = pipeline.num_microbatches
    words = [
        [f"--parallelism.pipeline_parallel_degree={P}"],
        [f"--parallelism.pipeline_parallel_schedule={name}"],
        [f"--parallelism.pipeline_parallel_schedule_csv={Path(csv_path).resolve()}"],
        [f"--parallelism.pipeline_parallel_microbatch_size={mbs}"],
        [f"--training.local_batch_size={m * mbs}"],
    ]
    entries = entry_modules(pipeline, layers_per_entry=layers_per_entry, model=model)
    stages = [[m for e in group for m in entries[e]] for group in result.layers]
    split = _split_words(stages)
    if split[0].startswith("--parallelism.module_fqns_per_model_part"):
        words.append(split)
    else:
        words += [[w] for w in split]
    # a flag after module_fqns_per_model_part ends its list of values (else a subcommand would join it)
    words.append(["--training.disable_cuda_graphs"])
    # a subcommand ends the options, so it goes last
    if recomputation is not None:
        words.append(checkpoint_words(recomputation, split_backward=cand.split_backward, family=best.family))
    elif cand.split_backward:
        # torchtitan's selective checkpointing allows one backward per region, a split backward runs two
        words.append(["activation_checkpoint:none"])
    built = None if model is None else _torchtitan_builds(words, model)
    if built is not None and built != stages:
        raise FormatError(f"torchtitan builds {len(built)} stages from these settings for {model.config}, the plan "
                          f"has {len(stages)}: {[','.join(m) for m in built]} against {[','.join(m) for m in stages]}")
    return words


def checkpoint_words(recomputation: Any, *, split_backward: bool, family: str = "the plan") -> list[str]:
    """torchtitan's activation checkpointing for ``recomputation`` (a :class:`~schedsearch.plan.layers.Recomputation`).

    ``activation_checkpoint:none`` for no recomputation,
    ``activation_checkpoint:full`` (every transformer block recomputed) for
    full recomputation and ``activation_checkpoint:selective`` for the
    per-operator mode ``"op"``. Raises :class:`~schedsearch.errors.FormatError` for
    what torchtitan :data:`TORCHTITAN_VERSION` cannot run: recomputation of
    every k-th block or of an explicit set of blocks (its ``selective`` mode
    is per operator, of every block), and any recomputation with a split
    backward (it allows one backward per checkpointed region).

    Examples
    --------
    >>> from schedsearch.plan.layers import Recomputation
    >>> checkpoint_words(Recomputation(mode="full"), split_backward=False)
    ['activation_checkpoint:full']
    >>> checkpoint_words(Recomputation(mode="op"), split_backward=False)
    ['activation_checkpoint:selective']
    >>> checkpoint_words(Recomputation(mode="selective", every=2), split_backward=False)
    Traceback (most recent call last):
    ...
    schedsearch.errors.FormatError: torchtitan 0.3.0 cannot recompute every 2nd block: its activation_checkpoint modes are none, full (every block), selective (per operator, in every block) and memory-budget
    """
    if recomputation.recomputes and split_backward:
        raise FormatError(f"torchtitan {TORCHTITAN_VERSION} allows one backward per checkpointed region and "
                          f"{family} splits the backward in two: it cannot run {recomputation.label()} with it")
    mode = recomputation.torchtitan_mode if recomputation.recomputes else "none"
    if TORCHTITAN_VERSION not in recomputation.torchtitan_releases or mode not in ("none", "full", "selective"):
        what = (f"every {_ordinal(recomputation.every)} block" if recomputation.mode == "selective" else
                f"an explicit set of {len(recomputation.layers)} blocks")
        raise FormatError(f"torchtitan {TORCHTITAN_VERSION} cannot recompute {what}: its activation_checkpoint "
                          "modes are none, full (every block), selective (per operator, in every block) and "
                          "memory-budget")
    return [f"activation_checkpoint:{mode}"]


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def train_script(result: Any, overrides: list[list[str]], *, model: TorchtitanModel | None = None,
                 layers_per_entry: int = 1) -> str:
    """``train.sh``: torchtitan's whole launch line for the plan, after checking what it launches.

    ``MODULE`` and ``CONFIG`` (environment; default ``model``'s when given)
    name the torchtitan model module and config function; extra arguments
    are passed on to torchtitan. Before launching it checks that torch
    :data:`TORCH_VERSION` and torchtitan :data:`TORCHTITAN_VERSION` are
    installed (else it says what to install; ``SCHEDSEARCH_ANY_VERSION=1``
    launches anyway) and that the model has the transformer layers the
    plan's stages hold (else it says how to plan for it).
    """
    best, pipeline = result.best, result.pipeline
    P = pipeline.num_ranks
    entries = entry_modules(pipeline, layers_per_entry=layers_per_entry, model=model)
    E = len(entries)
    layers = sum(m.startswith("layers.") for e in entries for m in e)
    named = entries != _plain_entries(E, layers_per_entry)
    flat = " \\\n  ".join(" ".join(shlex.quote(w) for w in o) for o in overrides)
    if model is not None:
        env = f"MODULE=${{MODULE:-{model.module}}}\nCONFIG=${{CONFIG:-{model.config}}}\n"
        what = (f"# Written for torchtitan's {model.module} {model.config} ({model.num_layers} transformer layers); "
                "MODULE and CONFIG\n# (environment) choose another.\n")
    else:
        env = (': "${MODULE:?set MODULE to your torchtitan model module, e.g. MODULE=llama3}"\n'
               ': "${CONFIG:?set CONFIG to its config function, e.g. CONFIG=llama3_8b}"\n')
        what = ("# Set MODULE and CONFIG to your torchtitan model module and config function (e.g. MODULE=llama3\n"
                "# CONFIG=llama3_8b).\n")
    held = ("as the entries of the pipeline description name them" if named else
            f"the {E} entries of the pipeline description, {layers_per_entry} each")
    if named:
        fix = "'name every module of that model once, and plan again'"
    else:
        fix = (f"(f'describe the {{n}} layers, or plan with layers_per_entry = {{n // {E}}} (--layers-per-entry "
               f"{{n // {E}}})' if n % {E} == 0 else f'describe the {{n}} layers, and plan again')")
    return f"""#!/usr/bin/env bash
# torchtitan {TORCHTITAN_VERSION} with torch {TORCH_VERSION} launch for the schedsearch plan {best.family!r}:
# makespan {best.makespan_ms:g} ms, peak {max(best.peak_gib):.3g} GiB on the worst rank, {len(result.layers)} stages on {P} ranks.
# The stages hold {layers} transformer layers ({held}).
{what}# Checks the installed torch and torchtitan (torchtitan {TORCHTITAN_VERSION}'s trainer calls the schedule's
# step(arg_mbs=..., kwarg_mbs=...), which torch takes from 2.14 on) and the model's layers, then launches.
# Arguments to this script go to torchtitan before the plan's settings (which win).
set -euo pipefail
{env}python - "$MODULE" "$CONFIG" <<'EOF'
import os
import sys
from importlib.metadata import PackageNotFoundError, version

want = {{"torch": "{TORCH_VERSION}", "torchtitan": "{TORCHTITAN_VERSION}"}}
have = {{}}
for name in want:
    try:
        have[name] = version(name).split("+")[0]
    except PackageNotFoundError:
        have[name] = "none"
if have != want and os.environ.get("SCHEDSEARCH_ANY_VERSION") != "1":
    sys.exit(f"train.sh: installed torch {{have['torch']}}, torchtitan {{have['torchtitan']}}; this plan runs with "
             "torchtitan {TORCHTITAN_VERSION}, whose trainer needs torch {TORCH_VERSION}: "
             "pip install torch=={TORCH_VERSION} torchtitan=={TORCHTITAN_VERSION} "
             "(or set SCHEDSEARCH_ANY_VERSION=1 to launch anyway)")
from torchtitan.config import ConfigManager

config = ConfigManager().parse_args(["--module", sys.argv[1], "--config", sys.argv[2]])
n = len(config.model_spec.model.layers)
if n != {layers}:
    fix = {fix}
    sys.exit(f"train.sh: {{sys.argv[1]}} {{sys.argv[2]}} has {{n}} transformer layers, this plan's stages hold "
             f"{layers} ({held}): {{fix}}; or run a config of {layers} layers")
EOF
exec torchrun --nproc_per_node={P} --rdzv_backend c10d --rdzv_endpoint=localhost:0 \\
  -m torchtitan.train --module "$MODULE" --config "$CONFIG" "$@" \\
  {flat}
"""


def _plain_entries(num_entries: int, layers_per_entry: int) -> list[list[str]]:
    """The modules of entries not named after modules: ``layers_per_entry`` layers each, the ends as the model's."""
    return _stage_modules([list(range(e * layers_per_entry, (e + 1) * layers_per_entry)) for e in range(num_entries)])


def write_plan_outputs(result: Any, out_dir: str | Path, *, microbatch_size: int | None = None,
                       torchtitan_config: str | None = None, torchtitan_module: str = "llama3",
                       layers_per_entry: int = 1, recomputation: Any = None) -> dict[str, Path]:
    """Write the best plan of ``result`` into ``out_dir``; return the paths by kind.

    ``torchtitan_config`` (with ``torchtitan_module``) names the torchtitan
    model the files are for: the description's entries (``layers_per_entry``
    transformer layers each, unless they name torchtitan's modules) are
    checked against its layers before anything is written, a mismatch
    raising :class:`~schedsearch.errors.InvalidOptionsError` with the fix,
    and ``train.sh`` launches it by default. ``recomputation``: the
    activation recomputation of the plan's configuration (a plan of a model
    in layers), written as torchtitan's activation checkpointing
    (:func:`checkpoint_words`).

    ``schedule.csv`` (``csv``: compute-only, torch's format),
    ``torchtitan.args`` (``torchtitan``: torchtitan's overrides, one per
    line), ``train.sh`` (``train``: the launch line), ``trace.json``
    (Perfetto, real microseconds), ``gantt.png`` (when matplotlib is
    installed), ``plan.json`` (problem, schedule and the plan's metadata:
    units, family, stages, table) and ``plan.txt`` (the table). A file that
    cannot be written for this plan is left out and ``plan.txt`` ends with
    ``not written: FILE: why`` for it; :func:`not_written` reads those back.
    """
    from schedsearch.export.chrome import chrome_trace
    from schedsearch.export.json import write_json
    from schedsearch.export.torch_csv import write_torch_csv

    _check_microbatch_size(microbatch_size)
    model = None if torchtitan_config is None else torchtitan_model(torchtitan_config, torchtitan_module)
    entry_modules(result.pipeline, layers_per_entry=layers_per_entry, model=model)  # refuses before writing
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    notes: list[str] = []
    text = result.table()
    if result.best is None:
        (out / "plan.txt").write_text(text + "\n")
        return {"table": out / "plan.txt"}
    problem, schedule, units = result.problem, result.schedule, result.units
    meta = result.metadata()
    gap = result.best.candidate.record.runtime_gap("torch")
    try:
        if gap:
            raise FormatError(gap)
        paths["csv"] = write_torch_csv(problem, schedule, out / "schedule.csv")
    except SchedSearchError as exc:
        notes.append(f"schedule.csv, torchtitan.args, train.sh: {result.best.family} {exc}" if gap else
                     f"schedule.csv, torchtitan.args, train.sh: {result.best.family} cannot be written as torch's "
                     f"CSV: {exc}")
    else:
        try:
            overrides = torchtitan_overrides(result, paths["csv"], microbatch_size=microbatch_size, model=model,
                                             layers_per_entry=layers_per_entry, recomputation=recomputation)
        except SchedSearchError as exc:
            notes.append(f"torchtitan.args, train.sh: {exc}")
        else:
            paths["torchtitan"] = out / "torchtitan.args"
            paths["torchtitan"].write_text("".join(" ".join(shlex.quote(w) for w in o) + "\n" for o in overrides))
            paths["train"] = out / "train.sh"
            paths["train"].write_text(train_script(result, overrides, model=model, layers_per_entry=layers_per_entry))
            paths["train"].chmod(0o755)
    trace = chrome_trace(problem, schedule, time_unit_us=units.time_unit_ms * 1000.0, name=problem.name)
    trace.setdefault("otherData", {}).update({"units": units.to_dict(), "family": result.best.family})
    paths["trace"] = out / "trace.json"
    paths["trace"].write_text(json.dumps(trace))
    paths["json"] = write_json(problem, schedule, out / "plan.json", meta=meta)
    try:
        paths["gantt"] = _gantt(result, out / "gantt.png")
    except (ImportError, UnsupportedFeatureError):
        notes.append("gantt.png: matplotlib is not installed (pip install 'schedsearch[plot]')")
    paths["table"] = out / "plan.txt"
    paths["table"].write_text(text + "\n" + "".join(f"not written: {n}\n" for n in notes))
    return paths


def not_written(table_path: str | Path) -> list[str]:
    """The ``not written: FILE: why`` lines of a ``plan.txt`` written by :func:`write_plan_outputs`, without the prefix."""
    return [line[len("not written: "):] for line in Path(table_path).read_text().splitlines()
            if line.startswith("not written: ")]


def _gantt(result: Any, path: Path) -> Path:
    from schedsearch.export.plot import plot_schedule

    fig = plot_schedule(result.problem, result.schedule, title=f"{result.best.family}: {result.best.makespan_ms:g} ms",
                        fold_channels=True)  # the transfers of every channel in one row: 8 ranks stay readable
    from matplotlib.ticker import FuncFormatter

    unit = result.units.time_unit_ms
    ax = fig.axes[0]
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x * unit:g}"))
    ax.set_xlabel("time (ms)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
