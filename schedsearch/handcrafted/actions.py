"""Pipeline actions and how they map onto a problem's blocks.

Handcrafted schedules are written as per-device lists of *actions*
(:class:`~schedsearch.actions.Action`, the vocabulary of the papers and of
PyTorch's pipelining CSV):

* ``Action(s, "F", m)``: forward of stage ``s``, micro-batch ``m``;
* ``Action(s, "B", m)``: full backward (a ``B`` block; or, when the problem
  splits backwards, its ``I`` and ``W`` run as one ``"B"`` group if the
  problem declares it, else one after the other);
* ``Action(s, "I", m)`` / ``Action(s, "W", m)``: input / weight gradient;
* ``Action.overlap(f, b)``: an overlapped forward and full backward (an
  ``"F&B"`` group).

An action's ``pipe`` names its pipeline by the block-name suffix (``""``
for a single pipeline, ``".down"`` / ``".up"`` for bidirectional ones).

:func:`pipeline_view` reads a problem built by
:mod:`schedsearch.placements` back into stages; :func:`run_actions` turns
action lists into a validated, as-soon-as-possible
:class:`~schedsearch.schedule.Schedule`. The other way round,
:func:`group_action` names the runtime's action of an overlapped group of
tasks and :func:`planned_actions` a schedule's tasks as the runtime's
actions in time: the CSV export, the runtime's trace and the
measured-over-predicted chart read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from schedsearch.actions import COMPUTE_KINDS, Action, Kind, kind_order
from schedsearch.deadline import checkpoint
from schedsearch.errors import InvalidProblemError, PlanError, SchedSearchError
from schedsearch.handcrafted.simulate import Entry, Group, schedule_from_orders
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance

#: The compute kinds' letters, as a block's kind spells them.
_LETTERS = tuple(k.value for k in COMPUTE_KINDS)

__all__ = ["Action", "StageBlocks", "PipelineView", "PlannedActions", "group_action", "pipeline_view", "planned_actions",
           "planned_seconds", "run_actions", "seconds_per_unit"]


@attrs.frozen(kw_only=True)
class StageBlocks:
    """The blocks of one stage of one pipeline."""

    stage: int
    device: str
    forward: str
    backward: str | None = None
    input_grad: str | None = None
    weight_grad: str | None = None

    @property
    def split(self) -> bool:
        return self.input_grad is not None


@attrs.frozen(kw_only=True)
class PipelineView:
    """The pipelines of a problem: suffix -> stages in order.

    Built by :func:`pipeline_view`; it maps actions (stage, kind,
    micro-batch) to the problem's blocks.

    Examples
    --------
    >>> from schedsearch.handcrafted import pipeline_view
    >>> from schedsearch.placements import chimera
    >>> view = pipeline_view(chimera(2, 2))
    >>> sorted(view.pipelines), view.mapping(".up"), view.training
    (['.down', '.up'], (1, 0), True)
    """

    problem: Problem
    pipelines: Mapping[str, tuple[StageBlocks, ...]]

    def stages(self, pipe: str = "") -> tuple[StageBlocks, ...]:
        try:
            return self.pipelines[pipe]
        except KeyError:
            raise InvalidProblemError(
                f"problem {self.problem.name!r} has no pipeline {pipe!r} (it has {sorted(self.pipelines)})"
            ) from None

    def mapping(self, pipe: str = "") -> tuple[int, ...]:
        """Device index (cluster rank) of each stage of ``pipe``."""
        ranks = {d: i for i, d in enumerate(self.problem.cluster.device_names)}
        return tuple(ranks[s.device] for s in self.stages(pipe))

    @property
    def training(self) -> bool:
        return all(s.backward is not None or s.split for st in self.pipelines.values() for s in st)

    @property
    def split(self) -> bool:
        return any(s.split for st in self.pipelines.values() for s in st)

    def resolve(self, action: Action) -> list[Entry]:
        """The simulator entries of one action (see the module docstring)."""
        problem = self.problem
        if action.kind is Kind.OVERLAP_F_B:
            if [a.kind for a in action.sub_actions] != [Kind.FORWARD, Kind.FULL_BACKWARD]:
                raise InvalidProblemError(f"action {action}: an overlapped pair is a forward and a full backward")
            fa, ba = action.sub_actions
            f, b = self._blocks(fa), self._blocks(ba)
            members = [(f.forward, fa.microbatch)]
            if b.split:
                members += [(b.input_grad, ba.microbatch), (b.weight_grad, ba.microbatch)]
            else:
                members.append((b.backward, ba.microbatch))
            if problem.overlap_for(name for name, _ in members) is None:
                raise InvalidProblemError(
                    f"action {action}: problem {problem.name!r} declares no overlap of blocks "
                    f"{[name for name, _ in members]} (build it with overlap_forward_backward=...)"
                )
            return [Group(members=members, tag="F&B")]
        st = self._blocks(action)
        m = action.microbatch
        if action.kind is Kind.FORWARD:
            return [(st.forward, m)]
        if action.kind is Kind.FULL_BACKWARD:
            if st.backward is not None:
                return [(st.backward, m)]
            if st.split:
                if problem.overlap_for((st.input_grad, st.weight_grad)) is not None:
                    return [Group(members=[(st.input_grad, m), (st.weight_grad, m)], tag="B")]
                return [(st.input_grad, m), (st.weight_grad, m)]
            raise InvalidProblemError(f"action {action}: stage {action.stage} has no backward (inference problem)")
        if not st.split:
            raise InvalidProblemError(
                f"action {action}: stage {action.stage} has no split backward (build the problem with split_backward=True)"
            )
        return [(st.input_grad if action.kind is Kind.BACKWARD_INPUT else st.weight_grad, m)]

    def _blocks(self, action: Action) -> StageBlocks:
        """The blocks of a compute action's stage (raising when it names none, or no micro-batch)."""
        if not action.kind.is_compute:
            raise InvalidProblemError(f"action {action}: 'kind' must be one of {_LETTERS}")
        if action.microbatch is None:
            raise InvalidProblemError(f"action {action}: names no micro-batch")
        stages = self.stages(action.pipe)
        if not 0 <= action.stage < len(stages):
            raise InvalidProblemError(f"action {action}: stage must be in 0..{len(stages) - 1}")
        return stages[action.stage]

    def block_kinds(self) -> dict[str, tuple[Kind, int]]:
        """Block name -> (kind, stage) of every stage block of the (single) pipeline ``""``."""
        out: dict[str, tuple[Kind, int]] = {}
        for st in self.stages():
            for kind, name in zip(COMPUTE_KINDS, (st.forward, st.backward, st.input_grad, st.weight_grad)):
                if name is not None:
                    out[name] = (kind, st.stage)
        return out


def check_v_mapping(view: PipelineView, what: str, hint: str = "") -> int:
    """The number of devices ``p`` of a V placement (2 stages per device in the ``'v'`` mapping), or the error naming it.

    Examples
    --------
    >>> from schedsearch.handcrafted.actions import check_v_mapping, pipeline_view
    >>> from schedsearch.placements import vshape, vshape_chunks
    >>> check_v_mapping(pipeline_view(vshape_chunks(4, 8)), "ZB-V")
    4
    >>> check_v_mapping(pipeline_view(vshape(2, 4)), "ZB-V")
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidProblemError: ZB-V: needs 2 stages per device in the 'v' mapping ([0, 1, 1, 0]), got device ranks [0, 1]
    """
    from schedsearch.placements.stages import stage_mapping

    p = len(view.problem.cluster.devices)
    mapping = view.mapping()
    want = stage_mapping("v", p, 2 * p)
    if len(mapping) != 2 * p or tuple(mapping) != want:
        raise InvalidProblemError(
            f"{what}: needs 2 stages per device in the 'v' mapping ({list(want)}), got device ranks {list(mapping)}"
            + (f" ({hint})" if hint else "")
        )
    return p


def pipeline_view(problem: Problem) -> PipelineView:
    """Read the pipelines of a problem built by :mod:`schedsearch.placements`.

    Every block with a ``stage`` and a kind in F, B, I, W named
    ``{kind}{stage}{suffix}`` belongs to pipeline ``suffix``. Each stage
    needs a forward and, for training, a full backward or an I/W pair, all
    fixed on one device. Blocks without a stage (full-shard blocks) make
    the problem not a plain pipeline.

    Examples
    --------
    >>> from schedsearch.handcrafted import pipeline_view
    >>> from schedsearch.placements import zero_bubble
    >>> view = pipeline_view(zero_bubble(2, 4))
    >>> view.mapping(), view.split
    ((0, 1), True)
    >>> view.stages()[1]
    StageBlocks(stage=1, device='d1', forward='F1', backward=None, input_grad='I1', weight_grad='W1')
    """
    found: dict[str, dict[int, dict[str, str]]] = {}
    for b in problem.graph.blocks:
        prefix = f"{b.kind}{b.stage}"
        if b.stage is None or b.kind not in _LETTERS or not b.name.startswith(prefix):
            raise InvalidProblemError(
                f"problem {problem.name!r}: block {b.name!r} (kind {b.kind!r}, stage {b.stage!r}) is not a pipeline "
                f"stage block named '{{kind}}{{stage}}{{suffix}}' with kind in {_LETTERS}"
            )
        if len(b.options) != 1 or len(b.options[0].devices) != 1:
            raise InvalidProblemError(
                f"problem {problem.name!r}: block {b.name!r} must run on exactly one device (it has options "
                f"{[o.devices for o in b.options]})"
            )
        sfx = b.name[len(prefix):]
        kinds = found.setdefault(sfx, {}).setdefault(b.stage, {})
        if b.kind in kinds:
            raise InvalidProblemError(
                f"problem {problem.name!r}: stage {b.stage} of pipeline {sfx!r} has two {b.kind} blocks"
            )
        kinds[b.kind] = b.name
    pipelines: dict[str, tuple[StageBlocks, ...]] = {}
    for sfx, stages in found.items():
        if sorted(stages) != list(range(len(stages))):
            raise InvalidProblemError(
                f"problem {problem.name!r}: pipeline {sfx!r} has stages {sorted(stages)}, expected 0..{len(stages) - 1}"
            )
        out = []
        for s in range(len(stages)):
            kinds = stages[s]
            if "F" not in kinds:
                raise InvalidProblemError(f"problem {problem.name!r}: stage {s} of pipeline {sfx!r} has no forward")
            if ("I" in kinds) != ("W" in kinds) or ("B" in kinds and "I" in kinds):
                raise InvalidProblemError(
                    f"problem {problem.name!r}: stage {s} of pipeline {sfx!r} must have a B block or an I and a W "
                    f"block, got {sorted(kinds)}"
                )
            devs = {problem.graph.block(n).options[0].devices[0] for n in kinds.values()}
            if len(devs) != 1:
                raise InvalidProblemError(
                    f"problem {problem.name!r}: the blocks of stage {s} of pipeline {sfx!r} run on several devices {sorted(devs)}"
                )
            out.append(
                StageBlocks(stage=s, device=devs.pop(), forward=kinds["F"], backward=kinds.get("B"),
                            input_grad=kinds.get("I"), weight_grad=kinds.get("W"))
            )
        pipelines[sfx] = tuple(out)
    return PipelineView(problem=problem, pipelines=pipelines)


def run_actions(view: PipelineView, orders: Mapping[int, Sequence[Action]], *, name: str) -> Schedule:
    """Validated ASAP schedule of per-device action lists (devices by cluster rank).

    Handcrafted schedules are written this way: one list of actions per
    device, timed as soon as possible by
    :func:`~schedsearch.handcrafted.schedule_from_orders`.

    Examples
    --------
    1F1B on two devices and two micro-batches, by hand:

    >>> from schedsearch.actions import Action
    >>> from schedsearch.handcrafted import pipeline_view, run_actions
    >>> from schedsearch.placements import vshape
    >>> view = pipeline_view(vshape(2, 2))
    >>> orders = {
    ...     0: [Action(0, "F", 0), Action(0, "F", 1), Action(0, "B", 0), Action(0, "B", 1)],
    ...     1: [Action(1, "F", 0), Action(1, "B", 0), Action(1, "F", 1), Action(1, "B", 1)],
    ... }
    >>> print(run_actions(view, orders, name="1F1B by hand"))
    Schedule '1F1B by hand': 8 tasks, 0 transfers, makespan 9
    """
    devices = view.problem.cluster.device_names
    entries: dict[str, list[Entry]] = {}
    # (pipe, stage, kind) -> the block names an action of it runs, the same for every micro-batch, once one
    # such action has resolved to plain task keys (None: it resolves to a group, resolved each time)
    names: dict[tuple[str, int, Kind], tuple[str, ...] | None] = {}
    for rank, actions in orders.items():
        seq: list[Entry] = []
        for a in actions:
            m = a.microbatch
            shape = (a.pipe, a.stage, a.kind)
            blocks = names.get(shape, ()) if m is not None else None
            if blocks:
                seq.extend([(b, m) for b in blocks])
                continue
            got = view.resolve(a)
            if blocks == () and m is not None:
                names[shape] = tuple(e[0] for e in got) if all(type(e) is tuple for e in got) else None
            seq.extend(got)
        entries[devices[rank]] = seq
        checkpoint(len(seq))

    return schedule_from_orders(view.problem, entries, name=name)


# --------------------------------------------------------------------------
# A schedule's tasks as the runtime's actions
# --------------------------------------------------------------------------


def group_action(members: list[TaskInstance], by_block: dict[str, tuple[Kind, int]], what: str,
                 error: type[SchedSearchError]) -> Action:
    """The runtime's action of an overlapped group of tasks: a full backward, or a forward overlapped with one.

    An input and a weight gradient of one stage and micro-batch fused into
    one group are that stage's full backward; a forward grouped with a full
    backward (or with such a fused pair) is an ``OVERLAP_F_B`` pair, the
    forward first. Any other group raises ``error`` naming its tasks.
    """
    parts = sorted((by_block[m.block] + (m.microbatch,) for m in members), key=lambda x: kind_order(x[0]))
    kinds = [k for k, _, _ in parts]
    label = ", ".join(f"{m.block}#{m.microbatch}" for m in members)

    def full_backward(rest: list[tuple[Kind, int, int]]) -> Action | None:
        if [k for k, _, _ in rest] == [Kind.FULL_BACKWARD]:
            return Action(rest[0][1], Kind.FULL_BACKWARD, rest[0][2])
        if [k for k, _, _ in rest] == [Kind.BACKWARD_INPUT, Kind.BACKWARD_WEIGHT] and rest[0][1:] == rest[1][1:]:
            return Action(rest[0][1], Kind.FULL_BACKWARD, rest[0][2])
        return None

    if kinds[0] is Kind.FORWARD and len(parts) > 1:
        back = full_backward(parts[1:])
        if back is not None:
            return Action.overlap(Action(parts[0][1], Kind.FORWARD, parts[0][2]), back)
    else:
        back = full_backward(parts)
        if back is not None:
            return back
    raise error(
        f"{what}: the overlapped group [{label}] is neither a full backward (I and W of one stage and "
        f"micro-batch) nor a forward overlapped with a full backward"
    )


@attrs.frozen(kw_only=True)
class PlannedActions:
    """A schedule's compute actions as the runtime runs them, in time.

    ``spans[action]``: the action's planned ``(start, end)`` in time units
    (the members of an overlapped pair, which the runtime runs one after
    the other, share the group's interval in proportion to their own
    durations, the forward first); ``tasks[(block, mb)]``: the action that
    runs the task; ``rank_of[stage]``: the stage's rank; ``makespan``: time
    units.
    """

    spans: Mapping[Action, tuple[float, float]]
    tasks: Mapping[tuple[str, int], Action]
    rank_of: tuple[int, ...]
    makespan: int


def planned_actions(problem: Problem, schedule: Schedule) -> PlannedActions:
    """Map ``schedule``'s tasks to the runtime's compute actions (see :class:`PlannedActions`).

    Raises :class:`PlanError` for a task that is no stage block of the
    problem's one pipeline, or an overlapped group the runtime has no
    action for (see :func:`group_action`).
    """
    view = pipeline_view(problem)
    kind_of = view.block_kinds()
    devices = list(problem.cluster.device_names)
    rank_of = tuple(devices.index(d) for d in (problem.graph.by_name()[st.forward].options[0].devices[0]
                                                for st in view.stages()))
    groups: dict[tuple, list[TaskInstance]] = {}
    spans: dict[Action, tuple[float, float]] = {}
    tasks: dict[tuple[str, int], Action] = {}
    for t in schedule.tasks:
        if t.block not in kind_of:
            raise PlanError(f"planned actions: task {t.block!r} (micro-batch {t.microbatch}) is not a stage block")
        if t.group_key is not None:
            groups.setdefault(t.group_key, []).append(t)
            continue
        kind, stage = kind_of[t.block]
        action = Action(stage, kind, t.microbatch)
        tasks[t.key] = action
        spans[action] = (float(t.start), float(t.end))
    for members in groups.values():
        action = group_action(members, kind_of, "planned actions", PlanError)
        start, end = members[0].start, members[0].end
        if action.kind is not Kind.OVERLAP_F_B:  # an input and weight gradient fused into one full backward
            spans[action] = (float(start), float(end))
            for m in members:
                tasks[m.key] = action
            continue
        # a forward overlapped with a backward: the runtime runs the forward, then the backward
        forward, backward = action.sub_actions
        fwd = [m for m in members if kind_of[m.block][0] is Kind.FORWARD]
        back = [m for m in members if kind_of[m.block][0] is not Kind.FORWARD]
        parts = [(forward, sum(min(problem.durations(m.block, 0)) for m in fwd), fwd),
                 (backward, sum(min(problem.durations(m.block, 0)) for m in back), back)]
        total = sum(p[1] for p in parts) or 1.0
        at = float(start)
        for part, d, ms in parts:
            length = (end - start) * d / total
            spans[part] = (at, at + length)
            for m in ms:
                tasks[m.key] = part
            at += length
    return PlannedActions(spans=spans, tasks=tasks, rank_of=rank_of, makespan=schedule.makespan)


def planned_seconds(problem: Problem, schedule: Schedule) -> dict[Action, float]:
    """Planned duration in seconds of every compute action (for emulation)."""
    unit = seconds_per_unit(problem, "emulation")
    planned = planned_actions(problem, schedule)
    return {k: (b - a) * unit for k, (a, b) in planned.spans.items()}


def seconds_per_unit(problem: Problem, what: str) -> float:
    """The problem's ``time_unit_s``; :class:`PlanError` (naming ``what`` needs it) when it has none."""
    if problem.time_unit_s is None or not problem.time_unit_s > 0:
        raise PlanError(
            f"{what}: problem {problem.name!r} has no time unit in seconds ('time_unit_s' is "
            f"{problem.time_unit_s!r}); plan it from times in milliseconds (schedsearch plan, profile) or set it"
        )
    return float(problem.time_unit_s)


def _deprecated_act(kind: str, stage: int, mb: int, pipe: str = "") -> Action:
    """``Act(kind, stage, mb, pipe)`` of earlier releases: the :class:`~schedsearch.actions.Action`
    ``Action(stage, kind, mb, pipe=pipe)``."""
    import warnings

    warnings.warn("schedsearch.handcrafted.Act is deprecated: use schedsearch.actions.Action(stage, kind, "
                  "microbatch, pipe=...)", DeprecationWarning, stacklevel=2)
    return Action(stage, kind, mb, pipe=pipe)


def _deprecated_pair(forward: Action, backward: Action) -> Action:
    """``Pair(forward, backward)`` of earlier releases: ``Action.overlap(forward, backward)``."""
    import warnings

    warnings.warn("schedsearch.handcrafted.Pair is deprecated: use schedsearch.actions.Action.overlap(forward, "
                  "backward)", DeprecationWarning, stacklevel=2)
    return Action.overlap(forward, backward)


#: names of earlier releases, served with a DeprecationWarning when called
_DEPRECATED = {"Act": _deprecated_act, "Pair": _deprecated_pair}


def __getattr__(name: str) -> object:
    if name in _DEPRECATED:
        return _DEPRECATED[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
