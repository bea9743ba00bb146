"""The engine wrapper and the process-pool executor."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import requires_engine
from fakeengine import fake_run_spec

import mmtwin.engine as engine
from mmtwin import config
from mmtwin.config import WorkloadParams
from mmtwin.errors import MmtwinError
from mmtwin.resolve import resolve_spec


def specs(n: int) -> list[dict]:
    m = config.load_machine("tiny-numa")
    k = config.load_kernel("test-base")
    return [resolve_spec(m, k, WorkloadParams(size_gb=0.05 * (i + 1), threads=1 + i % 4)) for i in range(n)]


def test_run_many_keeps_input_order_for_any_worker_count(fixture_presets: Path, fake_engine: None) -> None:
    batch = specs(7)
    expected = [fake_run_spec(s) for s in batch]
    assert engine.run_many(batch, jobs=1) == expected
    assert engine.run_many(batch, jobs=2) == expected  # forked workers see the fake too
    assert engine.run_many(batch, jobs=5) == expected


def test_run_many_reports_results_and_rejects_bad_jobs(fixture_presets: Path, fake_engine: None) -> None:
    seen: list[int] = []
    engine.run_many(specs(3), jobs=1, on_result=lambda i, r: seen.append(i))
    assert seen == [0, 1, 2]
    with pytest.raises(MmtwinError, match=r"--jobs: 0 is not allowed"):
        engine.run_many(specs(1), jobs=0)


def test_run_many_propagates_the_first_error(fixture_presets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(spec: dict) -> dict:
        if spec["workload"]["threads"] == 3:
            raise MmtwinError("engine rejected the specification: workload.threads: boom")
        return fake_run_spec(spec)

    monkeypatch.setattr(engine, "run_spec", failing)
    with pytest.raises(MmtwinError, match="boom"):
        engine.run_many(specs(6), jobs=2)
    with pytest.raises(MmtwinError, match="boom"):
        engine.run_many(specs(6), jobs=1)


def test_missing_engine_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mmtwin._core", None)  # makes the import fail
    assert not engine.engine_available()
    with pytest.raises(MmtwinError, match=r"mmtwin._core is not available .*pip install -e \."):
        engine.run_spec({})


def test_perf_line_and_strip_perf() -> None:
    results = [{"events": 1000, "perf": {"wall_s": 0.5}}, {"events": 3000, "perf": {"wall_s": 1.5}}]
    assert engine.perf_line(results) == "simulated 4000 page events in 2.000 s (2e+03 events/s)"
    assert engine.perf_line(results, wall_s=1.0) == "simulated 4000 page events in 1.000 s (4e+03 events/s)"
    assert engine.strip_perf({"a": 1, "perf": {}}) == {"a": 1}


def test_spec_json_is_canonical() -> None:
    assert engine.spec_json({"b": 1, "a": {"d": 2, "c": 3}}) == '{"a": {"c": 3, "d": 2}, "b": 1}'


@requires_engine
def test_real_engine_result_shape(fixture_presets: Path) -> None:
    spec = specs(1)[0]
    result = engine.run_spec(spec)
    assert {"kernel", "machine", "times", "vmstat", "threads", "zones", "timeline", "sim", "events", "perf"} <= set(result)
    assert set(result["times"]) >= {"user_s", "sys_s", "elapsed_s"}
    assert result["kernel"] == "test-base" and result["machine"] == "tiny-numa"
    assert len(result["zones"]) == 4
    assert all(len(row) == len(result["zones"]) for row in result["timeline"]["free_pages"])
    assert result["events"] > 0 and result["perf"]["wall_s"] >= 0


@requires_engine
def test_real_engine_is_deterministic_and_independent_of_workers(fixture_presets: Path) -> None:
    batch = specs(4)
    one = [json.dumps(engine.strip_perf(r), sort_keys=True) for r in engine.run_many(batch, jobs=1)]
    two = [json.dumps(engine.strip_perf(r), sort_keys=True) for r in engine.run_many(batch, jobs=2)]
    assert one == two


@requires_engine
def test_real_engine_rejection_becomes_mmtwin_error(fixture_presets: Path) -> None:
    spec = specs(1)[0]
    spec["workload"]["stride"] = 3  # the engine validates on its own, too
    with pytest.raises(MmtwinError, match=r"^engine rejected the specification: workload.stride"):
        engine.run_spec(spec)


@requires_engine
def test_ctrl_c_stops_a_long_run_at_once() -> None:
    """SIGINT during a long engine call ends it within a fraction of a second
    (the engine runs on its own thread and polls a cancel flag), exit 130."""
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "mmtwin", "run", "-e", "zlcfirst", "-r", "mmapstream", "--no-ftrace"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    # Past start-up, inside the engine: seed 000's streaming mapped writer takes
    # about 12 s on this machine (seed 004's micro-16X, used until 2026-11-23,
    # now ends in under 3 s and once finished before the signal).
    time.sleep(3)
    assert proc.poll() is None
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 130
    assert time.monotonic() - sent < 5


@requires_engine
def test_fork_balance_places_threads_as_2618_and_the_seed_varies_only_the_unknowns() -> None:
    """On the Altix (fork_balance ia64-2.6.18) 19 threads spread over at least
    15 nodes (one per node of the main thread's 16-node span first), each on
    its own CPU; the same seed gives the same bytes, another seed another
    placement; pinned threads (--cpus) ignore the placement but still differ
    only through the timer phase."""
    machine = config.load_machine("sgi-altix-28node")
    kernel = config.load_kernel("2.6.18-mm3")
    params = WorkloadParams(size_gb=12, threads=19)

    def run(seed: int) -> dict:
        spec = resolve_spec(machine, kernel, params, seed=seed, scale=Fraction(1, 50))
        return engine.run_spec(spec)

    a, again, b = run(1), run(1), run(2)
    strip = lambda r: json.dumps({k: v for k, v in r.items() if k != "perf"}, sort_keys=True)  # noqa: E731
    assert strip(a) == strip(again)
    cpus = [t["cpu"] for t in a["threads"]]
    assert len(set(cpus)) == 19, cpus
    assert len({t["node"] for t in a["threads"]}) >= 15
    assert a["benchmark"]["memhog"]["main_thread_cpu"] is not None
    starts = sorted(t["start_s"] for t in a["threads"])
    assert starts[0] > 0 and starts[-1] > starts[0]  # one clone after another
    assert [t["cpu"] for t in b["threads"]] != cpus or a["times"] != b["times"]
