"""What a machine adds to a pipeline's times: point-to-point link and runtime overhead per action.

A :class:`Calibration` holds what :func:`schedsearch.runtime.calibrate.calibrate`
measures on the machine a plan will run on (or what you measured yourself):

* the point-to-point link between neighbouring ranks on the runtime's
  backend: ``latency_ms`` plus the bytes over ``bandwidth_bytes_per_s``,
  fitted by least squares (:func:`fit_link`) to one-way times of several
  tensor sizes, with the fit's residual;
* ``action_overhead_ms``: what the pipeline runtime spends per action on
  top of the action's compute (its bookkeeping, posting sends and
  receives), measured on a plan of near-empty actions.

:meth:`Calibration.apply` (or :meth:`~schedsearch.plan.pipeline.Pipeline.calibrated`)
puts them into a :class:`~schedsearch.plan.pipeline.Pipeline`: its ``p2p``
becomes the fitted link and its ``action_overhead_ms`` the overhead (added
to every stage time of every family's stages, see
:meth:`~schedsearch.plan.pipeline.Pipeline.stages_for`). The calibration is a
small TOML or JSON file (:meth:`Calibration.save`, :meth:`Calibration.load`);
a pipeline file merges one with a top-level key
``calibration = "calibration.toml"`` (a path relative to the pipeline file).

This module needs no torch: the measuring lives in
:mod:`schedsearch.runtime.calibrate`.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from schedsearch._io import read_text, toml_value
from schedsearch._json import short_repr
from schedsearch.errors import InvalidPipelineError
from schedsearch.units import MAX_MS, parse_bytes, read_ms as _time

__all__ = ["LinkFit", "Calibration", "P2P", "fit_link"]


@attrs.frozen(kw_only=True)
class LinkFit:
    """A least-squares fit ``time_ms = latency_ms + bytes / bandwidth_bytes_per_s * 1e3`` and its residual.

    ``bandwidth_bytes_per_s`` is None when the times do not grow with the
    size (no bandwidth term is measurable); ``residual_ms`` is the root mean
    square of the differences between the fit and the samples, and
    ``max_relative_error`` the largest of them over its sample's time.
    """

    latency_ms: float
    bandwidth_bytes_per_s: int | None
    residual_ms: float
    max_relative_error: float
    samples: tuple[tuple[int, float], ...]

    def time_ms(self, num_bytes: int) -> float:
        """The fitted one-way time of ``num_bytes``."""
        slope = 0.0 if self.bandwidth_bytes_per_s is None else 1e3 / self.bandwidth_bytes_per_s
        return self.latency_ms + num_bytes * slope


def fit_link(samples: Sequence[tuple[int, float]]) -> LinkFit:
    """Fit a latency and a bandwidth to one-way transfer times ``(bytes, ms)`` by least squares.

    The fit is the ordinary least-squares line of time over bytes, kept in
    the physical range: a negative intercept is refitted as a line through
    the origin (latency 0), a slope that is not positive as a constant (no
    bandwidth term: ``bandwidth_bytes_per_s`` None).

    Examples
    --------
    >>> from schedsearch.plan.calibration import fit_link
    >>> fit = fit_link([(0, 0.05), (10**6, 0.15), (4 * 10**6, 0.45)])   # 0.05 ms + 10 GB/s
    >>> round(fit.latency_ms, 9), fit.bandwidth_bytes_per_s, fit.residual_ms < 1e-12
    (0.05, 10000000000, True)
    """
    points = [(int(b), float(t)) for b, t in samples]
    if len(points) < 2 or len({b for b, _ in points}) < 2:
        raise InvalidPipelineError(
            f"calibration: a latency and a bandwidth need transfer times of at least two sizes, got sizes "
            f"{sorted({b for b, _ in points})}")
    for b, t in points:
        if b < 0 or not math.isfinite(t) or t < 0:
            raise InvalidPipelineError(f"calibration: a transfer sample must be (bytes >= 0, ms >= 0), got ({b}, {t})")
    n = len(points)
    mean_x = math.fsum(b for b, _ in points) / n
    mean_y = math.fsum(t for _, t in points) / n
    sxx = math.fsum((b - mean_x) ** 2 for b, _ in points)
    sxy = math.fsum((b - mean_x) * (t - mean_y) for b, t in points)
    slope = sxy / sxx
    latency = mean_y - slope * mean_x
    if latency < 0:  # through the origin
        latency = 0.0
        slope = math.fsum(b * t for b, t in points) / math.fsum(b * b for b, _ in points)
    if slope <= 0:  # no measurable bandwidth term: a constant time
        slope, latency = 0.0, mean_y
    bandwidth = None if slope <= 0 else max(1, round(1e3 / slope))
    fit = LinkFit(latency_ms=latency, bandwidth_bytes_per_s=bandwidth, residual_ms=0.0, max_relative_error=0.0,
                  samples=tuple(points))
    errors = [fit.time_ms(b) - t for b, t in points]
    rms = math.sqrt(math.fsum(e * e for e in errors) / n)
    rel = max((abs(e) / t for e, (_, t) in zip(errors, points) if t > 0), default=0.0)
    return attrs.evolve(fit, residual_ms=rms, max_relative_error=rel)


def _ms(field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_MS:
        raise InvalidPipelineError(
            f"calibration: {field!r} must be a time in milliseconds from 0 to 1e12, got {short_repr(value)}")
    return float(value)


def _samples(value: Any) -> tuple[tuple[int, float], ...]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidPipelineError(f"calibration: 'samples' must be a list of [bytes, ms] pairs, got {short_repr(value)}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2 \
                or isinstance(item[0], bool) or not isinstance(item[0], int) or item[0] < 0:
            raise InvalidPipelineError(
                f"calibration: 'samples' entry {i} must be a pair [bytes, ms], got {short_repr(item)}")
        out.append((int(item[0]), _ms(f"samples[{i}]", item[1])))
    return tuple(out)


@attrs.frozen(kw_only=True)
class P2P:
    """Point-to-point transfer of what a stage sends (its ``send_bytes``) between neighbouring ranks.

    Either a fixed ``time_ms`` per transfer, or ``latency_ms`` plus the
    bytes crossing the boundary (the sending stage's ``send_bytes``; the
    gradient coming back is as large) over ``bandwidth_bytes_per_s`` (a
    number or a string such as ``"25 GB"``, read per second). All zero (the default):
    transfers are free.

    Examples
    --------
    >>> from schedsearch.plan.pipeline import P2P
    >>> P2P(latency_ms=0.01, bandwidth_bytes_per_s="10 GB").transfer_ms(10**8)
    10.01
    >>> P2P(time_ms=0.5).transfer_ms(10**9)
    0.5
    """

    latency_ms: float = 0.0
    bandwidth_bytes_per_s: int | None = None
    time_ms: float | None = None

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "latency_ms", _time("p2p", "latency_ms", self.latency_ms))
        object.__setattr__(self, "time_ms", _time("p2p", "time_ms", self.time_ms, optional=True))
        if self.bandwidth_bytes_per_s is not None:
            bw = parse_bytes(self.bandwidth_bytes_per_s, "p2p", "bandwidth_bytes_per_s")
            if bw <= 0:
                raise InvalidPipelineError(f"p2p: 'bandwidth_bytes_per_s' must be > 0, got {self.bandwidth_bytes_per_s!r}")
            object.__setattr__(self, "bandwidth_bytes_per_s", bw)
        if self.time_ms is not None and (self.bandwidth_bytes_per_s is not None or self.latency_ms):
            raise InvalidPipelineError(
                f"p2p: give either 'time_ms' ({self.time_ms!r}) or 'latency_ms' and 'bandwidth_bytes_per_s', not both"
            )

    def transfer_ms(self, num_bytes: int) -> float:
        """Milliseconds to send ``num_bytes`` to the neighbouring rank."""
        if self.time_ms is not None:
            return self.time_ms
        size = num_bytes / self.bandwidth_bytes_per_s * 1e3 if self.bandwidth_bytes_per_s else 0.0
        return self.latency_ms + size

    @property
    def free(self) -> bool:
        return not self.time_ms and not self.latency_ms and self.bandwidth_bytes_per_s is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.time_ms is not None:
            out["time_ms"] = self.time_ms
        if self.latency_ms:
            out["latency_ms"] = self.latency_ms
        if self.bandwidth_bytes_per_s is not None:
            out["bandwidth_bytes_per_s"] = self.bandwidth_bytes_per_s
        return out


@attrs.frozen(kw_only=True)
class Calibration:
    """A machine's point-to-point link and its pipeline runtime's overhead per action.

    Parameters
    ----------
    latency_ms, bandwidth_bytes_per_s:
        The link between neighbouring ranks (:class:`~schedsearch.plan.pipeline.P2P`):
        one transfer of ``n`` bytes takes ``latency_ms + n / bandwidth * 1e3``
        ms; ``bandwidth_bytes_per_s`` None: no size term.
    action_overhead_ms:
        Time the runtime adds to every compute action (F, B, I, W) beyond
        the action's own compute.
    step_overhead_ms:
        What a step costs once beyond its actions (its set-up, the gradient
        reduction at its end). A plan's makespan does not hold it: applied,
        it is the pipeline's ``step_overhead_ms``, which the step time a run
        of the plan is predicted to take adds to the makespan (as
        :meth:`step_ms` does).
    residual_ms:
        Root mean square residual of the link fit over ``samples``.
    samples:
        The measured one-way times ``(bytes, ms)`` the link was fitted to.
    backend, note:
        Free text: the backend measured (``"gloo"``) and how.

    Examples
    --------
    >>> from schedsearch import Pipeline
    >>> from schedsearch.plan.calibration import Calibration
    >>> pipeline = Pipeline(num_ranks=2, num_microbatches=4, stages=[
    ...     {"forward_ms": 1.0, "backward_ms": 2.0, "send_bytes": "1 MiB"}] * 2)
    >>> calibrated = Calibration(latency_ms=0.05, bandwidth_bytes_per_s=10**9, action_overhead_ms=0.02).apply(pipeline)
    >>> round(calibrated.p2p.transfer_ms(2**20), 6), calibrated.action_overhead_ms
    (1.098576, 0.02)
    >>> [(s.forward_ms, s.backward_ms) for s in calibrated.stages_for(2)[0]]
    [(1.02, 2.02), (1.02, 2.02)]
    """

    latency_ms: float = 0.0
    bandwidth_bytes_per_s: int | None = None
    action_overhead_ms: float = 0.0
    step_overhead_ms: float = 0.0
    residual_ms: float = 0.0
    samples: tuple[tuple[int, float], ...] = attrs.field(default=(), converter=_samples)
    backend: str = ""
    note: str = ""

    def __attrs_post_init__(self) -> None:
        for field in ("latency_ms", "action_overhead_ms", "step_overhead_ms", "residual_ms"):
            object.__setattr__(self, field, _ms(field, getattr(self, field)))
        bw = self.bandwidth_bytes_per_s
        if bw is not None and (isinstance(bw, bool) or not isinstance(bw, (int, float)) or not math.isfinite(bw)
                               or bw < 1 or bw > 2**60):
            raise InvalidPipelineError(
                f"calibration: 'bandwidth_bytes_per_s' must be a number of bytes per second from 1 to 2**60 (or "
                f"absent), got {short_repr(bw)}")
        if bw is not None:
            object.__setattr__(self, "bandwidth_bytes_per_s", int(round(bw)))
        for field in ("backend", "note"):
            if not isinstance(getattr(self, field), str):
                raise InvalidPipelineError(
                    f"calibration: {field!r} must be a string, got {short_repr(getattr(self, field))}")

    @classmethod
    def from_fit(cls, fit: LinkFit, *, action_overhead_ms: float = 0.0, step_overhead_ms: float = 0.0,
                 backend: str = "", note: str = "") -> Calibration:
        """A calibration of a link fit (:func:`fit_link`) and the runtime's overheads."""
        return cls(latency_ms=fit.latency_ms, bandwidth_bytes_per_s=fit.bandwidth_bytes_per_s,
                   residual_ms=fit.residual_ms, samples=fit.samples, action_overhead_ms=action_overhead_ms,
                   step_overhead_ms=step_overhead_ms, backend=backend, note=note)

    def step_ms(self, makespan_ms: float) -> float:
        """The step time to expect of a plan whose makespan is ``makespan_ms``: plus the fixed cost per step."""
        return makespan_ms + self.step_overhead_ms

    @property
    def p2p(self) -> P2P:
        """The link as a pipeline's :class:`P2P`."""
        return P2P(latency_ms=self.latency_ms, bandwidth_bytes_per_s=self.bandwidth_bytes_per_s)

    def apply(self, pipeline: Any) -> Any:
        """``pipeline`` (a :class:`~schedsearch.plan.pipeline.Pipeline`) with this link as its ``p2p`` and these
        overheads as its ``action_overhead_ms`` and ``step_overhead_ms``: :meth:`Pipeline.calibrated
        <schedsearch.plan.pipeline.Pipeline.calibrated>`.

        They replace what the pipeline had (applying a calibration twice
        gives the same pipeline as applying it once); the stage times stay
        as given, the overhead being added where the stages of a family are
        made.
        """
        calibrated = getattr(pipeline, "calibrated", None)
        if not callable(calibrated):
            raise InvalidPipelineError(f"calibration: apply needs a Pipeline, got {type(pipeline).__name__}")
        return calibrated(self)

    def __str__(self) -> str:
        bw = "no size term" if self.bandwidth_bytes_per_s is None else f"{self.bandwidth_bytes_per_s / 1e9:.4g} GB/s"
        where = f" ({self.backend})" if self.backend else ""
        return (f"calibration{where}: link latency {1e3 * self.latency_ms:.1f} us, bandwidth {bw}, fit residual "
                f"{1e3 * self.residual_ms:.1f} us over {len(self.samples)} sizes; runtime overhead "
                f"{1e3 * self.action_overhead_ms:.1f} us per action, {1e3 * self.step_overhead_ms:.1f} us per step")

    # ------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"latency_ms": self.latency_ms}
        if self.bandwidth_bytes_per_s is not None:
            out["bandwidth_bytes_per_s"] = self.bandwidth_bytes_per_s
        out.update(action_overhead_ms=self.action_overhead_ms, step_overhead_ms=self.step_overhead_ms,
                   residual_ms=self.residual_ms,
                   samples=[[b, t] for b, t in self.samples], backend=self.backend, note=self.note)
        return out

    @classmethod
    def from_dict(cls, document: Mapping[str, Any], where: str = "calibration") -> Calibration:
        if not isinstance(document, Mapping):
            raise InvalidPipelineError(f"{where}: must be a table of fields, got {short_repr(document)}")
        known = {f.name for f in attrs.fields(cls)}
        unknown = sorted(set(document) - known, key=repr)
        if unknown:
            raise InvalidPipelineError(f"{where}: unknown field(s) {short_repr(unknown)}; known: {sorted(known)}")
        return cls(**document)

    def to_toml(self) -> str:
        return "".join(f"{k} = {toml_value(v)}\n" for k, v in self.to_dict().items())

    def save(self, path: str | Path) -> Path:
        """Write the calibration as TOML (or JSON when the name ends in ``.json``)."""
        path = Path(path)
        text = json.dumps(self.to_dict(), indent=2) + "\n" if path.suffix.lower() == ".json" else self.to_toml()
        path.write_text(text)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        """Read a calibration from a ``.toml`` or ``.json`` file."""
        path = Path(path)
        where = f"calibration file {str(path)!r}"
        text = read_text(path, where, InvalidPipelineError)
        try:
            document = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise InvalidPipelineError(f"{where}: not valid {path.suffix[1:] or 'TOML'}: {exc}") from None
        try:
            return cls.from_dict(document, where)
        except InvalidPipelineError as exc:
            text = str(exc)
            raise InvalidPipelineError(text if text.startswith(where) else f"{where}: {text}") from None
