"""--iterations on run and compare: derived seeds, MMTests summary rows over
iterations, and the line that says when the seed varied nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import requires_engine

from mmtwin import cli
from mmtwin import iterations as its
from mmtwin.errors import MmtwinError

RUN_TINY = ["run", "--machine", "tiny-numa", "--kernel", "test-base", "--size-gb", "0.5", "--threads", "4"]
COMPARE_TINY = ["compare", "--machine", "tiny-numa", "-k", "test-base", "-k", "test-zlc", "--size-gb", "0.5",
                "--threads", "4", "--jobs", "1"]


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def seed_varying_engine(spec: dict[str, Any]) -> dict[str, Any]:
    """The fake engine with times that depend on the seed (the real engine's do not, yet)."""
    from fakeengine import fake_run_spec

    result = fake_run_spec(spec)
    bump = 1.0 + (spec["seed"] % 7) / 100.0
    result["times"] = {k: round(v * bump, 6) for k, v in result["times"].items()}
    return result


@pytest.fixture
def varying_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    import mmtwin.engine

    monkeypatch.setattr(mmtwin.engine, "run_spec", seed_varying_engine)


# --------------------------------------------------------------------------- seeds


def test_iteration_zero_is_the_seed_itself_and_the_others_are_splitmix64() -> None:
    assert its.iteration_seed(42, 0) == 42
    # SplitMix64's first two outputs from state 0 (the reference implementation's values).
    assert its.iteration_seed(0, 1) == 0xE220A8397B1DCDAF
    assert its.iteration_seed(0, 2) == 0x6E789E6AA1B965F4
    seeds = its.iteration_seeds(1, 50)
    assert seeds == its.iteration_seeds(1, 50)
    assert len(set(seeds)) == 50 and all(0 <= s < 2**64 for s in seeds)
    # Neighbouring base seeds do not share iterations.
    assert not set(its.iteration_seeds(1, 50)) & set(its.iteration_seeds(2, 50))


@pytest.mark.parametrize("bad", [0, -1, its.MAX_ITERATIONS + 1, True, 2.0])
def test_check_iterations_refuses(bad: Any) -> None:
    with pytest.raises(MmtwinError, match=r"--iterations: .* is not allowed; expected an integer 1\.\.1000"):
        its.check_iterations(bad)


# --------------------------------------------------------------------------- summary rows


def _column(name: str, elapsed: list[float], identical: bool | None = None) -> its.Column:
    figs = [{"user_s": 1.0, "sys_s": 2.0, "elapsed_s": e} for e in elapsed]
    same = len(set(elapsed)) == 1 if identical is None else identical
    return its.Column(name, figs, same, ("", name))


def test_summary_rows_in_the_perl_look_compute_min_amean_stddev_coeffvar_max() -> None:
    text = its.summary_table([_column("a", [1.0, 3.0]), _column("b", [2.0, 2.5])], list(its.TIME_OPS), "2017")
    rows = {" ".join(line.split()[:2]): line for line in text.splitlines()}
    assert rows["Min Elapsed"].split()[2:] == ["1.00", "(", "0.00%)", "2.00", "(-100.00%)"]
    assert rows["Amean Elapsed"].split()[2] == "2.00"
    # Population stddev of [1, 3] is 1; CoeffVar 1 * 100 / 2 = 50.
    assert rows["Stddev Elapsed"].split()[2] == "1.00"
    assert rows["CoeffVar Elapsed"].split()[2] == "50.00"
    assert rows["Max Elapsed"].split()[2] == "3.00"
    # Stat-major: every Min row before every Amean row.
    labels = [line.split()[0] for line in text.splitlines() if line.strip() and not line.startswith(" ")]
    assert labels == ["Min"] * 3 + ["Amean"] * 3 + ["Stddev"] * 3 + ["CoeffVar"] * 3 + ["Max"] * 3


def test_summary_rows_in_the_2011_look_and_hmean_for_rates() -> None:
    cols = [its.Column("k", [{"files_per_sec_mean": 10.0, "elapsed_s": 1.0}, {"files_per_sec_mean": 40.0, "elapsed_s": 2.0}],
                       False, ("", "k"))]
    old = its.summary_table(cols, its.ops_for(["fsmark"]), "2011")
    assert [line.split()[1] for line in old.splitlines()[1:5]] == ["min", "mean", "stddev", "max"]
    assert old.splitlines()[2].split()[2] == "25.00"  # 2011: the arithmetic mean
    new = its.summary_table(cols, its.ops_for(["fsmark"]), "2017")
    hmean = next(line for line in new.splitlines() if line.startswith("Hmean"))
    assert hmean.split()[2] == "16.00"  # 2 / (1/10 + 1/40)


def test_no_spread_is_printed_as_a_dash_or_left_out_never_as_zero() -> None:
    mixed = its.summary_table([_column("a", [1.0, 3.0]), _column("b", [2.0, 2.0])], list(its.TIME_OPS), "2017")
    stddev = next(line for line in mixed.splitlines() if line.startswith("Stddev") and "Elapsed" in line)
    assert stddev.split()[-1] == "-"
    assert its.notes([_column("a", [1.0, 3.0]), _column("b", [2.0, 2.0])]) == [
        "iterations identical for kernel b: the seed varies nothing in those runs "
        "(their Stddev and CoeffVar print -, not a measured 0)"]
    same = its.summary_table([_column("a", [2.0, 2.0])], list(its.TIME_OPS), "2017")
    assert "Stddev" not in same and "CoeffVar" not in same and "Amean" in same


# --------------------------------------------------------------------------- the commands


def test_run_iterations_with_the_fake_engine_say_identical(capsys: pytest.CaptureFixture[str], fixture_presets: Any,
                                                          fake_engine: None) -> None:
    code, single, _ = call(capsys, *RUN_TINY)
    assert code == 0
    code, out, err = call(capsys, *RUN_TINY, "--iterations", "3")
    assert code == 0, err
    # The report is iteration 0's, exactly the single run's; then the seeds and the verdict.
    assert out.startswith(single.rstrip("\n"))
    tail = out[len(single.rstrip("\n")):].strip().splitlines()
    assert tail[0].startswith("iterations: 3, seeds 1, 10451216379200822465, ")
    assert tail[1] == f"{its.IDENTICAL_LINE} (3 iterations gave byte-identical results)"
    assert "Stddev" not in out


def test_run_iterations_that_differ_get_the_summary_rows(capsys: pytest.CaptureFixture[str], fixture_presets: Any,
                                                         varying_engine: None) -> None:
    code, out, err = call(capsys, *RUN_TINY, "--iterations", "3")
    assert code == 0, err
    assert its.IDENTICAL_LINE not in out
    block = out[out.index("MMTests Statistics: iterations"):]
    stddev = next(line for line in block.splitlines() if line.startswith("Stddev") and "Elapsed" in line)
    assert float(stddev.split()[2]) > 0


def test_compare_iterations_pool_the_memhog_samples(capsys: pytest.CaptureFixture[str], fixture_presets: Any,
                                                    varying_engine: None) -> None:
    code, out, err = call(capsys, *COMPARE_TINY, "--iterations", "4")
    assert code == 0, err
    stddev = next(line for line in out.splitlines() if line.startswith("Stddev") and "Elapsed-4" in line)
    assert float(stddev.split()[2]) > 0
    assert "iterations: 4, seeds 1, " in out and its.IDENTICAL_LINE not in out
    code, again, _ = call(capsys, *COMPARE_TINY, "--iterations", "4", "--jobs", "2")
    assert again == out


def test_compare_iterations_identical_say_so(capsys: pytest.CaptureFixture[str], fixture_presets: Any,
                                            fake_engine: None) -> None:
    code, single, _ = call(capsys, *COMPARE_TINY)
    code, out, err = call(capsys, *COMPARE_TINY, "--iterations", "2")
    assert code == 0, err
    assert out.startswith(single.rstrip("\n"))
    assert f"{its.IDENTICAL_LINE} (2 iterations of each kernel gave byte-identical results; the table above is iteration 0's)" in out


def test_compare_file_workload_iterations_2011_rows(capsys: pytest.CaptureFixture[str], varying_engine: None) -> None:
    code, out, err = call(capsys, "compare", "-e", "zlcfirst", "-r", "largedd", "--scale", "0.05", "--iterations", "3",
                          "--jobs", "1")
    assert code == 0, err
    block = out[out.index("MMTests Statistics: iterations"):]
    assert any(line.split()[:2] == ["Elapsed", "stddev"] for line in block.splitlines())


def test_compare_json_has_every_iteration(capsys: pytest.CaptureFixture[str], fixture_presets: Any, fake_engine: None) -> None:
    code, out, _ = call(capsys, *COMPARE_TINY, "--iterations", "2", "--json")
    data = json.loads(out)
    assert [r["kernel"] for r in data["iterations"]] == ["test-base", "test-zlc"]
    assert [run["seed"] for run in data["iterations"][0]["runs"]] == its.iteration_seeds(1, 2)
    assert data["iterations"][0]["runs"][1]["spec"]["seed"] == its.iteration_seed(1, 1)
    assert data["iterations"][0]["identical"] is True


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--iterations", "0"], "mmtwin: error: --iterations: 0 is not allowed; expected an integer 1..1000"),
        (["--iterations", "2", "--trace", "/tmp/x.trace"],
         "mmtwin: error: --trace: not allowed with --iterations 2; trace one iteration (--iterations 1)"),
    ],
)
def test_bad_iterations_are_one_line(capsys: pytest.CaptureFixture[str], fixture_presets: Any, fake_engine: None,
                                     args: list[str], expected: str) -> None:
    code, out, err = call(capsys, *RUN_TINY, *args)
    assert code == 2 and out == "" and err == expected + "\n"


@requires_engine
def test_real_engine_iterations_are_identical_today(capsys: pytest.CaptureFixture[str]) -> None:
    """The engine reads no seed (crates/mmtwin-core/src): every iteration comes out the same, and the output says so."""
    args = ["run", "-m", "uma-x86-64", "-k", "3.0-rc6-vanilla", "--size-gb", "0.02", "-t", "2", "--iterations", "3"]
    code, out, err = call(capsys, *args)
    assert code == 0, err
    assert f"{its.IDENTICAL_LINE} (3 iterations gave byte-identical results)" in out
    code, again, _ = call(capsys, *args)
    assert again == out
