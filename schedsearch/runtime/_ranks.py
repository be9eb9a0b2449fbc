"""Run a function on several forked processes joined in a gloo group (loopback), and stop them all.

The measuring helpers of the runtime (:mod:`schedsearch.runtime.calibrate`,
:mod:`schedsearch.runtime.profiler_traces`) use it; :func:`~schedsearch.runtime.run`
has its own launcher (stage building, gradient reports).
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from schedsearch.errors import ExecutionError
from schedsearch.runtime._torch import require_torch

__all__ = ["run_ranks"]


def run_ranks(what: str, fn: Callable[..., Any], num_ranks: int, timeout_s: float, *args: Any) -> list[Any]:
    """Run ``fn(rank, torch, dist, *args)`` on ``num_ranks`` forked processes joined in a gloo group; their returns.

    Every process is stopped at the end, on success and on failure alike.
    """
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="schedsearch-ranks-") as tmp:
        init = f"file://{Path(tmp) / 'rendezvous'}"
        readers, processes = [], []
        try:
            for rank in range(num_ranks):
                reader, writer = ctx.Pipe(duplex=False)
                p = ctx.Process(target=_rank_main, args=(fn, rank, num_ranks, init, timeout_s, writer, args),
                                name=f"schedsearch-rank{rank}", daemon=True)
                p.start()
                writer.close()
                readers.append(reader)
                processes.append(p)
            results: dict[int, Any] = {}
            deadline = time.monotonic() + timeout_s
            while len(results) < num_ranks:
                remaining = deadline - time.monotonic()
                pending = {readers[r]: r for r in range(num_ranks) if r not in results}
                ready = wait(list(pending), timeout=max(0.0, remaining)) if remaining > 0 else []
                if not ready:
                    late = sorted(pending.values())
                    raise ExecutionError(f"{what}: ranks {late} did not finish within {timeout_s:g} s; every "
                                         f"process was stopped", rank=None)
                for reader in ready:
                    rank = pending[reader]
                    try:
                        kind, payload = reader.recv()
                    except (EOFError, OSError):
                        processes[rank].join(0.5)
                        raise ExecutionError(f"{what}: rank {rank} ended without reporting (exit code "
                                             f"{processes[rank].exitcode})", rank=rank) from None
                    if kind == "error":
                        raise ExecutionError(f"{what}: rank {rank} failed: {payload[0]}", rank=rank,
                                             details=(payload[1],))
                    results[rank] = payload
            return [results[r] for r in range(num_ranks)]
        finally:
            for p in processes:
                if p.is_alive():
                    p.terminate()
            for p in processes:
                p.join(2.0)
                if p.is_alive():
                    p.kill()
                    p.join(5.0)
            for r in readers:
                r.close()


def _rank_main(fn: Callable[..., Any], rank: int, num_ranks: int, init: str, timeout_s: float, conn: Any,
               args: tuple) -> None:  # pragma: no cover - runs in a child process
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    try:
        torch = require_torch()
        torch.set_num_threads(1)
        dist = torch.distributed
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=num_ranks,
                                timeout=timedelta(seconds=timeout_s + 30))
        out = fn(rank, torch, dist, *args)
        dist.barrier()
        dist.destroy_process_group()
        conn.send(("ok", out))
    except BaseException as exc:  # report, then leave
        try:
            conn.send(("error", (f"{type(exc).__name__}: {exc}".splitlines()[0], traceback.format_exc())))
        finally:
            os._exit(1)
