"""The mmtwin command line: run, compare, reproduce, presets, bench, help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli_env, fixture_env, requires_engine, run_cli

from mmtwin import cli

RUN_TINY = ["run", "--machine", "tiny-numa", "--kernel", "test-base", "--size-gb", "0.5", "--threads", "4"]


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the CLI in this process (so a monkeypatched engine is used)."""
    with pytest.raises(SystemExit) as info:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


# --------------------------------------------------------------------------- help and presets


@pytest.mark.parametrize(
    ("command", "needles"),
    [
        ([], ["run", "compare", "reproduce", "presets", "bench"]),
        (["run"], ["--machine", "--kernel", "--size-gb", "--threads", "--stride", "--scale", "--seed", "--check", "--json", "--vmstat", "--plot"]),
        (["compare"], ["--kernel", "--era", "2011", "2017", "--jobs"]),
        (["reproduce"], ["--list", "--json", "--scale", "--jobs", "--check", "status 1"]),
        (["bench"], ["--quick", "--json", "--scenario", "peak_rss_bytes"]),
        (["presets"], ["show"]),
    ],
)
def test_help(capsys: pytest.CaptureFixture[str], command: list[str], needles: list[str]) -> None:
    code, out, _ = call(capsys, *command, "--help")
    assert code == 0
    for needle in needles:
        assert needle in out, (needle, out)


def test_presets_list_and_show(capsys: pytest.CaptureFixture[str], fixture_presets: Path) -> None:
    code, out, err = call(capsys, "presets")
    assert code == 0, err
    assert out.splitlines()[0] == "machines:"
    assert "  tiny-numa  Test fixture: 4-node ia64-like box" in out
    assert "  test-zlc   Test fixture: 2.6.18 era with the zonelist cache" in out
    assert "  tiny-zlc  Test fixture: memory hog on tiny-numa" in out
    code, out, _ = call(capsys, "presets", "show", "tiny-x86")
    assert code == 0
    assert "machine tiny-x86:" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("       ")]
    assert rows[0] == ["0", "2", "0", "768000", "10240", "4096", "763904", "0"]
    assert rows[1] == ["1", "2", "768000", "512000", "2048", "0", "280576", "231424"]
    code, out, _ = call(capsys, "presets", "show", "test-zlc")
    assert "policy: zlc after-first-zone" in out
    code, _, err = call(capsys, "presets", "show", "nothing")
    assert code == 2
    assert err.startswith("mmtwin: error: unknown preset 'nothing'; available: test-base, test-zlc, tiny-numa")


def test_presets_list_reports_a_broken_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "machines").mkdir()
    (tmp_path / "machines" / "broken.toml").write_text('name = "broken"\n')
    monkeypatch.setenv("MMTWIN_PRESETS", str(tmp_path))
    code, out, err = call(capsys, "presets")
    assert code == 2
    assert "broken  (invalid, see error below)" in out
    assert "broken.toml: description: missing; this key is required" in err


# --------------------------------------------------------------------------- run / compare / reproduce with the fake engine


def test_run_text_with_fake_engine(capsys: pytest.CaptureFixture[str], fixture_presets: Path, fake_engine: None) -> None:
    code, out, err = call(capsys, *RUN_TINY, "--vmstat")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("memhog 0.5 GB, 4 threads, stride 4096 on tiny-numa (4 nodes, 6 CPUs")
    assert lines[1] == "times: sys 3.28 s, user 0.66 s, real 0.98 s"  # 32768 pages in the fake
    assert "/proc/vmstat" in lines
    assert "pgalloc_dma 32768" in lines
    assert "free pages per zone over simulated time (s)" in lines
    assert err.strip().splitlines()[-1].startswith("simulated 163840 page events in ")


def test_compare_with_fake_engine(capsys: pytest.CaptureFixture[str], fixture_presets: Path, fake_engine: None) -> None:
    base = ["compare", "-m", "tiny-numa", "-k", "test-base", "-k", "test-zlc", "--size-gb", "0.5", "--threads", "4", "-j", "1"]
    code, out, err = call(capsys, *base, "--era", "2017")
    assert code == 0, err
    assert "Amean    System-4         3.28 (  0.00%)        2.95 ( 10.00%)" in out
    code, out, _ = call(capsys, *base, "--era", "2011")
    assert "MMTests Statistics: duration" in out and "User/Sys Time Running Test (seconds)" in out
    assert "( 0.00%)" in out and "(11.11%)" in out  # 2011: relative to the new value, 0.3277/2.949
    code, _, err = call(capsys, *base, "--era", "2020")
    assert code == 2 and "--era: '2020' is not allowed" in err
    code, _, err = call(capsys, "compare", "-m", "tiny-numa", "-k", "test-base", "--size-gb", "1", "--threads", "1")
    assert code == 2 and "needs at least two" in err


def test_reproduce_prints_everything_and_exits_1_when_a_claim_fails(
    capsys: pytest.CaptureFixture[str], fake_engine: None
) -> None:
    # The fake engine makes sys 10% lower with any cache and >1 thread: C1 and C6 ("no difference") fail.
    code, out, err = call(capsys, "reproduce", "zonelist-cache", "--jobs", "1")
    assert code == 1, err
    assert "Simulated (seconds)" in out and "Published (seed 003) beside simulated" in out
    assert "C1  NOT HELD  At 12 GB the cache makes no material difference" in out
    assert "C2  HELD" in out
    assert "C6  NOT HELD" in out
    assert "verdict: 4 of 6 claims held in the simulation" in out
    code, out, _ = call(capsys, "reproduce", "zonelist-cache", "--jobs", "1", "--json")
    assert code == 1
    data = json.loads(out)
    assert [c["id"] for c in data["claims"]] == ["C1", "C2", "C3", "C4", "C5", "C6"]
    assert [c["held"] for c in data["claims"]] == [False, True, True, True, True, False]
    assert [c["held_published"] for c in data["claims"]] == [True, True, True, False, True, True]
    assert len(data["cells"]) == 16 and data["held"] is False and data["oom_runs"] == []


def test_reproduce_list_and_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = call(capsys, "reproduce", "--list")
    assert code == 0 and out.startswith("zonelist-cache  Seed 003")
    code, _, err = call(capsys, "reproduce", "nope")
    assert code == 2 and err == "mmtwin: error: unknown reproduction 'nope'; available: zonelist-cache\n"


def test_reproduce_rejects_an_experiment_without_the_claimed_cells(
    capsys: pytest.CaptureFixture[str], fixture_presets: Path, fake_engine: None
) -> None:
    code, _, err = call(capsys, "reproduce", "zonelist-cache", "--experiment", "tiny-zlc", "-j", "1")
    assert code == 2
    assert err.startswith("mmtwin: error: ")
    assert "tiny-zlc.toml: matrix: the experiment has no 12 GB cell, which the claims need (C1)" in err


# --------------------------------------------------------------------------- with the real engine


@requires_engine
def test_run_json_is_byte_identical_across_invocations() -> None:
    a = run_cli(*RUN_TINY, "--json", env=fixture_env())
    b = run_cli(*RUN_TINY, "--json", env=fixture_env())
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    data = json.loads(a.stdout)
    assert "perf" not in data["result"]
    assert data["spec"]["workload"]["bytes"] == 2**29
    assert "simulated " in a.stderr and " page events in " in a.stderr and "events/s)" in a.stderr


@requires_engine
def test_run_seed_and_check_reach_the_engine() -> None:
    proc = run_cli(*RUN_TINY, "--json", "--check", "--seed", "7", env=fixture_env())
    assert proc.returncode == 0, proc.stderr
    spec = json.loads(proc.stdout)["spec"]
    assert spec["seed"] == 7 and spec["check"] is True


@requires_engine
def test_run_text_vmstat_and_plot(tmp_path: Path) -> None:
    proc = run_cli(*RUN_TINY, "--vmstat", "--plot", str(tmp_path), env=fixture_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].startswith("times: sys ")
    assert "/proc/vmstat" in proc.stdout and "pgfault " in proc.stdout
    pngs = list(tmp_path.glob("*.png"))
    assert len(pngs) == 1 and pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@requires_engine
def test_compare_real_engine_all_eras() -> None:
    for era in ("2011", "2012", "2017"):
        proc = run_cli(
            "compare", "-m", "tiny-numa", "-k", "test-base,test-zlc", "--size-gb", "0.75", "--threads", "2",
            "--era", era, "-j", "2", env=fixture_env(),
        )
        assert proc.returncode == 0, proc.stderr
        assert "MMTests Statistics: vmstat" in proc.stdout
        assert "pgalloc_dma" in proc.stdout


@requires_engine
def test_reproduce_zonelist_cache_at_reduced_scale(tmp_path: Path) -> None:
    """The real-engine reproduction at 5% scale: the claims' directions must come out as published."""
    proc = run_cli("reproduce", "zonelist-cache", "--scale", "0.05", "--json", "--jobs", "2", "--plot", str(tmp_path))
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    assert data["scale"] == 0.05 and len(data["cells"]) == 16
    assert (proc.returncode == 0) == data["held"]
    claims = {c["id"]: c for c in data["claims"]}
    # Directions: the cache lowers sys (C2) and real (C3) where off-node scanning is heavy ...
    assert all(r["value"] > 0 for r in claims["C2"]["simulated"]), claims["C2"]
    assert claims["C3"]["held"], claims["C3"]
    # ... and changes nothing material where it cannot matter.
    for cid in ("C1", "C4", "C5", "C6"):
        assert claims[cid]["held"], claims[cid]
    assert (tmp_path / "zonelist-cache-sys.png").is_file()
    # determinism across worker counts
    again = run_cli("reproduce", "zonelist-cache", "--scale", "0.05", "--json", "--jobs", "1")
    assert again.stdout == proc.stdout


@requires_engine
def test_bench_quick_json_shape() -> None:
    proc = run_cli("bench", "--quick", "--json", "--scenario", "memhog-90g-altix28", env=cli_env())
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["scenario"] for r in rows] == ["memhog-90g-altix28"]
    row = rows[0]
    assert set(row) == {"scenario", "events", "wall_s", "events_per_s", "peak_rss_bytes"}
    assert isinstance(row["events"], int) and row["events"] > 0
    assert row["wall_s"] > 0 and row["events_per_s"] == pytest.approx(row["events"] / row["wall_s"])
    assert 10 * 2**20 < row["peak_rss_bytes"] < 8 * 2**30


def test_bench_unknown_scenario() -> None:
    proc = run_cli("bench", "--scenario", "nope")
    assert proc.returncode == 2
    assert proc.stderr.startswith("mmtwin: error: --scenario: unknown scenario 'nope'; available: memhog-90g-altix28")
