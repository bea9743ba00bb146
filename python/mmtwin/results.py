"""A results tree: runs written as MMTests lays its logs out, plus mmtwin's own summary.

``mmtwin run|compare|reproduce --output-dir DIR`` writes (docs/results.md)::

    DIR/mmtwin-results.json                         the summary (schema "mmtwin-results", version 1)
    DIR/mmtwin/<RUN>/iter-<i>/<test>/spec.json      the engine specification
    DIR/mmtwin/<RUN>/iter-<i>/<test>/result.json    the engine result, less perf and timeline
    DIR/mmtwin/<RUN>/iter-<i>/<test>/timeline.csv   the sampled time series, one column each
    DIR/work/log/<RUN>/iter-<i>/tests-timestamp     as run-mmtests.sh writes them
    DIR/work/log/<RUN>/iter-<i>/tests-sysstate
    DIR/work/log/<RUN>/iter-<i>/<test>/logs/...     the benchmark's own log
    DIR/mmtwin/<RUN>/iter-<i>/<test>/snapshots.json the /proc snapshots (engine numbers)
    DIR/mmtwin/<RUN>/iter-<i>/<test>/proc/<when>/   /proc files at the start, the --proc-at times, the end
    DIR/work/log/<RUN>/iter-<i>/proc-vmstat-<test>.gz, vmstat-<test>.gz   monitors
    DIR/work/log/<RUN>/iter-<i>/proc-buddyinfo-<test>.gz, proc-zoneinfo-<test>.gz, ... (with snapshots)

``load`` reads a tree back (``mmtwin report``, ``mmtwin compare --results``);
every problem with a tree is one line naming the file, the field and what is
allowed. Writing is deterministic: the same runs give byte-identical files
(gzip without a time stamp, JSON with sorted keys, CSV with round-trip floats).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict

from mmtwin.errors import MmtwinError

SCHEMA = "mmtwin-results"
SCHEMA_VERSION = 1
SUMMARY = "mmtwin-results.json"
# Beside each run's result.json when the engine recorded /proc snapshots (not listed in the summary:
# a tree without it is read as before).
SNAPSHOTS = "snapshots.json"
# The simulated wall clock at the start of a workload, in seconds since the epoch.
# MMTests' monitors carry `date +%s` stamps and treat 0 as "no stamp yet", so the
# simulated clock needs some non-zero origin; this one (2001-09-09) is plainly synthetic.
SIM_EPOCH = 1_000_000_000
TESTS = ("memhog", "fsmark", "largedd", "mmapstream")
_NAME_OK = re.compile(r"[^A-Za-z0-9._+-]")


# --------------------------------------------------------------------------- runs in memory


@dataclass
class Run:
    """One simulated run: the MMTests RUN name, the test (workload kind), spec and result."""

    name: str
    kernel: str
    spec: dict[str, Any]
    result: dict[str, Any]  # the engine result without perf, with its timeline
    iteration: int = 0

    @property
    def test(self) -> str:
        return str(self.spec["workload"]["kind"])

    @property
    def machine(self) -> str:
        return str(self.spec["machine"]["name"])


@dataclass
class Saved:
    """A results tree read back."""

    path: Path
    command: str
    runs: list[Run]
    era: Optional[str] = None
    summary_line: Optional[str] = None
    reproductions: list[dict[str, Any]] = field(default_factory=list)
    ftrace: bool = True  # run/compare printed the FTrace blocks (--ftrace, the default)


# --------------------------------------------------------------------------- the summary's schema


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class IterationEntry(_Model):
    iteration: int
    spec: str
    result: str
    timeline: str
    mmtests: str


class RunEntry(_Model):
    name: str
    test: Literal["memhog", "fsmark", "largedd", "mmapstream"]
    kernel: str
    machine: str
    iterations: list[IterationEntry]


class ReproductionEntry(_Model):
    name: str
    held: bool
    text: str
    data: dict[str, Any]


class Summary(_Model):
    """mmtwin-results.json less its "schema" key (checked on its own: BaseModel has a ``schema`` attribute)."""

    schema_version: int
    mmtwin_version: str
    engine_version: Optional[str]
    command: Literal["run", "compare", "reproduce"]
    era: Optional[str]
    summary_line: Optional[str]
    ftrace: bool = True
    sim_epoch: int
    runs: list[RunEntry]
    reproductions: list[ReproductionEntry]


class _ResultTimes(BaseModel):
    user_s: float
    sys_s: float
    elapsed_s: float


class _ResultZone(BaseModel):
    node: int
    zone: str
    present: int


class _Result(BaseModel):
    """The parts of an engine result (docs/engine-api.md) the reports read; other keys pass."""

    model_config = ConfigDict(extra="allow")
    kernel: str
    machine: str
    times: _ResultTimes
    vmstat: dict[str, int]
    vmstat_start: dict[str, int]
    zones: list[_ResultZone]
    tasks: list[dict[str, Any]]
    benchmark: dict[str, Any]
    sim: dict[str, Any]
    events: int


class _SpecWorkload(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: Literal["memhog", "fsmark", "largedd", "mmapstream"]
    threads: int


class _SpecMachine(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    page_size: int


class _SpecKernel(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class _Spec(BaseModel):
    model_config = ConfigDict(extra="allow")
    machine: _SpecMachine
    kernel: _SpecKernel
    workload: _SpecWorkload


# --------------------------------------------------------------------------- the output directory


def check_writable(directory: Path, option: str) -> None:
    """One line naming `option` unless a file can be created in `directory`: tried for real, with a
    file removed at once, since permission bits do not tell (root passes them, and /sys refuses anyway)."""
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".mmtwin-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise MmtwinError(f"{option}: directory {str(directory)!r} is not writable: {exc.strerror}") from None


def dir_option(text: Optional[str], option: str) -> Optional[Path]:
    """A directory option's value as a Path; '' is an error (Path('') would silently be the current directory)."""
    if text is None:
        return None
    if not text:
        raise MmtwinError(f"{option}: '' is not allowed; expected a directory path (. for the current directory)")
    return Path(text)


def make_writable_dir(path: Path, option: str, what: str) -> Path:
    """Create directory `path` (with its parents) before any work, or one
    line naming `option`: not a directory (`what` says what to give instead),
    cannot be created, or not writable."""
    if path.exists() and not path.is_dir():
        raise MmtwinError(f"{option}: {str(path)!r} exists and is not a directory; {what}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MmtwinError(f"{option}: cannot create directory {str(path)!r}: {exc.strerror}") from None
    check_writable(path, option)
    return path


def check_output_dir(path: Optional[Path], option: str = "--output-dir") -> Optional[Path]:
    """Check (and create) DIR before any work: one line and exit 2 when it cannot be a results tree.

    DIR may be missing (it is created), an empty directory, or an earlier
    results tree (it holds mmtwin-results.json), which is replaced.
    """
    if path is None:
        return None
    path = make_writable_dir(Path(path), option, "give a new or empty directory, or an earlier results tree")
    text = str(path)
    entries = sorted(p.name for p in path.iterdir())
    if entries and SUMMARY not in entries:
        raise MmtwinError(
            f"{option}: directory {text!r} is not empty and holds no {SUMMARY} (found {entries[0]!r}); "
            "give a new or empty directory, or an earlier results tree to replace"
        )
    return path


def run_names(items: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """MMTests RUN names for (kernel, spec) pairs: the kernel's name, made longer only as far as
    needed for every (RUN, test) pair to be unique (the machine, then the workload's size, then a number)."""

    def clean(text: str) -> str:
        return _NAME_OK.sub("_", text) or "_"

    def size(spec: Mapping[str, Any]) -> str:
        w = spec["workload"]
        if w["kind"] == "memhog":
            return f"{int(w['bytes']) / 2**30:.3g}g-{w['threads']}t"
        if w["kind"] == "mmapstream":
            return f"{int(w['bytes']) / 2**20:.3g}m-{w['threads']}t"
        return f"{w['threads']}t"

    levels = (
        lambda i, k, s: k,
        lambda i, k, s: f"{k}-{s['machine']['name']}",
        lambda i, k, s: f"{k}-{s['machine']['name']}-{size(s)}",
        lambda i, k, s: f"{k}-{i + 1}",
    )
    for level in levels:
        names = [clean(level(i, k, s)) for i, (k, s) in enumerate(items)]
        keys = [(n, s["workload"]["kind"]) for n, (_, s) in zip(names, items)]
        if len(set(keys)) == len(keys):
            return names
    raise AssertionError("numbered RUN names are unique")  # pragma: no cover


def make_runs(items: Sequence[tuple[str, Mapping[str, Any], Sequence[int], Sequence[Mapping[str, Any]]]]) -> list[Run]:
    """Runs from (kernel name, spec, the seed of each iteration, the result of each iteration),
    in that order (iteration inner), with RUN names; each iteration's spec carries its seed."""
    names = run_names([(k, s) for k, s, _, _ in items])
    out = []
    for name, (kernel, spec, seeds, results) in zip(names, items):
        if len(seeds) != len(results):
            raise ValueError("one seed per iteration")
        for i, (seed, result) in enumerate(zip(seeds, results)):
            out.append(Run(name, kernel, {**spec, "seed": seed}, {k: v for k, v in result.items() if k != "perf"}, i))
    return out


def iteration_runs(kernel: str, spec: Mapping[str, Any], seeds: Sequence[int], results: Sequence[Mapping[str, Any]]) -> list[Run]:
    """The iterations of one kernel's run (``mmtwin run``)."""
    return make_runs([(kernel, spec, seeds, results)])


@contextlib.contextmanager
def capture_engine_runs(
    transform: Optional[Callable[[dict[str, Any]], dict[str, Any]]] = None,
) -> Iterator[list[tuple[dict[str, Any], dict[str, Any]]]]:
    """Record every (spec, result) that ``mmtwin.engine.run_many`` returns inside the block.

    ``mmtwin reproduce --output-dir`` uses it: the reproductions call
    ``engine.run_many`` and keep their results to themselves. The wrapper
    passes its arguments through and returns what it got, except that
    ``transform`` (reproduce's --proc-at, --proc-every) may rewrite each spec's
    ``snapshots`` table first, which changes nothing else in a result.
    """
    from mmtwin import engine

    original = engine.run_many
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def recording(specs: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        if transform is not None:
            specs = [transform(s) for s in specs]
        out = original(specs, *args, **kwargs)
        seen.extend(zip(specs, out))
        return out

    engine.run_many = recording  # type: ignore[assignment]
    try:
        yield seen
    finally:
        engine.run_many = original  # type: ignore[assignment]


# --------------------------------------------------------------------------- writing


def _write(path: Path, data: bytes | str, *, gz: bool = False) -> None:
    raw = data.encode() if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        # No file name and a zero time stamp in the header: the same bytes every time.
        raw = gzip.compress(raw, compresslevel=6, mtime=0)
        path = path.with_name(path.name + ".gz")
    path.write_bytes(raw)


def _dumps(obj: Any, sort_keys: bool = True) -> str:
    return json.dumps(obj, indent=2, sort_keys=sort_keys) + "\n"


# The event counters the engine samples in its timeline, in its column order: each
# cumulative from the start of the run, the last sample the run's /proc/vmstat delta
# (docs/engine-api.md, "The timeline"). Older results trees have none.
TIMELINE_COUNTERS = ("pgpgin", "pgpgout", "pswpin", "pswpout", "pgscan_kswapd", "pgscan_direct",
                     "pgsteal_kswapd", "pgsteal_direct", "allocstall", "pgmajfault", "nr_vmscan_write",
                     "kswapd_wakeups")


_TIMELINE_FIRST = ("free_pages", "nr_dirty", "nr_writeback", *TIMELINE_COUNTERS)


def timeline_frame(result: Mapping[str, Any]) -> Any:
    """The sampled series as a pandas DataFrame: ``t_s`` first, then one column per series
    (free pages, nr_dirty, nr_writeback, TIMELINE_COUNTERS, any other in name order); a
    per-zone series (``free_pages``) gives one column per zone (``free N0/DMA``). With ``t_s``
    as its index, this is ``mmtwin.Result.timeline``."""
    import pandas as pd

    tl = result.get("timeline") or {}
    t = [float(x) for x in tl.get("t_s", [])]
    zones = result.get("zones", [])
    cols: dict[str, list[Any]] = {"t_s": t}
    order = [k for k in _TIMELINE_FIRST if k in tl] + sorted(k for k in tl if k not in _TIMELINE_FIRST)
    for key in order:
        if key == "t_s":
            continue
        values = list(tl[key])[: len(t)]
        if values and isinstance(values[0], list):
            prefix = "free" if key == "free_pages" else key
            for i, z in enumerate(zones):
                cols[f"{prefix} N{z['node']}/{z['zone']}"] = [row[i] for row in values]
        else:
            cols[key] = values
    return pd.DataFrame(cols)


def _timeline_csv(result: Mapping[str, Any]) -> str:
    buf = io.StringIO()
    timeline_frame(result).to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()


def _gnu_time(seconds: float) -> str:
    from mmtwin.reports.mmtests2011 import gnu_time

    return gnu_time(seconds)


def _time_line(test: str, times: Mapping[str, Any]) -> str:
    return (f"time :: {test} {_gnu_time(float(times['user_s']))} user {_gnu_time(float(times['sys_s']))} system "
            f"{_gnu_time(float(times['elapsed_s']))} elapsed")


def _mem_total_kb(spec: Mapping[str, Any]) -> int:
    m = spec["machine"]
    pages = sum(int(z["present_pages"]) for n in m["nodes"] for z in n["zones"]) - sum(int(n.get("reserved_pages", 0)) for n in m["nodes"])
    return pages * int(m["page_size"]) // 1024


def _proc_block(vmstat: Mapping[str, Any], run: Optional[Run] = None, snap: Optional[Mapping[str, Any]] = None) -> str:
    """/proc/vmstat: with the run, the era's complete list (reports/procfs.py); else the engine's rows."""
    if run is not None:
        from mmtwin.reports.procfs import vmstat_text

        zones = (snap or {}).get("zones") or run.result.get("zones", [])
        return vmstat_text(_proc_machine(run).era, vmstat, (z["zone"] for z in zones), (snap or {}).get("zones") or ())
    from mmtwin.reports.vmstat import proc_vmstat

    return proc_vmstat({"vmstat": vmstat})


def _end(run: Run, start: int) -> int:
    return start + int(float(run.result["times"]["elapsed_s"]))


def _snapshots(run: Run) -> list[dict[str, Any]]:
    return list(run.result.get("snapshots") or [])


def _snapshot(run: Run, kind: str) -> Optional[dict[str, Any]]:
    return next((s for s in _snapshots(run) if s.get("kind") == kind), None)


def _proc_machine(run: Run) -> Any:
    from mmtwin.reports.procfs import Machine

    return Machine.of(run.spec, run.result)


def _proc_file(run: Run, name: str, snap: Mapping[str, Any]) -> str:
    from mmtwin.reports.procfs import render

    return render(name, snap, _proc_machine(run))


def _epoch(start: int, snap: Mapping[str, Any]) -> int:
    """`date +%s` when the snapshot was taken: the test's start plus whole simulated seconds."""
    return start + int(snap["t_ns"]) // 1_000_000_000


def _zoneinfo(run: Run, free: Sequence[int]) -> str:
    """/proc/zoneinfo of a result without snapshots (an older tree, a fake engine): per zone the free
    pages, watermarks, present pages and protection (lowmem_reserve), in the 3.0 layout."""
    lines = []
    for z, f in zip(run.result.get("zones", []), free):
        lines += [
            f"Node {z['node']}, zone {z['zone']:>8}",
            f"  pages free     {int(f)}",
            f"        min      {int(z.get('min', 0))}",
            f"        low      {int(z.get('low', 0))}",
            f"        high     {int(z.get('high', 0))}",
            f"        present  {int(z.get('present', 0))}",
            "        protection: (" + ", ".join(str(int(x)) for x in z.get("lowmem_reserve", [])) + ")",
        ]
    return "\n".join(lines) + ("\n" if lines else "")


def _sysstate(run: Run, start: int) -> str:
    """tests-sysstate: the snapshots run-mmtests.sh logs around a test, in its order (/proc/vmstat,
    /proc/zoneinfo, /proc/meminfo; MMTests' vmstat parser ends a vmstat block at the zoneinfo header),
    holding what the engine has of them."""
    r, test = run.result, run.test
    page_kb = int(run.spec["machine"]["page_size"]) // 1024
    end = _end(run, start)
    zones = r.get("zones", [])
    free_pages = (r.get("timeline") or {}).get("free_pages") or []
    free_start = free_pages[0] if free_pages else [0] * len(zones)
    free_end = [int(z.get("free_end", 0)) for z in zones]

    def meminfo(vmstat: Mapping[str, Any]) -> str:
        return f"MemTotal:       {_mem_total_kb(run.spec):8d} kB\nMemFree:        {int(vmstat.get('nr_free_pages', 0)) * page_kb:8d} kB\n"

    s0, s1 = _snapshot(run, "start"), _snapshot(run, "end")
    zoneinfo_start = _proc_file(run, "zoneinfo", s0) if s0 else _zoneinfo(run, free_start)
    zoneinfo_end = _proc_file(run, "zoneinfo", s1) if s1 else _zoneinfo(run, free_end)
    parts = [
        f"test begin :: {test} {start}\n",
        "file start :: /proc/vmstat\n", _proc_block(r.get("vmstat_start") or {}, run, s0),
        "file start :: /proc/zoneinfo\n", zoneinfo_start,
        "file start :: /proc/meminfo\n", meminfo(r.get("vmstat_start") or {}),
        "file end :: /proc/vmstat\n", _proc_block(r["vmstat"], run, s1),
        "file end :: /proc/zoneinfo\n", zoneinfo_end,
        "file end :: /proc/meminfo\n", meminfo(r["vmstat"]),
        f"test end :: {test} {end} 0\n",
        _time_line(test, r["times"]) + "\n",
    ]
    return "".join(parts)


def _timestamp(run: Run, start: int) -> str:
    return (f"test begin :: {run.test} {start}\ntest end :: {run.test} {_end(run, start)} 0\n"
            + _time_line(run.test, run.result["times"]) + "\n")


def _monitor_snapshots(run: Run) -> list[dict[str, Any]]:
    """What the /proc monitors sample: the start, every periodic snapshot, the end (not --proc-at's)."""
    return [s for s in _snapshots(run) if s.get("kind") in ("start", "periodic", "end")]


def _proc_vmstat_monitor(run: Run, start: int) -> str:
    """proc-vmstat-<test>: ``time: <epoch>`` then /proc/vmstat, at the start, every --proc-every and at
    the end of the test; without snapshots (an older result) at the start and the end only."""
    r = run.result
    snaps = _monitor_snapshots(run)
    if snaps:
        return "".join(f"time: {_epoch(start, s)}\n" + _proc_file(run, "vmstat", s) for s in snaps)
    return f"time: {start}\n" + _proc_block(r.get("vmstat_start") or {}) + f"time: {_end(run, start)}\n" + _proc_block(r["vmstat"])


# MMTests monitor name -> the /proc file it cats (monitors/watch-<name>.sh).
PROC_MONITORS = {"proc-buddyinfo": "buddyinfo", "proc-zoneinfo": "zoneinfo", "proc-pagetypeinfo": "pagetypeinfo",
                 "numa-numastat": "numastat"}


def _proc_monitor(run: Run, start: int, name: str) -> str:
    """A watch-<monitor>.sh log: ``time: <epoch>`` then the file, at every sample."""
    return "".join(f"time: {_epoch(start, s)}\n" + _proc_file(run, name, s) for s in _monitor_snapshots(run))


def proc_dirs(run: Run) -> list[tuple[str, dict[str, Any]]]:
    """(directory name, snapshot) of the snapshots written as /proc files: start, each --proc-at time, end."""
    from mmtwin.reports.procfs import snapshot_label

    return [(snapshot_label(s), s) for s in _snapshots(run) if s.get("kind") in ("start", "at", "end")]


def _write_proc_files(own: Path, run: Run) -> None:
    from mmtwin.reports.procfs import files_of, numastat_node_text

    machine = _proc_machine(run)
    for label, snap in proc_dirs(run):
        d = own / "proc" / label
        for name in files_of(machine.era):
            if name == "diskstats" and "devices" not in snap:
                continue  # a run recorded before its devices were
            if name == "numastat":
                for node in sorted({int(z["node"]) for z in snap.get("zones") or []}):
                    _write(d / f"node{node}" / "numastat", numastat_node_text(snap, node))
            else:
                _write(d / name, _proc_file(run, name, snap))


_VMSTAT_HEAD = (
    "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
    " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st",
)


def _latency_prefix(start: int, t: float, gap: float) -> str:
    # monitors/latency-output: epoch, offset since the monitor started, gap since the last line
    return f"{start + t:16.4f} {t:8.4f} {gap:10.4f} -- "


def _vmstat_monitor(run: Run, start: int) -> str:
    """vmstat-<test> as MONITORS_WITH_LATENCY logs ``vmstat -n``: one line per timeline sample.
    ``free`` (KiB, all zones), and, from the timeline's counters, ``si``/``so`` (KiB swapped in and
    out per second) and ``bi``/``bo`` (pgpgin/pgpgout per second: 1 KiB blocks) since the previous
    sample, whole numbers as vmstat prints them; every other column is 0 (docs/results.md)."""
    r = run.result
    tl = r.get("timeline") or {}
    page_kb = int(run.spec["machine"]["page_size"]) // 1024
    lines = [_latency_prefix(start, 0.0, 0.0) + _VMSTAT_HEAD[0], _latency_prefix(start, 0.0, 0.0) + _VMSTAT_HEAD[1]]
    n = len(tl.get("t_s", []))
    counters = {k: [int(x) for x in tl.get(k) or [0] * n] for k in ("pswpin", "pswpout", "pgpgin", "pgpgout")}
    last = 0.0
    for i, (t, free) in enumerate(zip(tl.get("t_s", []), tl.get("free_pages", []))):
        t = float(t)
        dt = t - last

        def per_s(key: str, scale: int = 1) -> int:
            c = counters[key]
            return (c[i] - c[i - 1]) * scale * 1_000_000 // round(dt * 1_000_000) if i and dt > 0 and len(c) > i else 0

        si, so = per_s("pswpin", page_kb), per_s("pswpout", page_kb)
        bi, bo = per_s("pgpgin"), per_s("pgpgout")
        row = (0, 0, 0, sum(int(x) for x in free) * page_kb, 0, 0, si, so, bi, bo, 0, 0, 0, 0, 0, 0, 0)
        text = "{:2d} {:2d} {:6d} {:6d} {:6d} {:6d} {:4d} {:4d} {:5d} {:5d} {:4d} {:4d} {:2d} {:2d} {:2d} {:2d} {:2d}".format(*row)
        lines.append(_latency_prefix(start, t, dt) + text)
        last = t
    return "\n".join(lines) + "\n"


def benchmark_log(run: Run, start: int = SIM_EPOCH) -> tuple[str, str]:
    """(file name, text) of the benchmark's own log in ``<test>/logs/``."""
    from mmtwin.cli import _benchmark_lines

    w, r, test = run.spec["workload"], run.result, run.test
    if test == "fsmark":
        return f"fsmark-{w['threads']}.log", "\n".join(_benchmark_lines(test, run.spec, r)) + "\n"
    if test == "largedd":
        # The 2011 shellpack's largedd.result: step:label:`date +%s`:seconds since the step began
        lines = [f"0:Start time:{start}:0"]
        clock = float(start)
        for i, p in zip((1, 3, 5), (r.get("benchmark") or {}).get("largedd", {}).get("phases", [])):
            clock += float(p["seconds"])
            lines.append(f"{i}:Time to {p['name']}:{int(clock)}:{int(p['seconds'])}")
        return "largedd.result", "\n".join(lines) + "\n"
    if test == "mmapstream":
        return "mmapstream.log", "\n".join(_benchmark_lines(test, run.spec, r)) + "\n" + _time_line(test, r["times"]) + "\n"
    return f"memhog-{w['threads']}.time", _time_line(test, r["times"]) + "\n"


def classic_logs(run: Run, start: int = SIM_EPOCH) -> list[tuple[str, str]]:
    """(file name, text) of the benchmark's log in ``<test>-<RUN>/noprofile/`` of the classic layout,
    plain text as the shellpacks of 2011-2017 left them: fs_mark's table as ``fsmark.log`` (what the
    2011 and 2012 subreports read) and as ``fsmark-<threads>.log`` (what ExtractFsmark of 2013-2017
    globs), ``largedd.result``, the mapped writer's log, the memory hog's GNU time line."""
    name, text = benchmark_log(run, start)
    if run.test == "fsmark":
        return [("fsmark.log", text), (name, text)]
    return [(name, text)]


def _classic_timestamp(run: Run, start: int) -> str:
    """One test's part of ``tests-timestamp-<RUN>`` as run-mmtests.sh wrote it from 2011 to 2017:
    ``test begin``, the /proc snapshots before and after, ``test end :: <test> <epoch>`` (no exit
    status then) and GNU time's line."""
    text = _sysstate(run, start)
    end_line = f"test end :: {run.test} {_end(run, start)} 0\n"
    return text.replace(end_line, f"test end :: {run.test} {_end(run, start)}\n")


def _iteration_paths(run: Run) -> dict[str, str]:
    own = f"mmtwin/{run.name}/iter-{run.iteration}/{run.test}"
    return {
        "spec": f"{own}/spec.json",
        "result": f"{own}/result.json",
        "timeline": f"{own}/timeline.csv",
        "mmtests": f"work/log/{run.name}/iter-{run.iteration}/{run.test}",
    }


def _clear_previous(root: Path) -> None:
    """Remove an earlier tree's own files (the summary, mmtwin/, and for each RUN it lists
    work/log/<RUN>, work/log/tests-timestamp-<RUN> and work/log/<test>-<RUN>)."""
    summary = root / SUMMARY
    if not summary.exists():
        return
    try:
        old = json.loads(summary.read_text(encoding="utf-8"))
        names = [str(r["name"]) for r in old.get("runs", [])]
        tests = [str(r.get("test")) for r in old.get("runs", [])]
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        names, tests = [], []
    for name in names:
        clean = _NAME_OK.sub("_", name)
        if clean in ("", ".", ".."):
            continue
        target = root / "work" / "log" / clean
        if target.is_dir():
            shutil.rmtree(target)
        stamp = root / "work" / "log" / f"tests-timestamp-{clean}"
        if stamp.is_file():
            stamp.unlink()
        for test in tests:
            if test in TESTS:
                classic = root / "work" / "log" / f"{test}-{clean}"
                if classic.is_dir():
                    shutil.rmtree(classic)
    for sub in (root / "mmtwin",):
        if sub.is_dir():
            shutil.rmtree(sub)
    summary.unlink()


def _write_classic(root: Path, runs: Sequence[Run]) -> None:
    """The classic layout beside the current one, for MMTests' compare scripts of 2011-2017
    (``compare-kernels.sh``, ``compare-mmtests.pl`` before the iter-N layout): iteration 0 of each
    RUN as ``work/log/tests-timestamp-<RUN>`` (timestamps and /proc snapshots in one file, ending
    with ``finish ::``) and ``work/log/<test>-<RUN>/noprofile/<log>`` (docs/results.md)."""
    log = root / "work" / "log"
    stamps: dict[str, str] = {}
    clocks: dict[str, int] = {}
    for run in runs:
        if run.iteration != 0:
            continue
        start = clocks.get(run.name, SIM_EPOCH)
        clocks[run.name] = _end(run, start)
        stamps[run.name] = stamps.get(run.name, f"start :: {SIM_EPOCH}\n") + _classic_timestamp(run, start)
        for name, text in classic_logs(run, start):
            _write(log / f"{run.test}-{run.name}" / "noprofile" / name, text)
    for name, text in stamps.items():
        _write(log / f"tests-timestamp-{name}", text + f"finish :: {clocks[name]}\n")


def write_tree(
    root: Path,
    command: str,
    runs: Sequence[Run],
    *,
    era: Optional[str] = None,
    summary_line: Optional[str] = None,
    reproductions: Sequence[Mapping[str, Any]] = (),
    ftrace: bool = True,
) -> Path:
    """Write ``runs`` under ``root`` (checked with ``check_output_dir`` first); returns the summary's path."""
    from mmtwin import __version__
    from mmtwin.engine import engine_version

    root = Path(root)
    try:
        _clear_previous(root)
        entries: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        # The tests of one RUN and iteration run one after another on the simulated clock,
        # sharing tests-timestamp and tests-sysstate as in MMTests.
        clocks: dict[Path, int] = {}
        logs: dict[Path, list[str]] = {}
        for run in runs:
            paths = _iteration_paths(run)
            stored = {k: v for k, v in run.result.items() if k not in ("perf", "timeline", "snapshots")}
            # The engine's key order is kept: /proc/vmstat rows come in the era's order.
            _write(root / paths["spec"], _dumps(run.spec, sort_keys=False))
            _write(root / paths["result"], _dumps(stored, sort_keys=False))
            _write(root / paths["timeline"], _timeline_csv(run.result))
            if "snapshots" in run.result:
                own = (root / paths["result"]).parent
                _write(own / SNAPSHOTS, json.dumps(run.result["snapshots"], separators=(",", ":")) + "\n")
                _write_proc_files(own, run)
            iter_dir = root / "work" / "log" / run.name / f"iter-{run.iteration}"
            start = clocks.get(iter_dir, SIM_EPOCH)
            clocks[iter_dir] = _end(run, start)
            log_name, log_text = benchmark_log(run, start)
            _write(iter_dir / run.test / "logs" / log_name, log_text, gz=log_name.endswith(".log"))
            stamp, sysstate = logs.setdefault(iter_dir, [f"start :: {SIM_EPOCH}\n", f"start :: {SIM_EPOCH}\n"])
            logs[iter_dir] = [stamp + _timestamp(run, start), sysstate + _sysstate(run, start)]
            _write(iter_dir / f"proc-vmstat-{run.test}", _proc_vmstat_monitor(run, start), gz=True)
            _write(iter_dir / f"vmstat-{run.test}", _vmstat_monitor(run, start), gz=True)
            if _monitor_snapshots(run):
                from mmtwin.reports.procfs import files_of

                have = files_of(_proc_machine(run).era)
                for monitor, name in PROC_MONITORS.items():
                    if name in have:
                        _write(iter_dir / f"{monitor}-{run.test}", _proc_monitor(run, start, name), gz=True)
            key = f"{run.name}\0{run.test}"
            if key not in entries:
                order.append(key)
                entries[key] = {"name": run.name, "test": run.test, "kernel": run.kernel,
                                "machine": run.machine, "iterations": []}
            entries[key]["iterations"].append({"iteration": run.iteration, **paths})
        for iter_dir, (stamp, sysstate) in logs.items():
            _write(iter_dir / "tests-timestamp", stamp)
            _write(iter_dir / "tests-sysstate", sysstate)
        _write_classic(root, runs)
        summary = {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "mmtwin_version": __version__,
            "engine_version": engine_version(),
            "command": command,
            "era": era,
            "summary_line": summary_line,
            "ftrace": ftrace,
            "sim_epoch": SIM_EPOCH,
            "runs": [entries[k] for k in order],
            "reproductions": [dict(r) for r in reproductions],
        }
        _write(root / SUMMARY, _dumps(summary))
    except OSError as exc:
        raise MmtwinError(f"--output-dir: cannot write {exc.filename or str(root)!r}: {exc.strerror}") from None
    return root / SUMMARY


# --------------------------------------------------------------------------- reading


def _read_json(path: Path, what: str) -> Any:
    try:
        if not path.is_file():
            raise MmtwinError(f"{path}: missing; a results tree has {what} here (docs/results.md)")
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise MmtwinError(f"{path}: not UTF-8 (byte {exc.start}); expected JSON") from None
    except json.JSONDecodeError as exc:
        raise MmtwinError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise MmtwinError(f"{path}: not valid JSON: arrays or objects nested too deeply to parse") from None
    except OSError as exc:
        raise MmtwinError(f"{path}: cannot read: {exc.strerror}") from None


def _read_timeline(path: Path, result: dict[str, Any]) -> dict[str, Any]:
    """timeline.csv back into the engine's timeline shape (per-zone columns become rows of a list)."""
    import pandas as pd

    if not path.is_file():
        raise MmtwinError(f"{path}: missing; a results tree has each run's timeline.csv here (docs/results.md)")
    try:
        # As text, converted here: exact whatever float parser this pandas has.
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise MmtwinError(f"{path}: not a timeline CSV: {' '.join(str(exc).split())}") from None
    if "t_s" not in frame.columns:
        raise MmtwinError(f"{path}: t_s: missing; the first column is the simulated time in seconds")
    labels = [f"N{z['node']}/{z['zone']}" for z in result.get("zones", [])]
    timeline: dict[str, Any] = {"t_s": _numbers(frame["t_s"], path, "t_s", float)}
    per_zone: dict[str, list[str]] = {}
    for col in frame.columns:
        if col == "t_s":
            continue
        prefix, _, label = str(col).rpartition(" ")
        if prefix and label in labels:
            per_zone.setdefault(prefix, []).append(str(col))
        else:
            timeline[str(col)] = _numbers(frame[col], path, str(col))
    for prefix, cols in per_zone.items():
        key = "free_pages" if prefix == "free" else prefix
        if len(cols) != len(labels):
            raise MmtwinError(f"{path}: {prefix}: {len(cols)} zone columns, expected {len(labels)} (one per zone of result.json)")
        columns = [_numbers(frame[c], path, c) for c in cols]
        timeline[key] = [list(row) for row in zip(*columns)]
    return timeline


def _numbers(series: Any, path: Path, col: str, kind: Any = None) -> list[Any]:
    """A CSV column (text) as Python numbers: integers where the text is one, else floats."""
    out: list[Any] = []
    for text in series.tolist():
        try:
            out.append(kind(text) if kind is not None else int(text))
        except ValueError:
            try:
                out.append(float(text))
            except ValueError:
                raise MmtwinError(f"{path}: {col}: {text!r} is not allowed; expected numbers") from None
    return out


def load(path: Path | str, what: str = "RESULTS") -> Saved:
    """Read a results tree written by ``write_tree``."""
    from mmtwin.config import validate

    root = Path(path)
    if not root.exists():
        raise MmtwinError(f"{what}: {str(root)!r} does not exist; expected a directory written by --output-dir")
    if not root.is_dir():
        raise MmtwinError(f"{what}: {str(root)!r} is not a directory; expected a directory written by --output-dir")
    summary_path = root / SUMMARY
    if not summary_path.is_file():
        raise MmtwinError(f"{what}: {str(root)!r} holds no {SUMMARY}; expected a directory written by --output-dir")
    data = _read_json(summary_path, "the summary")
    if not isinstance(data, dict):
        raise MmtwinError(f"{summary_path}: {type(data).__name__} is not allowed; expected a JSON object")
    if data.get("schema") != SCHEMA:
        raise MmtwinError(f"{summary_path}: schema: {data.get('schema')!r} is not allowed; expected {SCHEMA!r}")
    data = {k: v for k, v in data.items() if k != "schema"}
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise MmtwinError(f"{summary_path}: schema_version: {version} is not allowed; this mmtwin reads version {SCHEMA_VERSION} (upgrade mmtwin)")
    summary = validate(Summary, data, str(summary_path))
    if summary.schema_version != SCHEMA_VERSION:
        raise MmtwinError(f"{summary_path}: schema_version: {summary.schema_version} is not allowed; expected {SCHEMA_VERSION}")
    runs: list[Run] = []
    for i, entry in enumerate(summary.runs):
        for j, it in enumerate(entry.iterations):
            files = {}
            for key in ("spec", "result", "timeline"):
                rel = getattr(it, key)
                if Path(rel).is_absolute() or ".." in Path(rel).parts:
                    raise MmtwinError(f"{summary_path}: runs[{i}].iterations[{j}].{key}: {rel!r} is not allowed; "
                                      "expected a path inside the tree")
                files[key] = root / rel
            spec = _read_json(files["spec"], "each run's spec.json")
            result = _read_json(files["result"], "each run's result.json")
            validate(_Spec, spec, str(files["spec"]))
            validate(_Result, result, str(files["result"]))
            if spec["workload"]["kind"] != entry.test:
                raise MmtwinError(f"{files['spec']}: workload.kind: {spec['workload']['kind']!r} is not allowed; the summary says {entry.test!r}")
            result["timeline"] = _read_timeline(files["timeline"], result)
            snaps_path = files["result"].parent / SNAPSHOTS
            if snaps_path.is_file():
                snaps = _read_json(snaps_path, "the run's /proc snapshots")
                if not isinstance(snaps, list) or not all(isinstance(x, dict) and "t_ns" in x and "kind" in x for x in snaps):
                    raise MmtwinError(f"{snaps_path}: not allowed; expected a JSON list of snapshots with t_ns and kind "
                                      "(docs/engine-api.md)")
                result["snapshots"] = snaps
            runs.append(Run(entry.name, entry.kernel, spec, result, it.iteration))
    if not runs and not summary.reproductions:
        raise MmtwinError(f"{summary_path}: runs: empty; a results tree holds at least one run")
    return Saved(root, summary.command, runs, summary.era, summary.summary_line,
                 [r.model_dump() for r in summary.reproductions], summary.ftrace)


# --------------------------------------------------------------------------- MMTests text


def _ftrace_module() -> Any:
    """reports/ftrace.py (the FTrace blocks run and compare print), if this mmtwin has it."""
    try:
        from mmtwin.reports import ftrace
    except ImportError:  # pragma: no cover - an mmtwin without the FTrace blocks
        return None
    return ftrace


def run_text(summary_line: str, run: Run, iterations: Sequence[Run] = (), ftrace: bool = True) -> str:
    """What ``mmtwin run`` prints (without --vmstat) for this run; with the runs of every
    iteration (more than one), the iterations block it prints after the report."""
    from mmtwin.cli import _benchmark_lines
    from mmtwin.reports import mmtests2011 as mt
    from mmtwin.reports import vmstat as vm

    r, kind = run.result, run.test
    t, sim = r["times"], r.get("sim", {})
    lines = [
        summary_line,
        f"times: sys {t['sys_s']:.2f} s, user {t['user_s']:.2f} s, real {t['elapsed_s']:.2f} s",
        f"page events: {r.get('events', 0)}; oom: {'yes' if sim.get('oom') else 'no'}",
        "sim: " + ", ".join(f"{key}={sim[key]}" for key in sim if key != "oom"),
        "",
    ]
    if kind != "memhog":
        lines += _benchmark_lines(kind, run.spec, r)
        col = mt.column_from_result(run.kernel, kind, r)
        lines += ["", mt.duration_block([col]), "", mt.vmstat_block([col]), ""]
        ft = _ftrace_module()
        if ftrace and ft is not None and ft.shows_ftrace([r]):
            lines += [ft.ftrace_blocks([r], [run.kernel]).rstrip("\n"), ""]
        from mmtwin.reports.procfs import jbd2_info_lines

        lines += jbd2_info_lines(r)
    lines.append(vm.zone_table(r))
    if len(iterations) > 1:
        from mmtwin import iterations as its_mod

        its = its_mod.Iterated([int(i.spec["seed"]) for i in iterations], [i.result for i in iterations],
                               [its_mod.result_digest(i.result) for i in iterations])
        era = "2017" if kind == "memhog" else "2011"
        lines += ["", its_mod.iterations_block([run.kernel], [run.spec], [its], era)]
    return _nl("\n".join(lines))


def _by_run(runs: Sequence[Run]) -> list[list[Run]]:
    """Runs grouped by (RUN, test), in order; each group's iterations in iteration order."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.name, r.test), []).append(r)
    return [sorted(g, key=lambda r: r.iteration) for g in groups.values()]


def _iterated(group: Sequence[Run]) -> Any:
    from mmtwin import iterations as its_mod

    return its_mod.Iterated([int(r.spec["seed"]) for r in group], [r.result for r in group],
                            [its_mod.result_digest(r.result) for r in group])


def compare_report(groups: Sequence[Sequence[Run]], era: Optional[str], ftrace: bool = True) -> str:
    """The MMTests comparison ``mmtwin compare`` prints below its summary line: one group of
    iteration runs per kernel, the first the baseline; the iterations block when there are several."""
    from mmtwin import iterations as its_mod
    from mmtwin.reports import mmtests2011 as mt
    from mmtwin.reports.mmtests import check_era, compare_report as memhog_report

    kinds = sorted({g[0].test for g in groups})
    if len(kinds) != 1:
        raise MmtwinError(f"--results: runs of {' and '.join(kinds)} cannot be compared; give results of one workload kind")
    kind = kinds[0]
    if era is None:
        era = "2017" if kind == "memhog" else "2011"
    check_era(era)
    if kind != "memhog" and era != "2011":
        raise MmtwinError(f"--era: {era!r} is not allowed for {kind}; its MMTests report exists in the 2011 style only")
    its = [_iterated(g) for g in groups]
    names = [g[0].kernel for g in groups]
    specs = [g[0].spec for g in groups]
    if kind == "memhog":
        samples = [its_mod.memhog_samples(n, it, int(s["workload"]["threads"])) for n, it, s in zip(names, its, specs)]
        text = _nl(memhog_report(samples, era, kind))
    else:
        results = [its_mod.report_result(it, kind) for it in its]
        cols = [mt.column_from_result(n, kind, r) for n, r in zip(names, results)]
        command = mt.fsmark_command(specs[0]["workload"]) if kind == "fsmark" else None
        text = _nl(mt.report(kind, cols, command))
        ft = _ftrace_module()
        if ftrace and ft is not None and ft.shows_ftrace(results):
            text += "\n" + _nl(ft.ftrace_blocks(results, names))
    if len({len(g) for g in groups}) != 1:
        raise MmtwinError(f"--results: the runs have {' and '.join(str(len(g)) for g in groups)} iterations; "
                          "compare runs with the same number of iterations")
    if len(groups[0]) > 1:
        text += _nl(its_mod.compare_block(names, specs, its, era))
    return text


def _nl(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def saved_text(saved: Saved) -> str:
    """What the command that wrote ``saved`` printed (reproduce: its report as printed)."""
    try:
        if saved.command == "reproduce":
            return "".join(_nl(r["text"]) for r in saved.reproductions)
        if saved.command == "compare":
            return _nl(saved.summary_line or "") + "\n" + compare_report(_by_run(saved.runs), saved.era, saved.ftrace)
        return "".join(run_text(saved.summary_line or "", g[0], g, saved.ftrace) for g in _by_run(saved.runs))
    except MmtwinError as exc:
        raise MmtwinError(f"{saved.path}: {exc.message}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise MmtwinError(f"{saved.path}: a result file lacks what its report needs ({type(exc).__name__}: {exc}); "
                          "was it edited? Rewrite it with --output-dir") from None


def proc_text(saved: Saved, name: str, at: str) -> str:
    """``mmtwin report DIR --proc NAME --at WHEN``: /proc/NAME of every run of the tree at WHEN, each
    after a ``==> RUN/iter-i/test at WHEN <==`` line when the tree holds more than one run."""
    from mmtwin.reports.procfs import find_snapshot, snapshot_label

    out = []
    for run in saved.runs:
        try:
            snap = find_snapshot(_snapshots(run), at)
            text = _proc_file(run, name, snap)
        except MmtwinError as exc:
            raise MmtwinError(f"{saved.path}: {run.name}/iter-{run.iteration}/{run.test}: {exc.message}") from None
        if len(saved.runs) > 1:
            out.append(f"==> {run.name}/iter-{run.iteration}/{run.test} at {snapshot_label(snap)} <==\n")
        out.append(text)
    return "".join(out)


def compare_saved(saved: Sequence[Saved], era: Optional[str], ftrace: bool = True) -> tuple[list[Run], str]:
    """``mmtwin compare --results A --results B``: every run of every tree, the first the baseline.
    Returns the runs (renamed where two trees used the same RUN name) and the text."""
    groups = [g for s in saved for g in _by_run(s.runs)]
    if len(groups) < 2:
        raise MmtwinError(f"--results: {len(groups)} run(s) found; a comparison needs at least two (the first is the baseline)")
    names = [g[0].kernel for g in groups]
    header = (f"saved results {', '.join(str(s.path) for s in saved)}: kernels {', '.join(names)} "
              "(the first is the baseline)")
    runs = make_runs([(g[0].kernel, g[0].spec, [int(r.spec["seed"]) for r in g], [r.result for r in g]) for g in groups])
    try:
        return runs, _nl(header) + "\n" + compare_report(groups, era, ftrace)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise MmtwinError(f"--results: a result file lacks what the comparison needs ({type(exc).__name__}: {exc})") from None
