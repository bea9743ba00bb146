"""mmtwin sweep: the cross product, the tidy table, determinism across executors,
resume after a kill, one-line errors, and Ray (when it is installed)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import requires_engine, run_cli

from mmtwin import cli
from mmtwin import iterations as its
from mmtwin import sweep as sw

# Tiny memory hogs on the fixture machine (fake engine) and on a shipped one (real engine).
FIXTURE = ["-m", "tiny-numa", "--size-gb", "0.25"]
REAL = ["-m", "uma-x86-64", "-k", "3.0-rc6-vanilla", "--size-gb", "0.01"]


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def csv_rows(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def counting_engine(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The fake engine, recording every spec it runs (in this process: use --jobs 1)."""
    import mmtwin.engine
    from fakeengine import fake_run_spec

    seen: list[dict[str, Any]] = []

    def run(spec: dict[str, Any]) -> dict[str, Any]:
        seen.append(spec)
        return fake_run_spec(spec)

    monkeypatch.setattr(mmtwin.engine, "run_spec", run)
    return seen


# --------------------------------------------------------------------------- the plan


def test_split_values_keeps_lists_and_quoted_commas() -> None:
    assert sw.split_values('1,2, 3') == ["1", "2", "3"]
    assert sw.split_values('[0,1],[2,3]') == ["[0,1]", "[2,3]"]
    assert sw.split_values('"0-1,3","2"') == ['"0-1,3"', '"2"']


def test_cross_product_order_columns_and_seeds(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                               fixture_presets: Any, counting_engine: list[Any]) -> None:
    out = tmp_path / "s.csv"
    code, text, err = call(capsys, "sweep", *FIXTURE, "--vary", "kernel=test-base,test-zlc", "--vary", "threads=1,2,4",
                           "--vary", "swappiness=0,60", "--iterations", "2", "--jobs", "1", "--out", str(out))
    assert code == 0, err
    rows = csv_rows(out)
    assert len(rows) == 2 * 3 * 2 * 2 == len(counting_engine)
    # Cells in cross-product order (the last --vary fastest), iterations inside each cell.
    cells = [(r["kernel"], r["threads"], r["sysctl.swappiness" if "sysctl.swappiness" in r else "swappiness"]) for r in rows[::2]]
    assert cells == [(k, t, s) for k in ("test-base", "test-zlc") for t in ("1", "2", "4") for s in ("0", "60")]
    assert [r["iteration"] for r in rows[:4]] == ["0", "1", "0", "1"]
    assert [r["seed"] for r in rows[:2]] == [str(s) for s in its.iteration_seeds(1, 2)]
    assert [r["cell"] for r in rows[:4]] == ["1", "1", "2", "2"]
    # Each run got what its row says.
    for row, spec in zip(rows, counting_engine):
        assert spec["kernel"]["name"] == row["kernel"]
        assert spec["workload"]["threads"] == int(row["threads"])
        assert spec["kernel"]["swappiness"] == int(row["swappiness"])
        assert spec["seed"] == int(row["seed"])
    assert list(rows[0])[:10] == ["experiment", "machine", "kernel", "run", "workload", "scale", "threads", "swappiness",
                                  "cell", "iteration"]
    assert {"seed", "elapsed_s", "sys_s", "events", "pgscan_direct", "nr_vmscan_write"} <= set(rows[0])
    # The summary: one column per cell, and the verdict on the iterations.
    assert text.startswith("sweep: 12 cell(s) x 2 iteration(s) = 24 runs\n  #1   kernel=test-base, threads=1, swappiness=0\n")
    assert "iterations identical: the seed varies nothing in this sweep" in text
    assert "sweep: 24 runs: 0 from" in err and "24 run now on this process" in err


def test_experiment_axes_are_its_kernels_and_matrix(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    fixture_presets: Any, counting_engine: list[Any]) -> None:
    out = tmp_path / "m.csv"
    code, _, err = call(capsys, "sweep", "tiny-zlc", "--jobs", "1", "--out", str(out))
    assert code == 0, err
    rows = csv_rows(out)
    assert [(r["kernel"], r["size_gb"], r["threads"]) for r in rows] == [
        (k, s, t) for k in ("test-base", "test-zlc") for s in ("0.25", "0.5") for t in ("1", "4")]
    assert {r["experiment"] for r in rows} == {"tiny-zlc"}
    # -k fixes the kernel axis; --vary replaces the matrix's thread counts.
    code, _, err = call(capsys, "sweep", "tiny-zlc", "-k", "test-zlc", "--vary", "threads=2", "--jobs", "1", "--out", str(out))
    assert code == 0, err
    assert [(r["kernel"], r["size_gb"], r["threads"]) for r in csv_rows(out)] == [("test-zlc", "0.25", "2"), ("test-zlc", "0.5", "2")]


def test_machine_and_kernel_fields_and_seed_axis(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                fixture_presets: Any, counting_engine: list[Any]) -> None:
    out = tmp_path / "f.csv"
    code, _, err = call(capsys, "sweep", *FIXTURE, "-k", "test-base", "-t", "1", "--vary", "machine.topology.memory_mib=[256,256,256,256],[128,128,128,128]",
                        "--vary", "kernel.policy.zlc=none,after-first-zone", "--vary", "seed=5,6", "--jobs", "1", "--out", str(out))
    assert code == 0, err
    rows = csv_rows(out)
    assert len(rows) == 8
    assert rows[0]["machine.topology.memory_mib"] == "[256, 256, 256, 256]"
    pages = [sum(z["present_pages"] for n in s["machine"]["nodes"] for z in n["zones"]) for s in counting_engine]
    assert pages[0] > pages[4] and pages[0] == pages[3]
    assert [s["kernel"]["zlc"] for s in counting_engine[:4]] == ["none", "none", "after-first-zone", "after-first-zone"]
    assert [r["base_seed"] for r in rows[:2]] == ["5", "6"] and [r["seed"] for r in rows[:2]] == ["5", "6"]




def test_a_storage_field_of_a_shipped_preset_varies(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    counting_engine: list[Any]) -> None:
    # The 512M box's disks use the seek curve and leave access_us unset; the
    # varied machine must be re-read from what the preset set, not from a
    # dump that spells every unset field out as None (which validation refuses).
    out = tmp_path / "f.csv"
    code, _, err = call(capsys, "sweep", "reclaim-writeback-xfs", "-k", "3.0-rc6-vanilla", "-r", "micro-512M", "--scale", "0.05",
                        "--vary", "machine.storage.devices.0.chunk_kib=64,512", "--jobs", "1", "--out", str(out))
    assert code == 0, err
    assert [s["machine"]["storage"]["devices"][0]["chunk_kib"] for s in counting_engine] == [64, 512]
    assert [r["machine.storage.devices.0.chunk_kib"] for r in csv_rows(out)] == ["64", "512"]
# --------------------------------------------------------------------------- determinism, resume


@requires_engine
def test_jobs_1_and_2_give_identical_files_and_text(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.csv"
        code, text, err = call(capsys, "sweep", *REAL, "--vary", "threads=1,2", "--vary", "kernel.policy.zlc=none,first-eligible",
                               "--iterations", "2", "--jobs", jobs, "--out", str(out))
        assert code == 0, err
        outs.append((out.read_bytes(), text))
    assert outs[0] == outs[1]
    assert len(outs[0][0].splitlines()) == 1 + 8


def test_a_killed_sweep_resumes_without_redoing_finished_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                              fixture_presets: Any, counting_engine: list[Any]) -> None:
    out = tmp_path / "r.csv"
    args = ["sweep", *FIXTURE, "-k", "test-base", "--vary", "threads=1,2,4", "--iterations", "3", "--jobs", "1", "--out", str(out)]
    code, text, err = call(capsys, *args)
    assert code == 0 and len(counting_engine) == 9
    first = out.read_bytes()
    state = sw.state_path(out)
    lines = state.read_text().splitlines(keepends=True)
    assert len(lines) == 9 and all(json.loads(line)["v"] == sw.STATE_VERSION for line in lines)
    # As if killed while writing the sixth record: five whole lines and half of one (and a line of garbage
    # nested deeper than the JSON parser recurses, which is as unreadable).
    state.write_text("".join(lines[:5]) + "[" * 100_000 + "]" * 100_000 + "\n" + lines[5][: len(lines[5]) // 2])
    out.unlink()
    counting_engine.clear()
    code, text2, err = call(capsys, *args)
    assert code == 0, err
    assert len(counting_engine) == 4  # 9 runs, 5 kept
    assert "9 runs: 5 from" in err and "4 run now" in err and "2 unreadable state line(s) ignored" in err
    assert out.read_bytes() == first and text2 == text
    # Everything is in the state now: a rerun runs nothing.
    counting_engine.clear()
    code, _, err = call(capsys, *args)
    assert code == 0 and counting_engine == [] and "9 from" in err
    # A different run (another scale) is a different key: it runs.
    code, _, _ = call(capsys, *args, "--scale", "0.5")
    assert len(counting_engine) == 9


def test_parquet_has_the_same_rows(capsys: pytest.CaptureFixture[str], tmp_path: Path, fixture_presets: Any,
                                   counting_engine: list[Any]) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    args = ["sweep", *FIXTURE, "-k", "test-base", "--vary", "threads=1,2", "--jobs", "1"]
    assert call(capsys, *args, "--out", str(tmp_path / "a.csv"))[0] == 0
    assert call(capsys, *args, "--out", str(tmp_path / "a.parquet"))[0] == 0
    p = pd.read_parquet(tmp_path / "a.parquet")
    c = pd.read_csv(tmp_path / "a.csv", dtype={"seed": str})
    assert list(p.columns) == list(c.columns)
    assert list(p["threads"]) == list(c["threads"]) == [1, 2]
    assert list(p["seed"]) == list(c["seed"])
    assert list(p["elapsed_s"]) == list(c["elapsed_s"])
    assert str(p["pgscan_direct"].dtype) == "Int64"


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("vary", "expected"),
    [
        ("threads", "--vary: 'threads' is not allowed; expected KEY=V1,V2,... (e.g. sysctl.dirty_ratio=20,40)"),
        ("threads=", "--vary: 'threads=' is not allowed; expected KEY=V1,V2,..."),
        ("threads=1,,2", "--vary threads: '1,,2' has an empty value"),
        ("threads=1,1", "--vary threads: '1' is given twice in '1,1'; each value at most once"),
        ("nosuch=1", "--vary: unknown key 'nosuch'; allowed: machine, kernel, run, scale, seed; sysctl.NAME or NAME ("),
        ("sysctl.nosuch=1", "--vary: unknown key 'sysctl.nosuch'; sysctls: min_free_kbytes,"),
        ("workload.files=1", "--vary: unknown key 'workload.files'; fields of the memhog workload: size_gb, threads,"),
        ("machine.nosuch=1", "--vary: unknown key 'machine.nosuch'; machine fields: name,"),
        ("swappiness=101", "--vary: the cell swappiness=101: kernel test-base: sysctl.swappiness: 101 is not allowed; "
                           "expected an integer 0..100"),
        ("swappiness=lots", "--vary: the cell swappiness=lots: kernel test-base: sysctl.swappiness: 'lots' is not allowed"),
        ("threads=1,99", "--vary: the cell threads=99: workload.threads: 99 is not allowed; machine tiny-numa has"),
        ("kernel.policy.zlc=bogus", "--vary: the cell kernel.policy.zlc=bogus: kernel test-base: policy.zlc: 'bogus' is not allowed"),
        ("scale=0", "--vary scale: '0' is not allowed; expected a number S with 0 < S <= 1"),
        ("seed=-1", "--vary seed: '-1' is not allowed; expected an integer 0 <= seed < 2^64"),
        ("run=x", "--vary run=x: run: 'x' is not allowed without an EXPERIMENT"),
    ],
)
def test_bad_vary_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, fixture_presets: Any,
                                     counting_engine: list[Any], vary: str, expected: str) -> None:
    # -t fixes the hog's threads, except where the axis is threads (both together is another error).
    threads = [] if vary.startswith("threads") else ["-t", "1"]
    code, out, err = call(capsys, "sweep", *FIXTURE, "-k", "test-base", *threads, "--vary", vary, "--jobs", "1",
                          "--out", str(tmp_path / "x.csv"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mmtwin: error: " + expected), err
    assert counting_engine == [] and not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--out", "x.txt"], "--out: 'x.txt' is not allowed; expected a file name ending in .csv or .parquet"),
        (["--out", "x.csv", "--iterations", "0"], "--iterations: 0 is not allowed; expected an integer 1..1000"),
        (["--out", "x.csv", "--jobs", "0"], "--jobs: 0 is not allowed; expected an integer >= 1"),
        (["--out", "x.csv", "-t", "1", "--vary", "threads=1,2"], "--vary threads: not allowed together with --threads"),
        (["--out", "x.csv", "--vary", "kernel=test-base,test-zlc"], "--vary kernel: not allowed together with --kernel test-base"),
        (["--out", "x.csv", "--vary", "swappiness=1", "--vary", "sysctl.swappiness=2"],
         "--vary sysctl.swappiness: varies the same parameter as --vary swappiness; give it once"),
        (["--out", "x.csv", "--seed", "3", "--vary", "seed=1,2"], "--vary seed: not allowed together with --seed 3"),
        (["--out", "x.csv", "--ray", "nonsense"], "--ray: 'nonsense' is not allowed; expected auto, HOST:PORT or ray://HOST:PORT"),
    ],
)
def test_bad_options_are_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, fixture_presets: Any,
                                         counting_engine: list[Any], monkeypatch: pytest.MonkeyPatch,
                                         args: list[str], expected: str) -> None:
    if "--ray" in args:
        pytest.importorskip("ray")
    monkeypatch.chdir(tmp_path)
    code, out, err = call(capsys, "sweep", *FIXTURE, "-k", "test-base", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mmtwin: error: " + expected), err
    assert counting_engine == []


# --------------------------------------------------------------------------- Ray


@requires_engine
def test_ray_gives_the_same_rows_as_the_local_pool(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A local Ray instance started here (2 CPUs); the sweep runs as Ray tasks on it."""
    ray = pytest.importorskip("ray")
    args = ["sweep", *REAL, "--vary", "threads=1,2", "--vary", "swappiness=10,60", "--iterations", "2"]
    code, local_text, err = call(capsys, *args, "--jobs", "2", "--out", str(tmp_path / "local.csv"))
    assert code == 0, err
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # no token written to ~/.ray for a throwaway instance
    # Ray's socket paths must fit in 107 bytes: a short directory of its own, removed afterwards.
    ray_dir = tempfile.mkdtemp(prefix="mmtray", dir="/tmp")
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=ray_dir)
        try:
            # This process is a Ray driver already: the sweep uses it.
            code, ray_text, err = call(capsys, *args, "--ray", "auto", "--out", str(tmp_path / "ray.csv"))
            # Another process connects to the instance by its address, as to a cluster.
            address = ray.get_runtime_context().gcs_address
            sub = run_cli(*args, "--ray", address, "--out", str(tmp_path / "sub.csv"), timeout=300)
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert code == 0, err
    assert "8 run now on Ray tasks (auto)" in err
    assert (tmp_path / "ray.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert ray_text == local_text
    assert sub.returncode == 0, sub.stderr[-2000:]
    assert f"8 run now on Ray tasks ({address})" in sub.stderr
    assert (tmp_path / "sub.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert sub.stdout == local_text
