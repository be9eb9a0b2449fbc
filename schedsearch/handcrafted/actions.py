"""Pipeline actions and how they map onto a problem's blocks.

Handcrafted schedules are written as per-device lists of *actions*, the
vocabulary of the papers and of PyTorch's pipelining CSV:

* ``Act("F", s, m)``: forward of stage ``s``, micro-batch ``m``;
* ``Act("B", s, m)``: full backward (a ``B`` block; or, when the problem
  splits backwards, its ``I`` and ``W`` run as one ``"B"`` group if the
  problem declares it, else one after the other);
* ``Act("I", s, m)`` / ``Act("W", s, m)``: input / weight gradient;
* ``Pair(F, B)``: an overlapped forward-and-backward (an ``"F&B"`` group).

``pipe`` names a pipeline by its block-name suffix (``""`` for a single
pipeline, ``".down"`` / ``".up"`` for bidirectional ones).

:func:`pipeline_view` reads a problem built by
:mod:`schedsearch.placements` back into stages; :func:`run_actions` turns
action lists into a validated, as-soon-as-possible
:class:`~schedsearch.schedule.Schedule`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.simulate import Entry, Group, schedule_from_orders
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["Act", "Pair", "StageBlocks", "PipelineView", "pipeline_view", "run_actions", "Action"]

_KINDS = ("F", "B", "I", "W")


@attrs.frozen
class Act:
    """One pipeline action: ``kind`` in F, B, I, W; ``stage``; micro-batch ``mb``; pipeline suffix ``pipe``.

    It prints as the papers and PyTorch's pipelining CSV write it: stage,
    kind, micro-batch.

    Examples
    --------
    >>> from schedsearch.handcrafted import Act
    >>> print(Act("F", 2, 5), Act("B", 0, 1, ".up"))
    2F5 0B1.up
    """

    kind: str
    stage: int
    mb: int
    pipe: str = ""

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{self.mb}{self.pipe}"


@attrs.frozen
class Pair:
    """An overlapped forward (``forward``) and full backward (``backward``) on one device.

    DualPipe's ``F&B`` step: the problem must declare the matching overlap
    (see :func:`~schedsearch.placements.dualpipe`).

    Examples
    --------
    >>> from schedsearch.handcrafted import Act, Pair
    >>> print(Pair(Act("F", 0, 1), Act("B", 1, 0)))
    (0F1;1B0)
    """

    forward: Act
    backward: Act

    def __str__(self) -> str:
        return f"({self.forward};{self.backward})"


Action = Act | Pair


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
        if isinstance(action, Pair):
            f = self._blocks(action.forward)
            if action.forward.kind != "F" or action.backward.kind != "B":
                raise InvalidProblemError(f"action {action}: an overlapped pair is a forward and a full backward")
            b = self._blocks(action.backward)
            members = [(f.forward, action.forward.mb)]
            if b.split:
                members += [(b.input_grad, action.backward.mb), (b.weight_grad, action.backward.mb)]
            else:
                members.append((b.backward, action.backward.mb))
            if problem.overlap_for(name for name, _ in members) is None:
                raise InvalidProblemError(
                    f"action {action}: problem {problem.name!r} declares no overlap of blocks "
                    f"{[name for name, _ in members]} (build it with overlap_forward_backward=...)"
                )
            return [Group(members=members, tag="F&B")]
        st = self._blocks(action)
        m = action.mb
        if action.kind == "F":
            return [(st.forward, m)]
        if action.kind == "B":
            if st.backward is not None:
                return [(st.backward, m)]
            if st.split:
                if problem.overlap_for((st.input_grad, st.weight_grad)) is not None:
                    return [Group(members=[(st.input_grad, m), (st.weight_grad, m)], tag="B")]
                return [(st.input_grad, m), (st.weight_grad, m)]
            raise InvalidProblemError(f"action {action}: stage {action.stage} has no backward (inference problem)")
        if action.kind in ("I", "W"):
            if not st.split:
                raise InvalidProblemError(
                    f"action {action}: stage {action.stage} has no split backward (build the problem with split_backward=True)"
                )
            return [(st.input_grad if action.kind == "I" else st.weight_grad, m)]
        raise InvalidProblemError(f"action {action}: 'kind' must be one of {_KINDS}")

    def _blocks(self, act: Act) -> StageBlocks:
        stages = self.stages(act.pipe)
        if not 0 <= act.stage < len(stages):
            raise InvalidProblemError(f"action {act}: stage must be in 0..{len(stages) - 1}")
        return stages[act.stage]


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
        if b.stage is None or b.kind not in _KINDS or not b.name.startswith(prefix):
            raise InvalidProblemError(
                f"problem {problem.name!r}: block {b.name!r} (kind {b.kind!r}, stage {b.stage!r}) is not a pipeline "
                f"stage block named '{{kind}}{{stage}}{{suffix}}' with kind in {_KINDS}"
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

    >>> from schedsearch.handcrafted import Act, pipeline_view, run_actions
    >>> from schedsearch.placements import vshape
    >>> view = pipeline_view(vshape(2, 2))
    >>> orders = {
    ...     0: [Act("F", 0, 0), Act("F", 0, 1), Act("B", 0, 0), Act("B", 0, 1)],
    ...     1: [Act("F", 1, 0), Act("B", 1, 0), Act("F", 1, 1), Act("B", 1, 1)],
    ... }
    >>> print(run_actions(view, orders, name="1F1B by hand"))
    Schedule '1F1B by hand': 8 tasks, 0 transfers, makespan 9
    """
    devices = view.problem.cluster.device_names
    entries: dict[str, list[Entry]] = {}
    for rank, actions in orders.items():
        seq: list[Entry] = []
        for a in actions:
            seq.extend(view.resolve(a))
        entries[devices[rank]] = seq
    return schedule_from_orders(view.problem, entries, name=name)
