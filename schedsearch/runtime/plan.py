"""Execution plans: compute-only pipeline CSVs, read and checked without torch.

A *plan* is what PyTorch's pipeline runtime (``torch.distributed.pipelining``,
``_PipelineScheduleRuntime._load_csv(path, format="compute_only")``) loads:
one CSV row per rank, one cell per action, run left to right. A cell is

* empty (the rank idles for one slot; the runtime skips it),
* an action ``{stage}{kind}{micro-batch}`` with kind ``F`` (forward), ``B``
  (full backward), ``I`` (input gradient) or ``W`` (weight gradient), e.g.
  ``3F0``, ``7B3``,
* an overlapped group ``({a};{b})OVERLAP_F_B`` (DualPipe's forward and
  backward pair): the runtime runs its members one after the other, in the
  written order, once all of them are ready.

The cells' grammar, :class:`~schedsearch.actions.Action` and
:class:`~schedsearch.actions.Cell` are those of :mod:`schedsearch.actions`,
which the CSV export writes with; :func:`parse_plan` reads the rows through
its parser.

The stage-to-rank map is implicit in the CSV: a stage belongs to the row its
actions are written in. :func:`parse_plan` recovers it (and checks it
against a map given with the CSV, e.g. a V placement's), and the runtime
builds each rank's stages from it.

Checks (all before any process starts; the arguments are checked first, in
one place), each failing with a
:class:`~schedsearch.errors.PlanError` that names the rank, the action (its
position in the row, counted from 0 with empty cells included, so it is the
CSV column), the stage and the micro-batch:

1. syntax: only compute actions (no SEND/RECV: the runtime adds them);
2. placement: every stage on exactly one rank, stages ``0 .. S-1`` all
   present, every rank runs at least one stage;
3. counts: each stage runs exactly one forward of each micro-batch
   ``0 .. M-1`` and either one full backward or one input and one weight
   gradient; ``M`` must match the run's micro-batch count;
4. local order: on a stage's rank, ``F`` before ``B``/``I``, ``I`` before
   ``W`` (for one micro-batch);
5. progress: the ranks' orders, executed with the pipeline's cross-stage
   dependencies (``F`` of stage ``s`` after ``F`` of ``s-1``; ``B``/``I``
   of ``s`` after ``B``/``I`` of ``s+1``; an overlapped group once all its
   members are ready), finish. When they cannot, the message names the
   cycle of ranks waiting for each other, with the action each one is stuck
   at and what it waits for.

Check 5 follows the readiness rule of PyTorch's own lowering
(``_add_send_recv``), so a plan passes it exactly when PyTorch can add its
sends and receives; :mod:`schedsearch.runtime.execute` runs PyTorch's own
checks as well.

This module imports neither torch nor a solver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from schedsearch._json import SHOWN, listed, missing_numbers, short_repr
from schedsearch.errors import PlanError
from schedsearch.actions import Action, Cell, Kind, format_rows, parse_rows
from schedsearch.placements.stages import mapping_style

__all__ = [
    "Action",
    "Cell",
    "CsvPlan",
    "parse_plan",
    "read_plan",
    "check_progress",
]


def _fail(rank: int, cell: Cell, message: str) -> PlanError:
    return PlanError(f"rank {rank}, action {cell.column} {str(cell)!r}: {message}")


def _relabelled(action: Action, perm: Sequence[int]) -> Action:
    """``action`` with micro-batch ``m`` renamed ``perm[m]`` (a group's members alike)."""
    if action.kind is Kind.OVERLAP_F_B:
        return Action.overlap(*(_relabelled(a, perm) for a in action.sub_actions))
    return attrs.evolve(action, microbatch=perm[action.microbatch])

@attrs.frozen(kw_only=True)
class CsvPlan:
    """A checked compute-only plan in PyTorch's CSV action table (build it with :func:`parse_plan`).

    One row per rank, one cell per action, as ``torch.distributed.pipelining``
    reads it; named ``CsvPlan`` to tell it from the plans of a search
    (:class:`~schedsearch.search.run.Plan`). ``Plan`` is its old name, kept.

    Parameters
    ----------
    rows:
        Per rank, its non-empty cells in row order.
    num_stages, num_microbatches:
        Stages ``0 .. S-1`` and micro-batches ``0 .. M-1``.
    stage_to_rank:
        Rank of each stage.
    text:
        The CSV text the plan was read from (handed to PyTorch unchanged).
    name:
        A label (e.g. the file name).
    """

    rows: tuple[tuple[Cell, ...], ...]
    num_stages: int
    num_microbatches: int
    stage_to_rank: tuple[int, ...]
    text: str
    name: str = ""

    @property
    def num_ranks(self) -> int:
        return len(self.rows)

    def stages_of(self, rank: int) -> tuple[int, ...]:
        """Stages held by ``rank``, ascending."""
        return tuple(s for s, r in enumerate(self.stage_to_rank) if r == rank)

    @property
    def style(self) -> str | None:
        """``"loop"`` (stage ``s`` on rank ``s mod P``), ``"v"`` (down the ranks
        and back up) or None, as PyTorch names the maps."""
        return mapping_style(self.stage_to_rank, self.num_ranks)

    def actions(self) -> Iterable[tuple[int, Cell, Action]]:
        """Every (rank, cell, action), rows in order."""
        for rank, row in enumerate(self.rows):
            for cell in row:
                for a in cell.actions:
                    yield rank, cell, a

    @property
    def num_overlapped(self) -> int:
        return sum(1 for row in self.rows for c in row if c.overlapped)

    @property
    def split_backward(self) -> bool:
        """True when some backward is split into input and weight gradients."""
        return any(a.kind in ("I", "W") for _, _, a in self.actions())

    def __str__(self) -> str:
        style = self.style
        label = f"{self.name}: " if self.name else ""
        n = sum(len(c.actions) for row in self.rows for c in row)
        return (
            f"{label}{self.num_ranks} ranks, {self.num_stages} stages (stage-to-rank "
            f"{','.join(map(str, self.stage_to_rank))}{f', {style!r}' if style else ''}), "
            f"{self.num_microbatches} micro-batches, {n} actions"
            f"{f' ({self.num_overlapped} overlapped groups)' if self.num_overlapped else ''}"
        )

    def forward_order(self, stage: int) -> tuple[int, ...]:
        """Micro-batches in the order ``stage`` runs their forwards."""
        rank = self.stage_to_rank[stage]
        return tuple(a.microbatch for c in self.rows[rank] for a in c.actions if a.kind == "F" and a.stage == stage)

    def relabelled(self, new_label: Sequence[int]) -> CsvPlan:
        """The same plan with micro-batch ``m`` renamed ``new_label[m]`` (a permutation).

        Labels only bind data to the plan: running the relabelled plan on the
        micro-batches permuted alike is the same computation. Every cell
        keeps its column.
        """
        perm = tuple(new_label)
        if sorted(perm) != list(range(self.num_microbatches)):
            raise PlanError(
                f"plan: relabelling must be a permutation of 0..{self.num_microbatches - 1}, got [{listed(perm)}]"
            )
        moved = [[attrs.evolve(c, action=_relabelled(c.action, perm)) for c in row] for row in self.rows]
        return parse_plan(
            format_rows(moved),
            num_microbatches=self.num_microbatches,
            num_stages=self.num_stages,
            stage_to_rank=self.stage_to_rank,
            name=self.name,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "num_ranks": self.num_ranks,
            "num_stages": self.num_stages,
            "num_microbatches": self.num_microbatches,
            "stage_to_rank": list(self.stage_to_rank),
            "style": self.style,
        }


def read_plan(path: str | Path, **kwargs: Any) -> CsvPlan:
    """Read a compute-only CSV file and check it (see :func:`parse_plan`)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise PlanError(f"plan file {str(p)!r}: cannot be read ({exc.strerror})") from None
    kwargs.setdefault("name", p.name)
    return parse_plan(text, **kwargs)


def parse_plan(
    text: str,
    *,
    num_ranks: int | None = None,
    num_microbatches: int | None = None,
    num_stages: int | None = None,
    stage_to_rank: Sequence[int] | Mapping[int, int] | None = None,
    name: str = "",
    progress: bool = True,
) -> CsvPlan:
    """Parse a compute-only CSV and run checks 1-5 of this module.

    Parameters
    ----------
    text:
        The CSV: one row per rank.
    num_ranks:
        Processes the plan will run on; must equal the number of rows.
    num_microbatches:
        Micro-batches of the run; default: inferred (one more than the
        largest micro-batch index). When given, the plan must cover exactly
        ``0 .. num_microbatches-1``.
    num_stages:
        Stages of the model; default: one more than the largest stage index.
    stage_to_rank:
        The placement's stage-to-rank map, when it travels with the CSV;
        every stage's actions must then sit in its rank's row.
    progress:
        Run check 5 (deadlock); False leaves it to the caller (e.g. to
        compare with PyTorch's own check).

    Raises
    ------
    PlanError
        Naming the rank, action, stage and micro-batch at fault, or the
        argument that is not what it must be.
    """
    given = _arguments(num_ranks, num_microbatches, num_stages, stage_to_rank)
    rows = _rows(text, num_ranks)
    mapping = _placement(rows, num_stages, given)
    num_microbatches, seen = _counts(rows, mapping, num_microbatches)
    _local_order(seen)
    plan = CsvPlan(
        rows=tuple(rows),
        num_stages=len(mapping),
        num_microbatches=num_microbatches,
        stage_to_rank=mapping,
        # one CSV row per line: hand PyTorch exactly the rows read here
        text="\n".join(text.splitlines()[: len(rows)]) + "\n",
        name=name,
    )
    # -- 5. progress ----------------------------------------------------------
    if progress:
        check_progress(plan)
    return plan


def _arguments(num_ranks: Any, num_microbatches: Any, num_stages: Any, stage_to_rank: Any) -> tuple[int, ...] | None:
    """The door: each count None or an integer >= 1; the stage-to-rank map (as a tuple) or None."""
    for label, value in (("num_ranks", num_ranks), ("num_microbatches", num_microbatches),
                         ("num_stages", num_stages)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise PlanError(f"plan: {label!r} must be an integer >= 1, got {value!r}")
    if stage_to_rank is None:
        return None
    try:
        given = (tuple(stage_to_rank[s] for s in range(len(stage_to_rank)))
                 if isinstance(stage_to_rank, Mapping) else tuple(stage_to_rank))
    except (KeyError, TypeError):
        raise PlanError(f"plan: 'stage_to_rank' must give a rank to each stage 0, 1, ..., got "
                        f"{short_repr(stage_to_rank)}") \
            from None
    if any(isinstance(r, bool) or not isinstance(r, int) for r in given):
        raise PlanError(f"plan: 'stage_to_rank' must hold integer ranks, got {short_repr(list(given))}")
    return given


def _rows(text: str, num_ranks: int | None) -> list[tuple[Cell, ...]]:
    """1. syntax: the rows of ``text`` through the one action parser, one per rank."""
    rows = parse_rows(text, error=PlanError)
    lines = text.splitlines()
    # trailing blank lines are not ranks; a blank line inside is (and fails below)
    while rows and not rows[-1] and lines and not lines[-1]:
        rows.pop()
        lines.pop()
    if not rows:
        raise PlanError("plan: the CSV holds no rows (one row per rank is expected)")
    if num_ranks is not None and num_ranks != len(rows):
        raise PlanError(
            f"plan: it has {len(rows)} rows (one per rank) but the run uses {num_ranks} processes; "
            f"run it on {len(rows)} processes"
        )
    return rows


def _placement(rows: Sequence[Sequence[Cell]], num_stages: int | None,
               given: tuple[int, ...] | None) -> tuple[int, ...]:
    """2. placement: every stage on one rank, stages ``0 .. S-1`` all present, every rank used; the map."""
    owner: dict[int, tuple[int, Cell]] = {}
    for rank, row in enumerate(rows):
        for cell in row:
            for a in cell.actions:
                if a.stage in owner and owner[a.stage][0] != rank:
                    other_rank, other_cell = owner[a.stage]
                    raise _fail(
                        rank, cell,
                        f"stage {a.stage} also runs on rank {other_rank} (action {other_cell.column} "
                        f"{str(other_cell)!r}); PyTorch pipelining runs each stage on exactly one rank (a stage on "
                        "two devices at once, or two replicas of it, cannot run)",
                    )
                owner.setdefault(a.stage, (rank, cell))
    for rank, row in enumerate(rows):
        if not row:
            raise PlanError(f"rank {rank}: its row holds no action; every rank must run at least one stage")
    top = max(owner) + 1
    if num_stages is None:
        num_stages = top
    elif top > num_stages:
        raise _fail(*owner[top - 1], f"stage {top - 1} is out of range: the model has {num_stages} stages "
                                     f"(0..{num_stages - 1})")
    missing, count = missing_numbers(owner, num_stages)
    if count:
        raise PlanError(
            f"plan: stage{'s' if count > 1 else ''} {listed(missing, count)} appear"
            f"{'' if count > 1 else 's'} in no rank's row; every stage 0..{num_stages - 1} must run"
        )
    mapping = tuple(owner[s][0] for s in range(num_stages))
    if given is not None:
        if len(given) != num_stages:
            raise PlanError(f"plan: the stage-to-rank map gives {len(given)} stages, the CSV holds {num_stages}")
        for s, (want, got) in enumerate(zip(given, mapping)):
            if want != got:
                raise _fail(got, owner[s][1], f"stage {s} is mapped to rank {want} by the stage-to-rank map, but "
                                              f"its actions are in rank {got}'s row")
    return mapping


def _counts(rows: Sequence[Sequence[Cell]], mapping: tuple[int, ...],
            num_microbatches: int | None) -> tuple[int, dict[Action, tuple[int, Cell, int]]]:
    """3. counts: each stage runs one forward and one backward (full, or input and weight) of each micro-batch.

    Returns the micro-batch count and where each action runs: ``(rank, cell, position in the cell)``.
    """
    top_mb = max(a.microbatch for row in rows for c in row for a in c.actions) + 1
    if num_microbatches is None:
        num_microbatches = top_mb
        missing, count = missing_numbers({a.microbatch for row in rows for c in row for a in c.actions}, top_mb)
        if count:
            raise PlanError(
                f"plan: micro-batch{'es' if count > 1 else ''} {listed(missing, count)} appear"
                f"{'' if count > 1 else 's'} in no action, though micro-batch {top_mb - 1} runs; every stage runs "
                f"each micro-batch 0..M-1"
            )
    seen: dict[Action, tuple[int, Cell, int]] = {}
    for rank, row in enumerate(rows):
        for cell in row:
            for k, a in enumerate(cell.actions):
                if a.microbatch >= num_microbatches:
                    raise _fail(
                        rank, cell,
                        f"micro-batch {a.microbatch} is out of range: the run has {num_microbatches} micro-batches "
                        f"(0..{num_microbatches - 1}), the plan was made for at least {top_mb}",
                    )
                if a in seen:
                    r0, c0, _ = seen[a]
                    raise _fail(rank, cell, f"the {a.describe()} is already run at rank {r0}, action {c0.column} "
                                            f"{str(c0)!r}")
                seen[a] = (rank, cell, k)
    for s, r in enumerate(mapping):
        for m in range(num_microbatches):
            _check_stage_microbatch(seen, s, r, m, num_microbatches)
    return num_microbatches, seen


def _check_stage_microbatch(seen: Mapping[Action, tuple[int, Cell, int]], s: int, r: int, m: int,
                            num_microbatches: int) -> None:
    """Stage ``s`` (on rank ``r``) runs the forward and one backward of micro-batch ``m``."""
    if Action(s, Kind.FORWARD, m) not in seen:
        raise PlanError(
            f"rank {r}: stage {s} never runs the forward of micro-batch {m} (no action '{s}F{m}'); "
            f"the run has {num_microbatches} micro-batches and every stage runs each once"
        )
    has_b = Action(s, Kind.FULL_BACKWARD, m) in seen
    has_i = Action(s, Kind.BACKWARD_INPUT, m) in seen
    has_w = Action(s, Kind.BACKWARD_WEIGHT, m) in seen
    if has_b and (has_i or has_w):
        rank, cell, _ = seen[Action(s, Kind.BACKWARD_INPUT if has_i else Kind.BACKWARD_WEIGHT, m)]
        raise _fail(rank, cell, f"stage {s}, micro-batch {m} runs a full backward ('{s}B{m}') and a split one; use "
                                f"one or the other")
    if not has_b and not (has_i and has_w):
        if has_i or has_w:
            lacking = Kind.BACKWARD_WEIGHT if has_i else Kind.BACKWARD_INPUT
            raise PlanError(
                f"rank {r}: stage {s}, micro-batch {m} has a split backward without its "
                f"{lacking.description} (no action '{s}{lacking}{m}')"
            )
        raise PlanError(
            f"rank {r}: stage {s} never runs the backward of micro-batch {m} "
            f"(no action '{s}B{m}', nor '{s}I{m}' and '{s}W{m}')"
        )


#: 4. local order: the action of the same stage and micro-batch each kind comes after.
_AFTER = {Kind.FULL_BACKWARD: Kind.FORWARD, Kind.BACKWARD_INPUT: Kind.FORWARD, Kind.BACKWARD_WEIGHT: Kind.BACKWARD_INPUT}


def _local_order(seen: Mapping[Action, tuple[int, Cell, int]]) -> None:
    """4. local order: on a stage's rank, ``F`` before ``B``/``I``, ``I`` before ``W`` (for one micro-batch)."""
    for a, (rank, cell, k) in seen.items():
        need = _AFTER.get(a.kind)
        if need is None:
            continue
        _, before, j = seen[attrs.evolve(a, kind=need)]
        if (before.column, j) >= (cell.column, k):
            raise _fail(rank, cell, f"the {a.kind.description} of stage {a.stage}, micro-batch {a.microbatch} comes "
                                    f"before its {need.description} (action {before.column} {str(before)!r})")


def _needs(a: Action, num_stages: int) -> tuple[Action, ...]:
    """Cross-stage predecessors of an action (any one of them suffices)."""
    if a.kind is Kind.FORWARD:
        return () if a.stage == 0 else (Action(a.stage - 1, Kind.FORWARD, a.microbatch),)
    if a.kind in (Kind.FULL_BACKWARD, Kind.BACKWARD_INPUT):
        if a.stage == num_stages - 1:
            return ()
        return (Action(a.stage + 1, Kind.BACKWARD_INPUT, a.microbatch),
                Action(a.stage + 1, Kind.FULL_BACKWARD, a.microbatch))
    return ()


def check_progress(plan: CsvPlan) -> None:
    """Execute the ranks' orders with the cross-stage dependencies; raise
    :class:`PlanError` naming the cycle of waiting ranks if they cannot finish.

    The rule is PyTorch's (``_add_send_recv``): a cell runs once every one of
    its actions has its predecessor done (the forward of the previous stage;
    the input gradient or full backward of the next stage), counting only
    cells finished before it.
    """
    S = plan.num_stages
    done: set[Action] = set()
    where: dict[Action, tuple[int, Cell]] = {a: (rank, cell) for rank, cell, a in plan.actions()}
    pos = [0] * plan.num_ranks

    def blocker(cell: Cell) -> tuple[Action, Action] | None:
        for a in cell.actions:
            needs = _needs(a, S)
            if needs and not any(n in done for n in needs):
                present = [n for n in needs if n in where]
                return a, (present[0] if present else needs[0])
        return None

    progress = True
    while progress:
        progress = False
        for rank, row in enumerate(plan.rows):
            while pos[rank] < len(row) and blocker(row[pos[rank]]) is None:
                done.update(row[pos[rank]].actions)
                pos[rank] += 1
                progress = True
    stuck = [r for r in range(plan.num_ranks) if pos[r] < len(plan.rows[r])]
    if not stuck:
        return
    # every stuck rank waits for an action of a stuck rank: follow the chain to a cycle
    waits: dict[int, tuple[Cell, Action, Action, int, Cell]] = {}
    for r in stuck:
        cell = plan.rows[r][pos[r]]
        found = blocker(cell)
        assert found is not None
        a, need = found
        owner_rank, owner_cell = where[need]
        waits[r] = (cell, a, need, owner_rank, owner_cell)
    chain = [stuck[0]]
    while True:
        nxt = waits[chain[-1]][3]
        if nxt in chain:
            cycle = chain[chain.index(nxt):]
            break
        chain.append(nxt)
    parts = []
    for r in cycle:
        cell, a, need, owner_rank, owner_cell = waits[r]
        what = f"the {need.describe()}" if need.kind is Kind.FORWARD else (
            f"the input gradient or full backward of stage {need.stage}, micro-batch {need.microbatch}"
        )
        if owner_rank == r:
            src = f"which rank {r} itself runs only later (action {owner_cell.column} {str(owner_cell)!r})"
        else:
            src = f"from rank {owner_rank} (its action {owner_cell.column} {str(owner_cell)!r})"
        parts.append(
            f"rank {r} is stuck at action {cell.column} {str(cell)!r} ({a.describe()}), waiting for {what} {src}"
        )
    ring = (" -> ".join(f"rank {r}" for r in cycle + [cycle[0]]) if len(cycle) <= SHOWN else
            f"{len(cycle)} ranks, from rank {cycle[0]} through rank {cycle[1]} ... back to rank {cycle[0]}")
    more = len(parts) - 2  # the ring names every rank of the cycle; the first two are explained in full
    shown = "; ".join(parts[:2]) + (f"; and {more} more rank{'s' if more > 1 else ''} of the cycle" if more > 0 else "")
    others = sorted(set(stuck) - set(cycle))
    tail = f"; ranks {listed(others)} wait behind them" if others else ""
    raise PlanError(f"plan would deadlock (the ranks wait for each other in a cycle: {ring}): " + shown + tail)


#: the old name of :class:`CsvPlan`, kept working
Plan = CsvPlan
