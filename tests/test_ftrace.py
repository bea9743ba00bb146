"""The FTrace Reclaim Statistics blocks (seed 004): the engine's aggregation,
the 2011 MMTests layout, the CLI, and the kernel's own post-processing script.

The script test needs Debian's linux-source-6.1 (the kernel tarball in
/usr/src) and perl; .ci/run installs both. Elsewhere it is skipped, naming
what is missing; in CI (``CI`` set) a missing package is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from conftest import requires_engine, run_cli
from mmtwin.errors import MmtwinError
from mmtwin.reports import ftrace as ft

# --------------------------------------------------------------------------- the seed's blocks, as published

# Seed 004, the fs_mark run with monitors (512M, xfs, one thread per CPU):
# the rows under the header of "FTrace Reclaim Statistics: vmscan", then
# "FTrace Reclaim Statistics: congestion_wait", exactly as printed
# (trailing spaces included). The header rows are left out: the posting's
# were shifted by hand (see mmtests2011.py).
SEED_FSMARK_VMSCAN = """\
Direct reclaims                              16173      17605      14313 
Direct reclaim pages scanned                886587     968087     784109 
Direct reclaim pages reclaimed              883407     960496     781632 
Direct reclaim write file async I/O              0          0          0 
Direct reclaim write anon async I/O              0          0          0 
Direct reclaim write file sync I/O               0          0          0 
Direct reclaim write anon sync I/O               0          0          0 
Wake kswapd requests                         20699      22048      22893 
Kswapd wakeups                                  24         20         25 
Kswapd pages scanned                      18931089   18275983   18324613 
Kswapd pages reclaimed                     8878200    8768648    8885482 
Kswapd reclaim write file async I/O          37966          0          0 
Kswapd reclaim write anon async I/O         132062     117717     123567 
Kswapd reclaim write file sync I/O               0          0          0 
Kswapd reclaim write anon sync I/O               0          0          0 
Time stalled direct reclaim (seconds)         0.08       0.09       0.08 
Time kswapd awake (seconds)                 132.11     117.78     115.82 

Total pages scanned                       19817676  19244070  19108722
Total pages reclaimed                      9761607   9729144   9667114
%age total pages scanned/reclaimed          49.26%    50.56%    50.59%
%age total pages scanned/written             0.86%     0.61%     0.65%
%age  file pages scanned/written             0.19%     0.00%     0.00%
Percentage Time Spent Direct Reclaim         0.15%     0.17%     0.15%
Percentage Time kswapd Awake                95.98%    96.58%    95.63%
"""
SEED_FSMARK_CONGESTION = """\
FTrace Reclaim Statistics: congestion_wait
Direct number congest     waited                 0          0          0 
Direct time   congest     waited               0ms        0ms        0ms 
Direct full   congest     waited                 0          0          0 
Direct number conditional waited                 2         17          6 
Direct time   conditional waited               0ms        0ms        0ms 
Direct full   conditional waited                 0          0          0 
KSwapd number congest     waited                 4          8         10 
KSwapd time   congest     waited               4ms       20ms        8ms 
KSwapd full   congest     waited                 0          0          0 
KSwapd number conditional waited                 0      26036      26283 
KSwapd time   conditional waited               0ms       16ms        4ms 
KSwapd full   conditional waited                 0          0          0 
"""
# The MICRO run's congestion block (the times that are not multiples of 1000 ms).
SEED_MICRO_CONGESTION_ROWS = """\
Direct number conditional waited             12345      37713      34841 
Direct time   conditional waited           12396ms      132ms      168ms 
Direct full   conditional waited                53          0          0 
KSwapd number congest     waited              4248       2957       2293 
KSwapd time   congest     waited           15320ms    10312ms    13416ms 
KSwapd full   congest     waited                31          1         21 
"""
# The seed's duration block of that fs_mark run: User/Sys and Total Elapsed.
SEED_FSMARK_TIMES = ((53.26, 137.65), (52.27, 121.95), (51.88, 121.11))
KERNELS = ["3.0.0-rc6-vanilla", "3.0.0-rc6-kswapwb-v2r5", "3.0.0-rc6-nokswapwb-v2r5"]


def _seed_rows(text: str) -> dict[str, list[str]]:
    """label -> the three published values."""
    rows = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("FTrace"):
            rows[line[:40].rstrip()] = line[40:].split()
    return rows


def _result_from_seed(col: int, vmscan: dict[str, list[str]], congestion: dict[str, list[str]]) -> dict[str, Any]:
    """A result whose figures are the seed's column ``col``."""
    num = {label: vals[col] for label, vals in vmscan.items()}
    v = {key: int(num[label]) for label, key in ft.VMSCAN_ROWS if key and not key.endswith("_us")}
    v["direct_stall_us"] = round(float(num["Time stalled direct reclaim (seconds)"]) * 1e6)
    v["kswapd_awake_us"] = round(float(num["Time kswapd awake (seconds)"]) * 1e6)
    v.update(kswapd_rewakeups=0, kswapd_awake_open_us=0, direct_pages_reclaimed=0, kswapd_pages_reclaimed=0)
    c: dict[str, dict[str, int]] = {"direct": {}, "kswapd": {}}
    for label, who, kind, fig in ft.CONGESTION_ROWS:
        text = congestion[label][col]
        c[who][f"{kind}_{fig}"] = int(text.removesuffix("ms")) * (1000 if fig == "us" else 1)
    kswapd_steal = int(num["Kswapd pages reclaimed"])
    direct = int(num["Direct reclaim pages reclaimed"])
    user_sys, elapsed = SEED_FSMARK_TIMES[col]
    return {
        "kernel": KERNELS[col], "era": "3.0", "workload": "fsmark",
        "times": {"user_s": user_sys, "sys_s": 0.0, "elapsed_s": elapsed},
        "vmstat_start": {"kswapd_steal": 100, "pgsteal_dma32": 50, "pgsteal_normal": 50},
        "vmstat": {"kswapd_steal": 100 + kswapd_steal, "pgsteal_dma32": 50 + direct, "pgsteal_normal": 50 + kswapd_steal},
        "ftrace": {"vmscan": v, "congestion_wait": c},
    }


def _seed_results() -> list[dict[str, Any]]:
    vmscan, congestion = _seed_rows(SEED_FSMARK_VMSCAN), _seed_rows(SEED_FSMARK_CONGESTION)
    return [_result_from_seed(i, vmscan, congestion) for i in range(3)]


def test_blocks_print_the_seed_figures_exactly_as_published() -> None:
    text = ft.ftrace_blocks(_seed_results(), KERNELS)
    vmscan, congestion = text.split("\n\n" + ft.CONGESTION_TITLE)
    lines = vmscan.split("\n")
    assert lines[0] == "FTrace Reclaim Statistics: vmscan"
    # printheader: 12 spaces, %18s of fields NF-3..NF-2, then NF-1..NF of fsmark-<kernel>.
    assert lines[1] == " " * 12 + f"{'fsmark-3.0.0':>18}" + f"{'3.0.0-rc6':>18}" * 2
    assert lines[2] == " " * 12 + "".join(f"{x:>18}" for x in ("rc6-vanilla", "kswapwb-v2r5", "nokswapwb-v2r5"))
    assert "\n".join(lines[3:]) + "\n" == SEED_FSMARK_VMSCAN
    assert ft.CONGESTION_TITLE + congestion == SEED_FSMARK_CONGESTION


def test_every_row_label_of_the_seed_is_there_in_order() -> None:
    published = [line[:40].rstrip() for line in (SEED_FSMARK_VMSCAN + SEED_FSMARK_CONGESTION).splitlines()
                 if line.strip() and not line.startswith("FTrace")]
    text = ft.ftrace_blocks(_seed_results()[:1], KERNELS[:1])
    ours = [line[:40].rstrip() for line in text.splitlines()[3:] if line.strip() and not line.startswith("FTrace")]
    assert ours == published
    assert len(published) == 17 + 7 + 12


def test_congestion_times_in_ms_as_perl_printed_them() -> None:
    c = ft.congestion_texts({"ftrace": {"congestion_wait": {
        "direct": {"congest_waited": 0, "congest_us": 0, "congest_full": 0,
                   "conditional_waited": 12345, "conditional_us": 12_396_000, "conditional_full": 53},
        "kswapd": {"congest_waited": 3, "congest_us": 10_000, "congest_full": 1,
                   "conditional_waited": 1, "conditional_us": 3_333, "conditional_full": 0}}}})
    assert c["Direct time   conditional waited"] == "12396ms"
    assert c["Direct full   conditional waited"] == "53"
    assert c["KSwapd time   congest     waited"] == "10ms"
    assert c["KSwapd time   conditional waited"] == "3.333ms", "a 300 HZ tick is not a whole ms; perl prints the fraction"
    # The MICRO run's rows, three kernels.
    micro = _seed_rows(SEED_MICRO_CONGESTION_ROWS)
    results = []
    for col in range(3):
        waits: dict[str, dict[str, int]] = {"direct": {}, "kswapd": {}}
        for label, who, kind, fig in ft.CONGESTION_ROWS:
            text = micro.get(label, ["0"] * 3)[col]
            waits[who][f"{kind}_{fig}"] = int(text.removesuffix("ms")) * (1000 if fig == "us" else 1)
        results.append({"ftrace": {"congestion_wait": waits}})
    assert SEED_MICRO_CONGESTION_ROWS in ft.congestion_block(results)


def test_summary_rows_of_an_idle_run_are_zero_not_errors() -> None:
    r = _seed_results()[0]
    v = r["ftrace"]["vmscan"]
    for section in (v, *r["ftrace"]["congestion_wait"].values()):
        for key in section:
            section[key] = 0
    r["times"] = {"user_s": 0.0, "sys_s": 0.0, "elapsed_s": 0.0}
    r["vmstat"] = dict(r["vmstat_start"])
    s = ft.summary_texts(r)
    assert set(s.values()) == {"         0", "     0.00%"}
    assert ft.vmscan_texts(r)["Time stalled direct reclaim (seconds)"] == "0.00"
    assert not ft.has_reclaim_activity(r)


def test_which_runs_show_the_blocks() -> None:
    seed = _seed_results()
    assert ft.shows_ftrace(seed)
    assert not ft.shows_ftrace([{**seed[0], "era": "4.11"}]), "4.11 kernels get the later reports"
    assert not ft.shows_ftrace([{**seed[0], "ftrace": None, "era": "2.6.18"}])
    assert not ft.shows_ftrace([seed[0], {**seed[1], "ftrace": None}]), "every column needs the figures"
    assert not ft.shows_ftrace([])
    quiet = json.loads(json.dumps(seed[0]))
    for section in (quiet["ftrace"]["vmscan"], *quiet["ftrace"]["congestion_wait"].values()):
        for key in section:
            section[key] = 0
    assert not ft.shows_ftrace([quiet])
    quiet["ftrace"]["congestion_wait"]["kswapd"]["congest_waited"] = 1
    assert ft.shows_ftrace([quiet]), "a congestion wait is reclaim activity"


def test_bad_calls_are_one_line_errors() -> None:
    seed = _seed_results()
    with pytest.raises(MmtwinError, match="result of kernel k has no ftrace statistics \\(era 2.6.18"):
        ft.ftrace_blocks([{"kernel": "k", "era": "2.6.18", "ftrace": None}], ["k"])
    with pytest.raises(MmtwinError, match="2 labels for 3 results"):
        ft.ftrace_blocks(seed, KERNELS[:2])
    with pytest.raises(MmtwinError, match="at least one kernel"):
        ft.ftrace_blocks([], [])
    assert ft.with_trace_format(None, None) is None
    assert ft.with_trace_format({"path": "x"}, "kernel") == {"path": "x"}
    assert ft.with_trace_format({"path": "x"}, "postprocess-6.1") == {"path": "x", "format": "postprocess-6.1"}
    with pytest.raises(MmtwinError, match="^--trace-format: needs --trace FILE$"):
        ft.with_trace_format(None, "kernel")
    with pytest.raises(MmtwinError, match="^--trace-format: '6.1' is not allowed; expected one of: kernel, postprocess-6.1$"):
        ft.with_trace_format({"path": "x"}, "6.1")


# --------------------------------------------------------------------------- the engine's aggregation

SEED004 = ["-e", "reclaim-writeback-xfs", "-r", "fsmark-512M"]


def _run_json(*args: str) -> dict[str, Any]:
    proc = run_cli("run", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["result"]


def _deltas(result: dict[str, Any]) -> dict[str, int]:
    start = result["vmstat_start"]
    return {k: v - start.get(k, 0) for k, v in result["vmstat"].items()}


def _zone_sum(d: dict[str, int], prefix: str) -> int:
    return sum(v for k, v in d.items() if k.startswith(prefix))


@requires_engine
def test_fs_mark_counts_equal_the_kernels_own_counters() -> None:
    """Every trace figure against an independent counter of the engine (a
    tiny box: seed 004's 512M machine at 1/20)."""
    r = _run_json(*SEED004, "--scale", "0.05")
    v, d = r["ftrace"]["vmscan"], _deltas(r)
    assert v["direct_reclaims"] == d["allocstall"] > 0
    assert v["direct_pages_scanned"] == _zone_sum(d, "pgscan_direct") > 0
    assert v["kswapd_pages_scanned"] == _zone_sum(d, "pgscan_kswapd") > 0
    assert v["kswapd_pages_reclaimed"] == d["kswapd_steal"] > 0
    assert v["direct_pages_reclaimed"] == _zone_sum(d, "pgsteal") - d["kswapd_steal"]
    writes = sum(v[k] for k in v if "_write_" in k)
    assert writes == d["nr_vmscan_write"] == v["kswapd_write_file_async"] > 0, "vanilla xfs: kswapd writes file pages"
    # Every task that woke kswapd is an fs_mark thread, and they reclaimed directly.
    assert v["wake_kswapd_requests"] == r["sim"]["kswapd_wakeups"] > 0
    assert v["kswapd_wakeups"] >= 1
    assert v["direct_stall_us"] > 0


@requires_engine
def test_swap_writes_are_anon_and_counted_once() -> None:
    r = _run_json("-m", "x86-64-4core-512m-xfs", "-k", "3.0-rc6-vanilla", "--size-gb", "0.75", "-t", "4",
                  "--set", "passes=2", "--scale", "0.05")
    v, d = r["ftrace"]["vmscan"], _deltas(r)
    anon = v["direct_write_anon_async"] + v["kswapd_write_anon_async"]
    assert anon == d["pswpout"] == d["nr_vmscan_write"] > 0
    assert v["direct_write_file_async"] == v["kswapd_write_file_async"] == 0
    assert v["direct_write_anon_sync"] == v["kswapd_write_anon_sync"] == 0, "no lumpy reclaim, no sync writes"
    assert v["direct_reclaims"] == d["allocstall"]


@requires_engine
def test_no_tracepoints_no_figures_and_tracing_changes_nothing(tmp_path: Path) -> None:
    hog = ["--size-gb", "0.5", "-t", "2", "--scale", "0.05"]
    old = _run_json("-m", "x86-64-4core-512m-xfs", "-k", "2.6.18-mm3", *hog)
    assert old["era"] == "2.6.18" and old["ftrace"] is None
    plain = _run_json(*SEED004, "-k", "3.0-rc6-nokswapwb", "--scale", "0.05")
    traced = _run_json(*SEED004, "-k", "3.0-rc6-nokswapwb", "--scale", "0.05", "--trace", str(tmp_path / "t"),
                       "--trace-events", "mm_vmscan_kswapd_wake")
    assert plain["ftrace"] == traced["ftrace"], "the figures do not depend on what is written"
    assert plain["sim"]["page_ops"] == traced["sim"]["page_ops"]
    assert plain["ftrace"]["congestion_wait"]["direct"]["conditional_waited"] > 0, "patch 6 throttles direct reclaim"


@requires_engine
def test_run_and_compare_print_the_blocks() -> None:
    proc = run_cli("run", *SEED004, "--scale", "0.05")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.index("MMTests Statistics: vmstat") < out.index(ft.VMSCAN_TITLE) < out.index(ft.CONGESTION_TITLE)
    assert "                    fsmark-3.0\n                   rc6-vanilla\nDirect reclaims" in out
    quiet = run_cli("run", *SEED004, "--scale", "0.05", "--no-ftrace")
    assert quiet.returncode == 0
    start = out.index(ft.VMSCAN_TITLE)
    assert quiet.stdout == out[:start] + out[out.index("\nzone ", start) + 1:], "--no-ftrace leaves out the blocks only"

    proc = run_cli("compare", *SEED004, "--scale", "0.05", "-k", "3.0-rc6-vanilla", "-k", "3.0-rc6-nokswapwb", "-j", "2")
    assert proc.returncode == 0, proc.stderr
    block = proc.stdout[proc.stdout.index(ft.VMSCAN_TITLE):]
    rows = {line[:40].rstrip(): line[40:].split() for line in block.splitlines() if line[:1].isalpha()}
    assert len(rows["Direct reclaims"]) == 2
    # Patch 8: kswapd writes no file page; patch 6: kswapd is throttled in wait_iff_congested.
    assert rows["Kswapd reclaim write file async I/O"][0] != "0" and rows["Kswapd reclaim write file async I/O"][1] == "0"
    assert rows["KSwapd number conditional waited"][0] == "0" and rows["KSwapd number conditional waited"][1] != "0"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--trace-format", "kernel"], "mmtwin: error: --trace-format: needs --trace FILE"),
        (["--trace", "/tmp/x", "--trace-format", "6.1"],
         "mmtwin: error: --trace-format: '6.1' is not allowed; expected one of: kernel, postprocess-6.1"),
    ],
)
def test_trace_format_errors_are_one_line(args: list[str], message: str) -> None:
    proc = run_cli("run", *SEED004, *args)
    assert proc.returncode == 2
    assert proc.stderr.strip() == message


# --------------------------------------------------------------------------- the kernel's own script

SCRIPT = "Documentation/trace/postprocess/trace-vmscan-postprocess.pl"
TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")

# perl -MNoHostFormats: the script reads /sys/kernel/debug/tracing/events/*/format
# when it can, i.e. the formats of the kernel the test happens to run on.
# With this every open() fails (the script opens nothing else without
# --read-procstat), so it uses its built-in patterns, as on a machine
# without tracefs: the same answer on every host. The script is unchanged.
NO_HOST_FORMATS = "package NoHostFormats;\nBEGIN { *CORE::GLOBAL::open = sub (*;$@) { $! = 2; return 0; }; }\n1;\n"


@pytest.fixture(scope="module")
def vmscan_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = [what for what, ok in (("perl", shutil.which("perl")), (f"{TARBALL} (Debian package linux-source-6.1)", TARBALL.exists())) if not ok]
    if missing:
        reason = f"needs {' and '.join(missing)}: apt-get install linux-source-6.1 perl"
        if os.environ.get("CI"):
            pytest.fail(f"CI: {reason} (.ci/run installs them)")
        pytest.skip(reason)
    d = tmp_path_factory.mktemp("vmscan-postprocess")
    with tarfile.open(TARBALL, "r|xz") as tf:
        for member in tf:
            if member.name.endswith(SCRIPT):
                data = tf.extractfile(member).read()  # type: ignore[union-attr]
                break
        else:
            pytest.fail(f"{TARBALL} has no {SCRIPT}")
    (d / "trace-vmscan-postprocess.pl").write_bytes(data)
    (d / "NoHostFormats.pm").write_text(NO_HOST_FORMATS)
    return d / "trace-vmscan-postprocess.pl"


def _script(script: Path, trace: Path, *opts: str) -> dict[str, str]:
    """The script's Summary, picked as subreport/ftrace-vmscan did: the text
    after the colon, without ``seconds`` and whitespace."""
    with trace.open("rb") as stdin:
        proc = subprocess.run(["perl", f"-I{script.parent}", "-MNoHostFormats", str(script), *opts],
                              stdin=stdin, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    failed = [line for line in proc.stdout.splitlines() if line.startswith("WARNING: Failed")]
    assert not failed, f"the script could not parse {len(failed)} lines, e.g. {failed[0]}"
    summary = proc.stdout[proc.stdout.index("\nSummary\n"):]
    out = {}
    for line in summary.splitlines():
        if ":" in line:
            label, value = line.split(":", 1)
            out[label] = re.sub(r"\s", "", value.split(":")[0].replace("seconds", ""))
    return out


def _block_rows(text: str) -> dict[str, str]:
    return {line[:40].rstrip(): line[40:].strip() for line in text.splitlines() if line[:1].isalpha()}


@requires_engine
@pytest.mark.parametrize("kernel, scale", [("3.0-rc6-vanilla", "0.75"), ("3.0-rc6-nokswapwb", "0.05")])
def test_the_kernels_script_reads_the_trace_and_agrees(vmscan_script: Path, tmp_path: Path, kernel: str, scale: str) -> None:
    """Linux 6.1's trace-vmscan-postprocess.pl on a seed-004 trace: every
    figure it prints that the vmscan block shows equals the block's."""
    trace = tmp_path / "fsmark.trace"
    r = _run_json(*SEED004, "-k", kernel, "--scale", scale, "--trace", str(trace), "--trace-format", "postprocess-6.1")
    rows = _block_rows(ft.vmscan_block([r], [kernel]))
    by_name = _script(vmscan_script, trace, "--ignore-pid")  # as MMTests ran it
    per_pid = _script(vmscan_script, trace)
    for label, _ in ft.VMSCAN_ROWS:
        script_label = label.removesuffix(" (seconds)")
        # --ignore-pid overwrites the latencies of tasks of the same name
        # (docs/ftrace.md); the block gives their sum, as the per-pid run does.
        want = per_pid if label.startswith("Time stalled") else by_name
        if label.startswith("Time kswapd awake"):
            # The block adds the interval kswapd was still awake at the end
            # (MMTests' trace ran on after the test); the script cannot see it.
            open_us = r["ftrace"]["vmscan"]["kswapd_awake_open_us"]
            assert float(rows[label]) == pytest.approx(float(want[script_label]) + open_us / 1e6, abs=0.011), label
            continue
        assert rows[label] == want[script_label], label
    v = r["ftrace"]["vmscan"]
    assert (per_pid["Direct reclaim file pages scanned"], per_pid["Kswapd file pages scanned"]) == (
        str(v["direct_pages_scanned"]), str(v["kswapd_pages_scanned"])), "fs_mark scans file pages only"
    if kernel == "3.0-rc6-vanilla":
        assert v["kswapd_wakeups"] > 1 and v["kswapd_awake_us"] > 0, "this run must exercise kswapd's sleeps"
    assert int(rows["Direct reclaims"]) > 0 and float(rows["Time stalled direct reclaim (seconds)"]) > 0

    # The congestion block against the trace's writeback_* lines, read the
    # way MMTests' 2011 trace-congestion-postprocess.pl read them.
    waits: dict[tuple[str, str], list[int]] = {}
    pat = re.compile(r"\s*([a-zA-Z0-9-]*)\s*(\[[0-9]*\])\s*([0-9.]*):\s*([a-zA-Z_]*):\s*(.*)")
    for line in trace.read_text().splitlines():
        m = pat.search(line)
        if not m or not m.group(4).startswith("writeback_"):
            continue
        name = m.group(1).rsplit("-", 1)[0]
        timeout, delayed = map(int, re.search(r"usec_timeout=([0-9]*) usec_delayed=([0-9]*)", m.group(5)).groups())
        key = ("KSwapd" if re.search("kswapd[0-9]*", name) else "Direct",
               "congest    " if m.group(4) == "writeback_congestion_wait" else "conditional")
        acc = waits.setdefault(key, [0, 0, 0])
        acc[0] += 1
        acc[1] += delayed
        acc[2] += timeout <= delayed
    c = _block_rows(ft.congestion_block([r]))
    for (who, kind), (n, us, full) in waits.items():
        assert c[f"{who} number {kind} waited"] == str(n)
        assert c[f"{who} time   {kind} waited"] == f"{us / 1000:.15g}ms"
        assert c[f"{who} full   {kind} waited"] == str(full)
    total = sum(int(c[f"{w} number {k} waited"]) for w in ("Direct", "KSwapd") for k in ("congest    ", "conditional"))
    assert total == sum(n for n, _, _ in waits.values())
    if kernel == "3.0-rc6-nokswapwb":
        # Patch 6 throttles reclaimers that meet dirty pages (vanilla's
        # fs_mark hardly waits at all: 6 waits in the seed's run).
        assert total > 0, "this run must exercise the congestion waits"


@requires_engine
def test_the_3_0_layout_is_what_the_6_1_script_cannot_read(vmscan_script: Path, tmp_path: Path) -> None:
    """Why --trace-format exists: 3.0's lru_isolate and lru_shrink_inactive
    lines do not match the 6.1 script's patterns, so it drops them."""
    trace = tmp_path / "t30.trace"
    run = _run_json(*SEED004, "--scale", "0.05", "--trace", str(trace))
    with trace.open("rb") as stdin:
        proc = subprocess.run(["perl", f"-I{vmscan_script.parent}", "-MNoHostFormats", str(vmscan_script)],
                              stdin=stdin, capture_output=True, text=True, check=False)
    assert "WARNING: Failed to parse mm_vmscan_lru_isolate as expected" in proc.stdout
    assert "WARNING: Failed to parse mm_vmscan_lru_shrink_inactive as expected" in proc.stdout
    assert re.search(r"^Kswapd pages scanned:\s+0$", proc.stdout, re.M)
    assert run["ftrace"]["vmscan"]["kswapd_pages_scanned"] > 0
