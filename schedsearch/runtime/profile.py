"""Profile a model's stages and turn the figures into a placement Problem.

:func:`profile` runs each stage on one micro-batch, in stage order (stage
``s+1`` gets stage ``s``'s output, detached, as a leaf that requires a
gradient, as the pipeline runtime hands it over), and measures with the
functions PyTorch's pipeline runtime itself calls:

* ``F``: the stage's forward (for the last stage including the loss);
* ``B``: ``stage_backward`` (input and weight gradients together);
* ``I``: ``stage_backward_input`` (input gradients only);
* ``W``: ``stage_backward_weight`` (weight gradients from what ``I`` kept).
  For stage 0 PyTorch 2.13 computes nothing in ``I`` and the whole
  backward in ``W`` (its inputs need no gradient); the profile measures
  exactly that, so stage 0's ``I`` is the smallest duration (1 unit).

Each time is the median of ``repeats`` runs after ``warmup`` runs.

Activation memory of a stage is the bytes of the distinct tensor storages
one micro-batch keeps alive from its forward to its backward: the tensors
autograd saves for backward (seen through ``saved_tensors_hooks``), the
stage's input and its output, parameters excluded. It is the memory the
forward allocates and the backward frees; with the split backward the
activations stay until ``W`` (``I`` frees nothing, ``W`` frees all), the
convention of :mod:`schedsearch.placements.chains`.

Units. Durations become integers in ``time_unit_s`` (default: the largest
power of ten of seconds, at most 1 s, in which the shortest measured
duration is at least 10 units), rounded, at least 1. Memory becomes
integers in ``memory_unit_bytes`` (default 1024, KiB), rounded up. The
Problem counts activation memory only (no parameters, gradients or
optimizer state: parameter bytes are reported beside), so a device
capacity is an activation budget.

Micro-batches of different sizes: profile every size that occurs
(``sizes``); :meth:`Profile.to_problem` gives the micro-batches whose size
differs from the first one per-micro-batch durations
(``Problem.duration_overrides``). Memory deltas are per block, not per
micro-batch, so they use the largest profiled size (a safe bound).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.placements.stages import stage_mapping, stage_pipeline
from schedsearch.problem import Problem
from schedsearch.runtime._torch import pipelining_internals

__all__ = ["StageProfile", "Profile", "profile", "choose_time_unit"]

KIND_FIELDS = {"F": "forward_s", "B": "backward_s", "I": "input_grad_s", "W": "weight_grad_s"}


@attrs.frozen(kw_only=True)
class StageProfile:
    """Measured figures of one stage at one micro-batch size (seconds, bytes)."""

    stage: int
    microbatch_size: int
    forward_s: float
    backward_s: float
    input_grad_s: float
    weight_grad_s: float
    activation_bytes: int
    parameter_bytes: int
    #: Bytes of the stage's output (what it sends to the next stage); None when not measured.
    send_bytes: int | None = None
    #: Under per-operator selective checkpointing (:func:`op_checkpoint_policy`): the bytes a micro-batch
    #: holds (its input and the outputs the rule saves) and the seconds its backward spends running the
    #: rest of the forward again; None when not measured.
    selective_bytes: int | None = None
    selective_recompute_s: float | None = None

    def seconds(self, kind: str) -> float:
        return getattr(self, KIND_FIELDS[kind])

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def choose_time_unit(shortest_s: float, min_units: int = 10) -> float:
    """The largest power of ten of seconds (1 us .. 1 s) in which ``shortest_s``
    lasts at least ``min_units`` units."""
    unit = 1.0
    while unit > 1e-6 and shortest_s / unit < min_units:
        unit /= 10
    return float(f"{unit:.0e}")


@attrs.frozen(kw_only=True)
class Profile:
    """Per-stage figures at each profiled micro-batch size, and the units.

    ``sizes[0]`` is the base size: its figures are the blocks' durations.
    ``model_spec`` names the built-in model profiled, when it is one
    (:meth:`Pipeline.from_profile <schedsearch.plan.pipeline.Pipeline.from_profile>`
    records it in the pipeline, so that a run of its plan builds that model).
    """

    sizes: tuple[int, ...]
    stages: Mapping[int, tuple[StageProfile, ...]]
    repeats: int
    time_unit_s: float
    memory_unit_bytes: int
    #: the built-in model profiled (``transformer:4x32``), when it is one: what a pipeline of these figures records
    model_spec: str | None = None

    @property
    def num_stages(self) -> int:
        return len(self.stages[self.sizes[0]])

    def units(self, kind: str, size: int | None = None) -> tuple[int, ...]:
        """Integer durations of ``kind`` (F, B, I, W) per stage, in ``time_unit_s``."""
        rows = self._rows(size)
        return tuple(max(1, round(r.seconds(kind) / self.time_unit_s)) for r in rows)

    def memory_units(self) -> tuple[int, ...]:
        """Activation memory per stage in ``memory_unit_bytes`` (largest size, rounded up)."""
        big = max(self.sizes)
        return tuple(math.ceil(r.activation_bytes / self.memory_unit_bytes) for r in self.stages[big])

    def _rows(self, size: int | None) -> tuple[StageProfile, ...]:
        size = self.sizes[0] if size is None else size
        if size not in self.stages:
            raise InvalidProblemError(
                f"profile: micro-batch size {size} was not profiled (profiled sizes: {list(self.sizes)}); "
                f"pass sizes=[..., {size}] to profile()"
            )
        return self.stages[size]

    def to_problem(
        self,
        num_devices: int | None = None,
        num_microbatches: int | None = None,
        *,
        mapping: str | Sequence[int] | None = None,
        split_backward: bool = False,
        memory: int | Sequence[int | None] | None = None,
        microbatch_sizes: Sequence[int] | None = None,
        name: str = "",
    ) -> Problem:
        """A one-pipeline placement Problem with the profiled durations and memory.

        Parameters
        ----------
        num_devices:
            Devices (pipeline ranks); default one device per stage, or
            ``max(mapping) + 1`` for a mapping given as a list. A style name
            (``"loop"``, ``"v"``) needs it.
        num_microbatches:
            Micro-batches; default ``len(microbatch_sizes)``.
        mapping:
            Stage-to-device map: a sequence, ``"loop"`` or ``"v"``; default
            stage ``s`` on device ``s`` (needs as many stages as devices).
        split_backward:
            ``I``/``W`` blocks (zero-bubble) instead of one ``B`` per stage.
        memory:
            Activation capacity per device (or one per device), in memory
            units; None = unbounded.
        microbatch_sizes:
            Size of each micro-batch; those that differ from the base size
            get their own durations (every size must have been profiled).

        Examples
        --------
        >>> from schedsearch.runtime.profile import Profile, StageProfile
        >>> rows = tuple(
        ...     StageProfile(stage=s, microbatch_size=4, forward_s=0.001, backward_s=0.002, input_grad_s=0.001,
        ...                  weight_grad_s=0.001, activation_bytes=2048, parameter_bytes=0)
        ...     for s in range(4))
        >>> prof = Profile(sizes=(4,), stages={4: rows}, repeats=1, time_unit_s=1e-4, memory_unit_bytes=1024)
        >>> len(prof.to_problem(num_microbatches=8).cluster.devices)
        4
        >>> len(prof.to_problem(num_devices=2, num_microbatches=8, mapping="v").cluster.devices)
        2
        >>> len(prof.to_problem(num_microbatches=8, mapping=[0, 1, 0, 1]).cluster.devices)
        2
        """
        if microbatch_sizes is not None:
            microbatch_sizes = tuple(microbatch_sizes)
            if num_microbatches is None:
                num_microbatches = len(microbatch_sizes)
            elif num_microbatches != len(microbatch_sizes):
                raise InvalidProblemError(
                    f"profile: 'microbatch_sizes' gives {len(microbatch_sizes)} sizes for {num_microbatches} "
                    "micro-batches"
                )
        if num_microbatches is None:
            raise InvalidProblemError("profile: give 'num_microbatches' or 'microbatch_sizes'")
        S = self.num_stages
        if num_devices is None:
            if isinstance(mapping, str):
                raise InvalidProblemError(
                    f"profile: mapping style {mapping!r} needs 'num_devices' (how many devices share the {S} stages)"
                )
            num_devices = S if mapping is None else max(mapping, default=-1) + 1
        if mapping is None:
            if S != num_devices:
                raise InvalidProblemError(
                    f"profile: {S} stages on {num_devices} devices need a 'mapping' ('loop', 'v' or a list)"
                )
            stage_map: tuple[int, ...] = tuple(range(S))
        elif isinstance(mapping, str):
            stage_map = stage_mapping(mapping, num_devices, S)
        else:
            stage_map = tuple(mapping)
        fmem = self.memory_units()
        kwargs: dict[str, Any] = {
            "forward": list(self.units("F")),
            "backward": list(self.units("B")),
            "forward_memory": list(fmem),
            "memory": memory,
        }
        if split_backward:
            kwargs.update(split_backward=True, input_grad=list(self.units("I")), weight_grad=list(self.units("W")))
        problem = stage_pipeline(
            list(stage_map),
            num_devices,
            num_microbatches,
            name=name or f"profiled-{S}st-{num_devices}dev-m{num_microbatches}",
            **kwargs,
        ).with_(time_unit_s=self.time_unit_s, memory_unit_bytes=self.memory_unit_bytes)
        if microbatch_sizes is None or all(n == self.sizes[0] for n in microbatch_sizes):
            return problem
        overrides = []
        kinds = ("F", "I", "W") if split_backward else ("F", "B")
        for m, n in enumerate(microbatch_sizes):
            if n == self.sizes[0]:
                continue
            for kind in kinds:
                for s, d in enumerate(self.units(kind, n)):
                    overrides.append((f"{kind}{s}", m, (d,)))
        return problem.with_(duration_overrides=overrides)

    def table(self) -> str:
        """The figures as a text table (milliseconds, KiB)."""
        lines = [
            f"profile: {self.num_stages} stages, median of {self.repeats} runs; time unit {self.time_unit_s:g} s, "
            f"memory unit {self.memory_unit_bytes} B",
            f"{'size':>5} {'stage':>5} {'F ms':>8} {'B ms':>8} {'I ms':>8} {'W ms':>8} {'act KiB':>9} {'param KiB':>10}",
        ]
        for n in self.sizes:
            for r in self.stages[n]:
                lines.append(
                    f"{n:>5} {r.stage:>5} {1e3 * r.forward_s:>8.3f} {1e3 * r.backward_s:>8.3f} "
                    f"{1e3 * r.input_grad_s:>8.3f} {1e3 * r.weight_grad_s:>8.3f} "
                    f"{r.activation_bytes / 1024:>9.1f} {r.parameter_bytes / 1024:>10.1f}"
                )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            **({} if self.model_spec is None else {"model_spec": self.model_spec}),
            "sizes": list(self.sizes),
            "repeats": self.repeats,
            "time_unit_s": self.time_unit_s,
            "memory_unit_bytes": self.memory_unit_bytes,
            "stages": {str(n): [r.to_dict() for r in rows] for n, rows in self.stages.items()},
        }


def _rows_of(batch: Any, n: int) -> Any:
    return batch[:n]


def profile(
    model_stages: Sequence[Any],
    sample_batch: Any,
    *,
    target: Any = None,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    sizes: Sequence[int] | None = None,
    repeats: int = 5,
    warmup: int = 1,
    time_unit_s: float | None = None,
    memory_unit_bytes: int = 1024,
    threads: int | None = 1,
    model_spec: str | None = None,
    selective: bool | Sequence[bool] = False,
) -> Profile:
    """Measure every stage's F, B, I, W times and activation memory.

    Parameters
    ----------
    model_stages:
        One ``nn.Module`` per stage (stage ``s``'s output is stage
        ``s+1``'s input).
    sample_batch:
        Input of stage 0 with batch dimension 0; micro-batches of each size
        are its first rows.
    target, loss_fn:
        Target rows and a loss for the last stage (its forward then includes
        the loss, as in the runtime). Without them, the last stage's output
        gradient is a fixed random tensor.
    sizes:
        Micro-batch sizes to profile (default: the whole sample).
    repeats, warmup:
        Timed runs (the median is kept) and untimed runs before them.
    time_unit_s, memory_unit_bytes:
        Units of the integer figures (see the module docstring).
    threads:
        ``torch.set_num_threads`` while measuring (restored afterwards);
        default 1, as each rank of :func:`~schedsearch.runtime.run` uses.
        None keeps the current setting.
    model_spec:
        The spec of the built-in model whose stages these are (recorded in
        the profile as :attr:`Profile.model_spec`), or None.
    selective:
        Also measure the stages under per-operator selective checkpointing
        (:func:`op_checkpoint_policy`, the rule of torchtitan's
        ``activation_checkpoint:selective``): what one micro-batch then holds
        and what its backward recomputes. One flag for every stage, or one
        per stage (torchtitan wraps the transformer blocks only).
    """
    tp = pipelining_internals()
    torch = tp.torch
    if not model_stages:
        raise InvalidProblemError("profile: 'model_stages' must hold at least one stage")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise InvalidProblemError(f"profile: 'repeats' must be an integer >= 1, got {repeats!r}")
    if isinstance(memory_unit_bytes, bool) or not isinstance(memory_unit_bytes, int) or memory_unit_bytes < 1:
        raise InvalidProblemError(f"profile: 'memory_unit_bytes' must be an integer >= 1, got {memory_unit_bytes!r}")
    available = int(sample_batch.shape[0])
    sizes = tuple(sizes) if sizes is not None else (available,)
    for n in sizes:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= available:
            raise InvalidProblemError(
                f"profile: micro-batch size must be an integer in 1..{available} (the sample's rows), got {n!r}"
            )
    if (target is None) != (loss_fn is None):
        raise InvalidProblemError("profile: give both 'target' and 'loss_fn', or neither")
    if isinstance(selective, bool):
        selective = [selective] * len(model_stages)
    selective = list(selective)
    if len(selective) != len(model_stages) or not all(isinstance(flag, bool) for flag in selective):
        raise InvalidProblemError(
            f"profile: 'selective' must be one flag or one per stage ({len(model_stages)}), got {selective!r}")
    by_size: dict[int, tuple[StageProfile, ...]] = {}
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        for n in dict.fromkeys(sizes):
            by_size[n] = _profile_size(
                tp, torch, list(model_stages), _rows_of(sample_batch, n),
                None if target is None else _rows_of(target, n), loss_fn, repeats, warmup, selective,
            )
    finally:
        torch.set_num_threads(before)
    if time_unit_s is None:
        shortest = min(
            r.seconds(k) for rows in by_size.values() for r in rows for k in ("F", "B")
        )
        time_unit_s = choose_time_unit(shortest)
    elif not time_unit_s > 0:
        raise InvalidProblemError(f"profile: 'time_unit_s' must be > 0, got {time_unit_s!r}")
    return Profile(
        sizes=tuple(dict.fromkeys(sizes)),
        stages=by_size,
        repeats=repeats,
        time_unit_s=float(time_unit_s),
        memory_unit_bytes=memory_unit_bytes,
        model_spec=model_spec,
    )


def _median_time(fn: Callable[[], Any], prepare: Callable[[], Any], repeats: int, warmup: int) -> float:
    times = []
    for k in range(warmup + repeats):
        state = prepare()
        t0 = time.perf_counter()
        fn(state)
        dt = time.perf_counter() - t0
        if k >= warmup:
            times.append(dt)
    return statistics.median(times)


def _profile_size(
    tp: Any, torch: Any, stages: list[Any], inputs: Any, target: Any, loss_fn: Any, repeats: int, warmup: int,
    selective: Sequence[bool],
) -> tuple[StageProfile, ...]:
    out_rows = []
    x = inputs
    S = len(stages)
    gen = torch.Generator()
    gen.manual_seed(0)
    for s, module in enumerate(stages):
        last = s == S - 1
        params = list(module.parameters())
        param_ptrs = {p.untyped_storage().data_ptr() for p in params}
        is_float = torch.is_floating_point(x)
        leaf = x.detach().requires_grad_(is_float and s > 0) if is_float else x

        def forward(inp: Any = leaf, module: Any = module, last: bool = last) -> tuple[Any, Any]:
            out = module(inp)
            loss = loss_fn(out, target) if (last and loss_fn is not None) else None
            return out, loss

        with torch.no_grad():
            sample_out = module(leaf)
        grad_out = None if (last and loss_fn is not None) else torch.randn(
            sample_out.shape, generator=gen, dtype=sample_out.dtype
        )

        def clear(module: Any = module, leaf: Any = leaf) -> None:
            for p in module.parameters():
                p.grad = None
            if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                leaf.grad = None

        def run_forward(_: Any, forward: Any = forward) -> None:
            forward()

        f_s = _median_time(run_forward, clear, repeats, warmup)

        def fresh(forward: Any = forward, clear: Any = clear) -> tuple[Any, Any]:
            clear()
            out, loss = forward()
            return out, loss

        def roots(state: tuple[Any, Any], grad_out: Any = grad_out) -> tuple[Any, Any]:
            out, loss = state
            return (loss, None) if loss is not None else (out, grad_out)

        def full(state: Any, leaf: Any = leaf) -> None:
            root, g = roots(state)
            tp.stage_backward(root, g, [leaf])

        b_s = _median_time(full, fresh, repeats, warmup)

        # split backward, as the runtime runs it (stage 0: I does nothing, W is the whole backward)
        i_times, w_times = [], []
        for k in range(warmup + repeats):
            state = fresh()
            root, g = roots(state)
            t0 = time.perf_counter()
            groups = None
            if s > 0:
                _, groups = tp.stage_backward_input([root], None if g is None else [g], [leaf], iter(params))
            t1 = time.perf_counter()
            if s > 0:
                tp.stage_backward_weight(iter(params), groups)
            else:
                tp.stage_backward(root, g, [leaf])
            t2 = time.perf_counter()
            if k >= warmup:
                i_times.append(t1 - t0)
                w_times.append(t2 - t1)
        clear()

        # activation memory: distinct storages kept for backward, input and output, no parameters
        storages: dict[int, int] = {}

        def note(t: Any) -> None:
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                if st.data_ptr() not in param_ptrs and st.data_ptr() != 0:
                    storages[st.data_ptr()] = st.nbytes()

        def pack(t: Any) -> Any:
            note(t)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out, _ = forward()
        note(leaf)
        note(out)
        activation = sum(storages.values())
        sent = out.numel() * out.element_size()  # what the runtime sends to the next stage
        clear()
        held = recompute = None
        if selective[s]:
            loss_of = (lambda out, target=target: loss_fn(out, target)) if last and loss_fn is not None else None
            held, recompute = _selective_figures(tp, torch, module, leaf, loss_of, roots, clear, param_ptrs, b_s,
                                                 f_s, repeats, warmup)
        out_rows.append(
            StageProfile(
                stage=s,
                microbatch_size=int(inputs.shape[0]),
                forward_s=f_s,
                backward_s=b_s,
                input_grad_s=statistics.median(i_times),
                weight_grad_s=statistics.median(w_times),
                activation_bytes=int(activation),
                parameter_bytes=int(sum(p.numel() * p.element_size() for p in params)),
                send_bytes=int(sent),
                selective_bytes=held,
                selective_recompute_s=recompute,
            )
        )
        x = out.detach()
    return tuple(out_rows)


class OpCheckpointRule:
    """Per-operator selective checkpointing as torchtitan 0.3.0 applies it to a block
    (``activation_checkpoint:selective``): the outputs of compute-intensive
    operators (matrix products, attention, convolutions, as torch's
    partitioner lists them) and of ``max``, ``linear`` and ``topk`` are
    saved, except every second matrix product (``mm`` or ``linear``, counted
    separately in the forward and in its recomputation); everything else is
    recomputed in the backward.

    :meth:`saves` answers for one operator, in the order the block runs
    them; a rule counts one forward (or one recomputation): make one per
    checkpointed call.
    """

    def __init__(self, torch: Any) -> None:
        aten = torch.ops.aten
        self._mm = {aten.mm.default, aten.linear.default}
        self._save = set(self._mm) | _compute_intensive(torch)
        for name in ("max", "topk", "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_attention_math",
                     "_scaled_dot_product_fused_attention_overrideable"):
            op = getattr(aten, name, None)
            if op is not None and hasattr(op, "default"):
                self._save.add(op.default)
        self._count = {False: 0, True: 0}

    def saves(self, func: Any, recompute: bool = False) -> bool:
        if func in self._mm:
            self._count[recompute] += 1
            return self._count[recompute] % 2 == 1
        return func in self._save


def _compute_intensive(torch: Any) -> set:
    """The operators torch's partitioner counts as compute-intensive (a fixed list where it does not say)."""
    try:
        from torch._functorch.partitioners import get_default_op_list

        return {op.default for op in get_default_op_list().compute_intensive_ops}
    except (ImportError, AttributeError):  # pragma: no cover - the list of torch 2.13 / 2.14
        aten = torch.ops.aten
        names = ("mm", "addmm", "bmm", "convolution", "convolution_backward", "_scaled_mm",
                 "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                 "_flash_attention_forward", "_efficient_attention_forward", "upsample_bilinear2d")
        return {getattr(aten, n).default for n in names if hasattr(aten, n)}


def op_checkpoint_policy(torch: Any) -> Callable[[], Any]:
    """A ``context_fn`` for ``torch.utils.checkpoint.checkpoint`` applying :class:`OpCheckpointRule` (a fresh
    rule per checkpointed call)."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    def context() -> Any:
        rule = OpCheckpointRule(torch)

        def policy(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
            return (CheckpointPolicy.MUST_SAVE if rule.saves(func, ctx.is_recompute)
                    else CheckpointPolicy.PREFER_RECOMPUTE)

        return create_selective_checkpoint_contexts(policy)

    return context


def _selective_figures(tp: Any, torch: Any, module: Any, leaf: Any, loss_of: Callable[[Any], Any] | None,
                       roots: Callable[[Any], Any], clear: Callable[[], None], param_ptrs: set[int],
                       backward_s: float, forward_s: float, repeats: int, warmup: int) -> tuple[int, float]:
    """What one micro-batch of ``module`` holds under :class:`OpCheckpointRule` (its input and the distinct
    storages of the outputs the rule saves, parameters excluded) and the seconds its backward recomputes
    (the median backward of the checkpointed forward less the plain one, within ``[0, forward_s]``)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    from torch.utils.checkpoint import checkpoint

    kept: list[Any] = []  # alive until counted: a freed storage's address may be reused by the next one

    class Saved(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.rule = OpCheckpointRule(torch)

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if self.rule.saves(func):
                kept.extend(t for t in tree_leaves(out) if isinstance(t, torch.Tensor))
            return out

    with torch.no_grad(), Saved():
        module(leaf)
    storages: dict[int, int] = {}
    for t in [leaf, *kept]:
        st = t.untyped_storage()
        if st.data_ptr() not in param_ptrs and st.data_ptr() != 0:
            storages[st.data_ptr()] = st.nbytes()
    kept.clear()
    held = sum(storages.values())

    context = op_checkpoint_policy(torch)

    def fresh() -> Any:
        clear()
        out = checkpoint(module, leaf, use_reentrant=False, context_fn=context)
        return out, None if loss_of is None else loss_of(out)

    def backward(state: Any) -> None:
        root, g = roots(state)
        tp.stage_backward(root, g, [leaf])

    b_sel = _median_time(backward, fresh, repeats, warmup)
    clear()
    return int(held), min(forward_s, max(0.0, b_sel - backward_s))
