"""Results trees: --output-dir on run, compare and reproduce; mmtwin report and compare --results read them back."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from conftest import requires_engine

from mmtwin import cli
from mmtwin import results as saved
from mmtwin.reports.mmtests2011 import gnu_time

RUN_LARGEDD = ["run", "-e", "zlcfirst", "-r", "largedd", "--scale", "0.02"]
COMPARE_LARGEDD = ["compare", "-e", "zlcfirst", "-r", "largedd", "--scale", "0.02", "-j", "1"]
RUN = "3.0-rc6-vanilla"


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI in this process; (exit status, stdout, stderr)."""
    with pytest.raises(SystemExit) as info:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mmtwin: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- layout and contents


@requires_engine
def test_run_tree_layout_and_contents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "out"
    code, out, err = call(capsys, *RUN_LARGEDD, "--output-dir", str(root))
    assert code == 0, err
    assert f"wrote {root / saved.SUMMARY}" in err

    summary = json.loads((root / saved.SUMMARY).read_text())
    assert summary["schema"] == "mmtwin-results" and summary["schema_version"] == 1
    assert summary["command"] == "run" and summary["summary_line"] == out.splitlines()[0]
    [entry] = summary["runs"]
    assert (entry["name"], entry["test"], entry["kernel"], entry["machine"]) == (RUN, "largedd", RUN, "x86-64-2node-24cpu")
    [it] = entry["iterations"]
    assert it == {"iteration": 0, "mmtests": f"work/log/{RUN}/iter-0/largedd",
                  "spec": f"mmtwin/{RUN}/iter-0/largedd/spec.json", "result": f"mmtwin/{RUN}/iter-0/largedd/result.json",
                  "timeline": f"mmtwin/{RUN}/iter-0/largedd/timeline.csv"}

    # mmtwin's own files: the result without perf and timeline; the timeline as CSV.
    result = json.loads((root / it["result"]).read_text())
    assert "perf" not in result and "timeline" not in result
    spec = json.loads((root / it["spec"]).read_text())
    assert spec["workload"]["kind"] == "largedd" and spec["kernel"]["name"] == RUN
    import pandas as pd

    frame = pd.read_csv(root / it["timeline"])
    zones = [f"free N{z['node']}/{z['zone']}" for z in result["zones"]]
    assert list(frame.columns) == ["t_s", *zones, "nr_dirty", "nr_writeback", *saved.TIMELINE_COUNTERS]
    assert frame["t_s"].iloc[0] == 0.0 and frame["t_s"].is_monotonic_increasing and len(frame) > 10
    # The event counters: from 0 at the start to the run's /proc/vmstat delta in the last row.
    vm, vm0 = result["vmstat"], result["vmstat_start"]

    def delta(prefix: str) -> int:
        return sum(v - vm0[k] for k, v in vm.items() if k == prefix or k.startswith(prefix + "_"))

    assert set(saved.TIMELINE_COUNTERS) <= set(frame.columns)
    assert (frame[list(saved.TIMELINE_COUNTERS)].iloc[0] == 0).all()
    last = frame.iloc[-1]
    assert last["pgpgout"] == delta("pgpgout") > 0 and last["pgpgin"] == delta("pgpgin")
    assert last["pgscan_kswapd"] == delta("pgscan_kswapd") and last["pgscan_direct"] == delta("pgscan_direct")
    assert last["pgsteal_kswapd"] + last["pgsteal_direct"] == delta("pgsteal")
    assert last["allocstall"] == delta("allocstall") and last["nr_vmscan_write"] == delta("nr_vmscan_write")
    assert last["kswapd_wakeups"] == result["sim"]["kswapd_wakeups"]

    # The MMTests side: work/log/<RUN>/iter-0.
    it_dir = root / "work" / "log" / RUN / "iter-0"
    t = result["times"]
    time_line = f"time :: largedd {gnu_time(t['user_s'])} user {gnu_time(t['sys_s'])} system {gnu_time(t['elapsed_s'])} elapsed"
    end = saved.SIM_EPOCH + int(t["elapsed_s"])
    assert (it_dir / "tests-timestamp").read_text().splitlines() == [
        f"start :: {saved.SIM_EPOCH}", f"test begin :: largedd {saved.SIM_EPOCH}", f"test end :: largedd {end} 0", time_line]
    sysstate = (it_dir / "tests-sysstate").read_text()
    # MMTests' mmtests-vmstat parser ends a /proc/vmstat block at the /proc/zoneinfo header that follows it.
    headers = [ln for ln in sysstate.splitlines() if ln.startswith(("file ", "test ", "time ", "start "))]
    assert headers == [f"start :: {saved.SIM_EPOCH}", f"test begin :: largedd {saved.SIM_EPOCH}",
                       "file start :: /proc/vmstat", "file start :: /proc/zoneinfo", "file start :: /proc/meminfo",
                       "file end :: /proc/vmstat", "file end :: /proc/zoneinfo", "file end :: /proc/meminfo",
                       f"test end :: largedd {end} 0", time_line]
    # /proc/vmstat: 3.0's complete list; the engine's rows carry their values, in the same order.
    start_block = sysstate.split("file start :: /proc/vmstat\n")[1].split("file start :: /proc/zoneinfo\n")[0]
    start_rows = [ln.split() for ln in start_block.splitlines()]
    assert len(start_rows) > len(result["vmstat_start"]) and start_rows[0] == ["nr_free_pages", str(result["vmstat_start"]["nr_free_pages"])]
    assert [r for r in start_rows if r[0] in result["vmstat_start"]] == [[k, str(v)] for k, v in result["vmstat_start"].items()]
    assert all(r[1] == "0" for r in start_rows if r[0] not in result["vmstat_start"])
    assert ["thp_split", "0"] == start_rows[-1]
    # /proc/zoneinfo: the whole text, from the start and end snapshots.
    end_zoneinfo = sysstate.split("file end :: /proc/zoneinfo\n")[1].split("file end :: /proc/meminfo\n")[0]
    assert [int(ln.split()[2]) for ln in end_zoneinfo.splitlines() if ln.startswith("  pages free")] == [
        z["free_end"] for z in result["zones"]]
    assert f"Node 1, zone   Normal\n" in end_zoneinfo
    assert end_zoneinfo.count("  pagesets\n") == len(result["zones"]) and "  inactive_ratio:" in end_zoneinfo

    # proc-vmstat: the start, every 10 simulated seconds (--output-dir's default --proc-every), the end.
    proc = gzip.decompress((it_dir / "proc-vmstat-largedd.gz").read_bytes()).decode()
    blocks = proc.split("time: ")[1:]
    stamps = [int(b.split("\n", 1)[0]) for b in blocks]
    assert stamps == [saved.SIM_EPOCH, *range(saved.SIM_EPOCH + 10, end + 1, 10), end][: len(stamps)] and stamps[-1] == end
    assert len(stamps) == 2 + int(t["elapsed_s"]) // 10
    assert blocks[-1].split("\n", 1)[1] == sysstate.split("file end :: /proc/vmstat\n")[1].split("file end :: /proc/zoneinfo\n")[0]
    # The other /proc monitors sample at the same times.
    for monitor in ("proc-buddyinfo", "proc-zoneinfo", "proc-pagetypeinfo", "numa-numastat"):
        text = gzip.decompress((it_dir / f"{monitor}-largedd.gz").read_bytes()).decode()
        assert [int(b.split("\n", 1)[0]) for b in text.split("time: ")[1:]] == stamps, monitor

    # vmstat: two header lines, then a line per sample whose `free` is the zones' free pages in KiB.
    vm = gzip.decompress((it_dir / "vmstat-largedd.gz").read_bytes()).decode().splitlines()
    assert len(vm) == 2 + len(frame)
    assert vm[1].split("--", 1)[1].split() == "r b swpd free buff cache si so bi bo in cs us sy id wa st".split()
    for i in (0, len(frame) // 2, len(frame) - 1):
        stamp, cols = vm[2 + i].split("--", 1)
        assert float(stamp.split()[1]) == pytest.approx(frame["t_s"].iloc[i], abs=1e-4)
        assert int(cols.split()[3]) == int(frame[zones].iloc[i].sum()) * 4
    # bi and bo: pgpgin and pgpgout (KiB) per second since the previous line, whole numbers.
    bo = [int(line.split("--", 1)[1].split()[9]) for line in vm[2:]]
    rates = [(frame["pgpgout"].iloc[i] - frame["pgpgout"].iloc[i - 1]) / (frame["t_s"].iloc[i] - frame["t_s"].iloc[i - 1])
             for i in range(1, len(frame))]
    assert bo[0] == 0 and max(bo) > 0
    assert all(abs(b - r) < 1.0001 for b, r in zip(bo[1:], rates)), [(b, r) for b, r in zip(bo[1:], rates) if abs(b - r) >= 1]

    # The benchmark's own log: largedd.result as the 2011 shellpack wrote it.
    lines = (it_dir / "largedd" / "logs" / "largedd.result").read_text().splitlines()
    phases = result["benchmark"]["largedd"]["phases"]
    assert lines[0] == f"0:Start time:{saved.SIM_EPOCH}:0"
    assert [ln.split(":")[1] for ln in lines[1:]] == [f"Time to {p['name']}" for p in phases]
    assert [int(ln.split(":")[3]) for ln in lines[1:]] == [int(p["seconds"]) for p in phases]


@requires_engine
def test_tree_is_byte_identical_when_written_twice_and_replaces_an_earlier_tree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert call(capsys, *RUN_LARGEDD, "--output-dir", str(a))[0] == 0
    assert call(capsys, *RUN_LARGEDD, "--output-dir", str(b))[0] == 0
    # 9 files, snapshots.json, 14 /proc files (start and end: vmstat, zoneinfo, buddyinfo, pagetypeinfo,
    # diskstats, node0/numastat, node1/numastat), 4 more monitors (proc-buddyinfo, -zoneinfo, -pagetypeinfo,
    # numa-numastat), and 2 in the classic layout (tests-timestamp-<RUN>, largedd.result)
    assert tree_bytes(a) == tree_bytes(b) and len(tree_bytes(a)) == 30
    # Writing another kernel's run into an earlier tree replaces it: nothing of the old RUN is left.
    code, _, err = call(capsys, *RUN_LARGEDD, "-k", "3.0-rc6-zlcfirst", "--output-dir", str(a))
    assert code == 0, err
    assert sorted(p.name for p in (a / "work" / "log").iterdir()) == [
        "3.0-rc6-zlcfirst", "largedd-3.0-rc6-zlcfirst", "tests-timestamp-3.0-rc6-zlcfirst"]
    assert sorted(p.name for p in (a / "mmtwin").iterdir()) == ["3.0-rc6-zlcfirst"]


# --------------------------------------------------------------------------- round trips


@requires_engine
def test_report_prints_what_run_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, live, err = call(capsys, *RUN_LARGEDD, "--output-dir", str(tmp_path / "r"))
    assert code == 0, err
    code, again, err = call(capsys, "report", str(tmp_path / "r"))
    assert code == 0, err
    assert again == live
    assert "MMTests Statistics: vmstat" in again and "Time to dd source files" in again


@requires_engine
def test_report_prints_what_compare_printed_and_compare_reads_saved_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, live, err = call(capsys, *COMPARE_LARGEDD, "--output-dir", str(tmp_path / "c"))
    assert code == 0, err
    assert call(capsys, "report", str(tmp_path / "c"))[1] == live
    summary = json.loads((tmp_path / "c" / saved.SUMMARY).read_text())
    assert [r["name"] for r in summary["runs"]] == ["3.0-rc6-vanilla", "3.0-rc6-zlcfirst", "3.0-rc6-zlcreconsider"]

    # Two saved single-kernel runs compared: the same table as the live comparison of those kernels.
    for k in ("3.0-rc6-vanilla", "3.0-rc6-zlcreconsider"):
        assert call(capsys, *RUN_LARGEDD, "-k", k, "--output-dir", str(tmp_path / k))[0] == 0
    code, live2, _ = call(capsys, *COMPARE_LARGEDD, "-k", "3.0-rc6-vanilla", "-k", "3.0-rc6-zlcreconsider")
    assert code == 0
    code, from_saved, err = call(capsys, "compare", "--results", str(tmp_path / "3.0-rc6-vanilla"),
                                 "--results", str(tmp_path / "3.0-rc6-zlcreconsider"), "--output-dir", str(tmp_path / "both"))
    assert code == 0, err
    assert from_saved.split("\n", 1)[1] == live2.split("\n", 1)[1]
    assert "LARGE DD" in from_saved
    # ... and that comparison, saved again, reads back the same.
    assert call(capsys, "report", str(tmp_path / "both"))[1] == from_saved


@requires_engine
def test_reproduce_output_dir_keeps_every_run_and_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, live, err = call(capsys, "reproduce", "zlcfirst", "--scale", "0.02", "-j", "1", "--output-dir", str(tmp_path / "z"))
    assert code in (0, 1), err
    summary = json.loads((tmp_path / "z" / saved.SUMMARY).read_text())
    assert summary["command"] == "reproduce"
    kernels = ("3.0-rc6-vanilla", "3.0-rc6-zlcfirst", "3.0-rc6-zlcreconsider")
    assert sorted((r["name"], r["test"]) for r in summary["runs"]) == [
        (k, t) for k in kernels for t in ("fsmark", "largedd", "mmapstream")]
    [rep] = summary["reproductions"]
    assert rep["name"] == "zlcfirst" and rep["held"] == (code == 0) and rep["data"]["claims"]
    # One RUN per kernel holds the three tests, one after another on the simulated clock.
    stamps = (tmp_path / "z" / "work" / "log" / "3.0-rc6-vanilla" / "iter-0" / "tests-timestamp").read_text()
    assert [ln.split()[3] for ln in stamps.splitlines() if ln.startswith("test begin")] == ["fsmark", "largedd", "mmapstream"]
    assert (tmp_path / "z" / "work" / "log" / "3.0-rc6-vanilla" / "iter-0" / "fsmark" / "logs" / "fsmark-24.log.gz").is_file()
    assert call(capsys, "report", str(tmp_path / "z"))[1] == live


@requires_engine
@pytest.mark.parametrize("extra", [[], ["--no-ftrace"]])
def test_report_of_fs_mark_compare_keeps_the_ftrace_choice(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           extra: list[str]) -> None:
    args = ["compare", "-e", "zlcfirst", "-r", "fsmark", "--scale", "0.02", "-j", "1", *extra]
    code, live, err = call(capsys, *args, "--output-dir", str(tmp_path / "f"))
    assert code == 0, err
    assert call(capsys, "report", str(tmp_path / "f"))[1] == live
    assert json.loads((tmp_path / "f" / saved.SUMMARY).read_text())["ftrace"] is not bool(extra)


def test_run_names_grow_only_as_far_as_needed() -> None:
    def spec(machine: str, kind: str, gb: float = 1.0, threads: int = 2) -> dict:
        return {"machine": {"name": machine}, "workload": {"kind": kind, "bytes": int(gb * 2**30), "threads": threads}}

    assert saved.run_names([("a", spec("m", "fsmark")), ("b", spec("m", "fsmark")), ("a", spec("m", "largedd"))]) == ["a", "b", "a"]
    assert saved.run_names([("a", spec("m", "fsmark")), ("a", spec("n", "fsmark"))]) == ["a-m", "a-n"]
    assert saved.run_names([("a", spec("m", "memhog", 1, 2)), ("a", spec("m", "memhog", 2, 4))]) == ["a-m-1g-2t", "a-m-2g-4t"]
    assert saved.run_names([("a", spec("m", "fsmark")), ("a", spec("m", "fsmark"))]) == ["a-1", "a-2"]
    assert saved.run_names([("x/y z", spec("m", "fsmark"))]) == ["x_y_z"]


# --------------------------------------------------------------------------- bad output paths: before any work


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any call into the engine fails the test: a bad path must be found before the work."""
    import mmtwin.engine

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("the engine ran before the output path was checked")

    monkeypatch.setattr(mmtwin.engine, "run_spec", boom)
    monkeypatch.setattr(mmtwin.engine, "run_many", boom)


@pytest.mark.parametrize("command", [RUN_LARGEDD, COMPARE_LARGEDD, ["reproduce", "zlcfirst", "--scale", "0.02"]])
def test_output_dir_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], no_engine: None, command: list[str]) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    code, out, err = call(capsys, *command, "--output-dir", str(target))
    one_line_error(code, err, "--output-dir", str(target), "is not a directory")
    assert out == ""


def test_output_dir_cannot_be_created_or_written(tmp_path: Path, capsys: pytest.CaptureFixture[str], no_engine: None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("x")
    code, _, err = call(capsys, *RUN_LARGEDD, "--output-dir", str(tmp_path / "file" / "sub"))
    one_line_error(code, err, "--output-dir", "cannot create directory", "file/sub")

    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    code, _, err = call(capsys, *RUN_LARGEDD, "--output-dir", str(tmp_path / "busy"))
    one_line_error(code, err, "--output-dir", "is not empty", "notes.txt")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"

    # Permission bits do not tell (root passes them): a file is created in DIR and removed at once.
    import tempfile

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as m:
        m.setattr(tempfile, "mkstemp", refuse)
        code, _, err = call(capsys, *RUN_LARGEDD, "--output-dir", str(tmp_path / "ro"))
    one_line_error(code, err, "--output-dir", "is not writable: Permission denied")
    assert list((tmp_path / "ro").iterdir()) == []


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs sysfs")
@pytest.mark.parametrize(("command", "option"), [
    (RUN_LARGEDD, "--plot"), (RUN_LARGEDD, "--output-dir"), (COMPARE_LARGEDD, "--output-dir"),
    (["reproduce", "zlcfirst", "--scale", "0.02"], "--plot"), (["reproduce", "zlcfirst", "--scale", "0.02"], "--output-dir"),
])
def test_unwritable_directory_even_for_root(capsys: pytest.CaptureFixture[str], no_engine: None, command: list[str],
                                            option: str) -> None:
    """/sys/kernel passes os.access(W_OK) as root but refuses new files: found before the work, not after it (exit 3)."""
    code, out, err = call(capsys, *command, option, "/sys/kernel")
    one_line_error(code, err, option, "directory '/sys/kernel' is not writable: Permission denied")
    assert out == ""


@pytest.mark.parametrize(("command", "option"), [
    (RUN_LARGEDD, "--plot"), (RUN_LARGEDD, "--output-dir"), (COMPARE_LARGEDD, "--output-dir"),
    (["reproduce", "zlcfirst", "--scale", "0.02"], "--plot"), (["report", "."], "--html"),
])
def test_empty_directory_option_is_an_error(capsys: pytest.CaptureFixture[str], no_engine: None, command: list[str],
                                            option: str) -> None:
    """'' is not the current directory by accident (Path('') is '.')."""
    code, out, err = call(capsys, *command, option, "")
    assert err == f"mmtwin: error: {option}: '' is not allowed; expected a directory path (. for the current directory)\n"
    assert code == 2 and out == ""


# --------------------------------------------------------------------------- bad results trees


def _copy_tree(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


@requires_engine
def test_bad_results_trees_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good"
    assert call(capsys, *RUN_LARGEDD, "--output-dir", str(good))[0] == 0
    summary = json.loads((good / saved.SUMMARY).read_text())
    result_rel = summary["runs"][0]["iterations"][0]["result"]
    timeline_rel = summary["runs"][0]["iterations"][0]["timeline"]

    code, _, err = call(capsys, "report", str(tmp_path / "missing"))
    one_line_error(code, err, "RESULTS", "does not exist")
    (tmp_path / "plain").write_text("x")
    code, _, err = call(capsys, "report", str(tmp_path / "plain"))
    one_line_error(code, err, "RESULTS", "is not a directory")
    (tmp_path / "empty").mkdir()
    code, _, err = call(capsys, "report", str(tmp_path / "empty"))
    one_line_error(code, err, "RESULTS", "holds no mmtwin-results.json")

    def broken(name: str, edit) -> Path:
        d = _copy_tree(good, tmp_path / name)
        edit(d)
        return d

    cases = [
        (lambda d: (d / saved.SUMMARY).write_text("{not json"), ["mmtwin-results.json", "not valid JSON"]),
        # Nesting deeper than the parser's recursion: one line, not RecursionError (exit 3).
        (lambda d: (d / saved.SUMMARY).write_text("[" * 100_000 + "]" * 100_000),
         ["mmtwin-results.json: not valid JSON: arrays or objects nested too deeply to parse"]),
        (lambda d: (d / saved.SUMMARY).write_text(json.dumps({**summary, "schema": "other"})), ["schema: 'other' is not allowed"]),
        (lambda d: (d / saved.SUMMARY).write_text(json.dumps({**summary, "schema_version": 99})), ["schema_version: 99", "upgrade"]),
        (lambda d: (d / saved.SUMMARY).write_text(json.dumps({**summary, "command": "bench"})), ["command", "'bench'"]),
        (lambda d: (d / saved.SUMMARY).write_text(json.dumps({**summary, "runs": []})), ["runs: empty"]),
        (lambda d: (d / result_rel).unlink(), ["result.json", "missing"]),
        (lambda d: (d / result_rel).write_text(json.dumps({"times": {}})), ["result.json", "kernel: missing"]),
        (lambda d: (d / timeline_rel).write_text("t_s,free N0/DMA\n0.0,abc\n"), ["timeline.csv"]),
        (lambda d: (d / timeline_rel).write_text("a,b\n1,2\n"), ["timeline.csv", "t_s: missing"]),
    ]
    for i, (edit, needles) in enumerate(cases):
        d = broken(f"bad{i}", edit)
        code, out, err = call(capsys, "report", str(d))
        one_line_error(code, err, str(d), *needles)
        assert out == ""
    # A path in the summary may not leave the tree.
    escaping = json.loads(json.dumps(summary))
    escaping["runs"][0]["iterations"][0]["spec"] = "../../etc/passwd"
    d = broken("escape", lambda d: (d / saved.SUMMARY).write_text(json.dumps(escaping)))
    code, _, err = call(capsys, "report", str(d))
    one_line_error(code, err, "spec", "inside the tree")


@requires_engine
def test_compare_results_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = tmp_path / "one"
    assert call(capsys, *RUN_LARGEDD, "--output-dir", str(one))[0] == 0
    code, _, err = call(capsys, "compare", "--results", str(one))
    one_line_error(code, err, "--results", "1 run(s) found", "at least two")
    code, _, err = call(capsys, "compare", "--results", str(one), "--results", str(one), "-k", "3.0-rc6-vanilla")
    one_line_error(code, err, "--kernel", "not allowed with --results")
    fs = tmp_path / "fs"
    assert call(capsys, "run", "-e", "zlcfirst", "-r", "fsmark", "--scale", "0.02", "--output-dir", str(fs))[0] == 0
    code, _, err = call(capsys, "compare", "--results", str(one), "--results", str(fs))
    one_line_error(code, err, "--results", "fsmark and largedd", "cannot be compared")
    code, _, err = call(capsys, "compare", "--results", str(one), "--results", str(one), "--era", "2017")
    one_line_error(code, err, "--era", "'2017'")
    code, out, err = call(capsys, "compare", "--results", str(one), "--results", str(one))
    assert code == 0, err
    assert "LARGE DD" in out


def test_help_names_the_new_options(capsys: pytest.CaptureFixture[str]) -> None:
    for command, needles in ((["run"], ["--output-dir"]), (["compare"], ["--output-dir", "--results"]),
                             (["reproduce"], ["--output-dir"]), (["report"], ["RESULTS", "--html"])):
        code, out, _ = call(capsys, *command, "--help")
        assert code == 0
        for n in needles:
            assert n in out, (command, n)
    assert os.path.basename(saved.SUMMARY) == "mmtwin-results.json"
