"""The one place that calls the Rust engine, and a process-pool executor.

``run_spec`` turns a spec dict into a result dict through ``mmtwin._core.run``.
``run_many`` runs a list of specs on worker processes and returns the results
in input order, so output never depends on the number of workers.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from typing import Any

from mmtwin.errors import MmtwinError

Spec = dict[str, Any]
Result = dict[str, Any]


def _core_module() -> Any:
    """``mmtwin._core`` (the compiled Rust engine); ImportError when it is not built."""
    return importlib.import_module("mmtwin._core")


def engine_available() -> bool:
    try:
        _core_module()
    except ImportError:
        return False
    return True


def engine_version() -> str | None:
    try:
        return str(_core_module().version())
    except ImportError:
        return None


def spec_json(spec: Spec) -> str:
    """Canonical JSON of a spec: sorted keys, no whitespace variation."""
    return json.dumps(spec, sort_keys=True)


def run_spec(spec: Spec) -> Result:
    """Run one fully resolved specification through the engine."""
    try:
        core = _core_module()
    except ImportError as exc:
        raise MmtwinError(
            f"the engine module mmtwin._core is not available ({exc}); build it with `pip install -e .`"
        ) from None
    started = time.perf_counter()
    try:
        text = core.run(spec_json(spec))
    except ValueError as exc:
        raise MmtwinError(f"engine rejected the specification: {exc}") from None
    wall = time.perf_counter() - started
    result: Result = json.loads(text)
    perf = result.setdefault("perf", {})
    perf.setdefault("wall_s", wall)
    if "events_per_s" not in perf:
        events = result.get("events", 0)
        perf["events_per_s"] = events / wall if wall > 0 else 0.0
    return result


def _worker(spec: Spec) -> Result:
    # Looked up at call time so tests can substitute ``run_spec``.
    return run_spec(spec)


def default_jobs() -> int:
    return os.cpu_count() or 1


def run_many(
    specs: Sequence[Spec],
    jobs: int | None = None,
    *,
    label: str = "simulating",
    progress: bool | None = None,
    on_result: Callable[[int, Result], None] | None = None,
) -> list[Result]:
    """Run ``specs`` on ``jobs`` worker processes; results in input order.

    ``progress`` None means: a progress bar on stderr when stderr is a TTY.
    ``jobs`` 1 runs in this process (no pool). The first error cancels the
    remaining runs and is raised.
    """
    if jobs is None:
        jobs = default_jobs()
    if jobs < 1:
        raise MmtwinError(f"--jobs: {jobs} is not allowed; expected an integer >= 1")
    if progress is None:
        progress = sys.stderr.isatty()
    results: list[Result | None] = [None] * len(specs)

    def store(i: int, result: Result, bar: _Progress) -> None:
        results[i] = result
        bar.advance()
        if on_result:
            on_result(i, result)

    if jobs == 1 or len(specs) <= 1:
        with _Progress(len(specs), label, progress) as bar:
            for i, spec in enumerate(specs):
                store(i, _worker(spec), bar)
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(specs))) as pool:
            # Submit (and so fork the workers) before the progress bar starts its thread.
            futures: dict[Future[Result], int] = {pool.submit(_worker, s): i for i, s in enumerate(specs)}
            pending = set(futures)
            with _Progress(len(specs), label, progress) as bar:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                    for fut in sorted(done, key=lambda f: futures[f]):
                        exc = fut.exception()
                        if exc is not None:
                            for other in pending:
                                other.cancel()
                            raise exc
                        store(futures[fut], fut.result(), bar)
    assert all(r is not None for r in results)
    return results  # type: ignore[return-value]


class _Progress:
    """A rich progress bar on stderr, or nothing."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.total = total
        self.label = label
        self.enabled = enabled and total > 0
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> "_Progress":
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self.label, total=self.total)
        return self

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)


def strip_perf(result: Result) -> Result:
    """The deterministic part of a result (everything but ``perf``)."""
    return {k: v for k, v in result.items() if k != "perf"}


def perf_line(results: Sequence[Result], wall_s: float | None = None) -> str:
    """``simulated N page events in W s (E events/s)`` for one or more runs."""
    events = sum(int(r.get("events", 0)) for r in results)
    if wall_s is None:
        wall_s = sum(float(r.get("perf", {}).get("wall_s", 0.0)) for r in results)
    rate = events / wall_s if wall_s > 0 else 0.0
    return f"simulated {events} page events in {wall_s:.3f} s ({rate:.3g} events/s)"
