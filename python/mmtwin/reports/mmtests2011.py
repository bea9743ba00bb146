"""What MMTests printed in 2011 (the shell ``compare-kernels.sh`` era) for the
file workloads of seed 000: the FS-Mark and LARGE DD tables and the
``MMTests Statistics: duration`` and ``MMTests Statistics: vmstat`` blocks.

Sources (docs: shared mmtests.md §1.2-§3, §5.1-§5.3): gormanm/mmtests of July
2011 (commit d892aeb7): ``subreport/fsmark``, ``subreport/largedd``,
``subreport/mmtests-duration``, ``subreport/mmtests-vmstat``, ``stat/pdiff``,
``stat/pndiff``, ``stat/stddev`` (population), ``compare-kernels.sh``
(``printheader``). Numbers pass through the same hands as in 2011: fs_mark
prints Files/sec with one decimal; GNU time prints seconds truncated to
centiseconds; perl prints numbers with 15 significant digits; bash divides
integers truncating.

Where seed 000 differs from that script the seed wins, because it is what
was published (tests/test_mmtests_golden.py checks every other character
against the real scripts' output, tests/fixtures/mmtests-golden/):

* vmstat values are ``%12s`` wide (the script: ``%10s``); seed 004's look,
  the rows of the writeback series, keeps the script's ``%10s`` as seed 004 does,
  with seed 004's space before a value of 10 characters or more (the script runs
  such values together);
* the vmstat block has seed 000's 17 rows (gormanm/mmtests d8783346 prints 26:
  also ``Page writes file``, ``Page writes anon``, ``Page reclaim invalidate``,
  ``Kswapd skipped wait`` and five compaction rows);
* ``Percentage direct scans`` is direct x 100 / (kswapd + direct) whenever
  anything was scanned, so 100% when only direct reclaim scanned (the July
  2011 script printed 0% whenever kswapd scanned nothing; the seed prints
  100% for vanilla fs_mark, whose kswapd scanned nothing).

The header rows above a benchmark table are the script's (12 spaces, then
``%18s`` per run: fields NF-3..NF-2 and NF-1..NF of ``<bench>-<kernel>``);
the seed's own header rows were edited by hand (tabs, a truncated name).
"""

from __future__ import annotations

import math

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from typing import Any

from mmtwin.errors import MmtwinError
from mmtwin.reports.mmtests import pdiff, pndiff

STATS = ("min", "mean", "stddev", "max")
FSMARK_ROWS = tuple(f"{metric} {stat}" for metric in ("Files/s", "Overhead") for stat in STATS)
LARGEDD_ROWS = ("download tar", "dd source files", "delete source")
DURATION_ROWS = ("User/Sys Time Running Test (seconds)", "Total Elapsed Time (seconds)")
VMSTAT_ROWS = (
    "Page Ins",
    "Page Outs",
    "Swap Ins",
    "Swap Outs",
    "Direct pages scanned",
    "Kswapd pages scanned",
    "Kswapd pages reclaimed",
    "Direct pages reclaimed",
    "Kswapd efficiency",
    "Kswapd velocity",
    "Direct efficiency",
    "Direct velocity",
    "Percentage direct scans",
    "Page writes by reclaim",
    "Slabs scanned",
    "Direct inode steals",
    "Kswapd inode steals",
)
# The vmstat rows of Mel Gorman's report for the writeback-from-reclaim series
# (seed 004, July 2011): printed when a kernel of the comparison has that
# series' counter (nr_vmscan_invalidate); a kernel without it prints 0 there.
SERIES_ROWS = ("Page reclaim invalidate", "Page reclaim throttled")
LATE_ROWS = (
    "Kswapd skipped wait",
    "Compaction stalls",
    "Compaction success",
    "Compaction failures",
    "Compaction pages moved",
    "Compaction move failure",
)
VMSTAT_ROWS_SERIES = (
    *VMSTAT_ROWS[: VMSTAT_ROWS.index("Page writes by reclaim") + 1],
    *SERIES_ROWS,
    *VMSTAT_ROWS[VMSTAT_ROWS.index("Page writes by reclaim") + 1 :],
    *LATE_ROWS,
)
TITLES = {"fsmark": "FS-Mark", "largedd": "LARGE DD", "mmapstream": "Streaming Mapped Writer"}
ZONE_SUFFIXES = ("dma", "dma32", "normal", "movable", "high")  # the script's per-zone counter names


# --------------------------------------------------------------------------- how 2011 tools printed numbers


def perl_number(x: float) -> str:
    """A number as perl's ``print`` writes it (15 significant digits, no trailing zeros)."""
    if isinstance(x, int):
        return str(x)
    return format(float(x), ".15g")


def perl_value(x: float) -> float:
    """``x`` after a trip through perl's ``print`` and back (what the next script in the pipe read)."""
    return float(perl_number(x))


def gnu_time(seconds: float) -> str:
    """Seconds as GNU time's %U, %S and %e print them: truncated to centiseconds, two decimals."""
    if seconds < 0:
        raise MmtwinError(f"negative time {seconds} from the engine")
    cs = int((Decimal(repr(float(seconds))) * 100).to_integral_value(rounding=ROUND_DOWN))
    return f"{cs // 100}.{cs % 100:02d}"


def _trunc_div(a: int, b: int) -> int:
    """bash ``$((a/b))``: integer division truncating toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


# --------------------------------------------------------------------------- one kernel's column


@dataclass(frozen=True)
class VmstatSummary:
    """The counters ``subreport/mmtests-vmstat`` summed from /proc/vmstat deltas (3.0 names)."""

    page_ins: int
    page_outs: int
    swap_ins: int
    swap_outs: int
    direct_scanned: int
    kswapd_scanned: int
    kswapd_reclaimed: int
    direct_reclaimed: int
    vmscan_write: int
    slabs_scanned: int
    direct_inode_steals: int
    kswapd_inode_steals: int
    invalidate: int | None = None  # nr_vmscan_invalidate; None when the kernel has no such counter
    kswapd_skipped_wait: int = 0
    compaction: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)  # stall, success, fail, pages moved, move failure


def vmstat_deltas(result: Mapping[str, Any]) -> dict[str, int]:
    """``result["vmstat"] - result["vmstat_start"]`` per counter; a counter absent at the start counts from 0."""
    end = result.get("vmstat", {})
    start = result.get("vmstat_start") or {}
    return {name: int(value) - int(start.get(name, 0)) for name, value in end.items()}


def summarise_vmstat(deltas: Mapping[str, int]) -> VmstatSummary:
    """Sum the deltas the way the 2011 script did (absent counters count 0)."""

    def total(*names: str) -> int:
        return sum(int(deltas.get(n, 0)) for n in names)

    def zones(prefix: str) -> int:
        return total(*(f"{prefix}_{z}" for z in ZONE_SUFFIXES))

    kswapd_steal = total("kswapd_steal")
    return VmstatSummary(
        page_ins=total("pgpgin"),
        page_outs=total("pgpgout"),
        swap_ins=total("pswpin"),
        swap_outs=total("pswpout"),
        direct_scanned=zones("pgscan_direct"),
        kswapd_scanned=zones("pgscan_kswapd"),
        kswapd_reclaimed=kswapd_steal,
        direct_reclaimed=zones("pgsteal") - kswapd_steal,
        vmscan_write=total("nr_vmscan_write"),
        slabs_scanned=total("slabs_scanned"),
        direct_inode_steals=total("pginodesteal"),
        kswapd_inode_steals=total("kswapd_inodesteal"),
        invalidate=total("nr_vmscan_invalidate") if "nr_vmscan_invalidate" in deltas else None,
        kswapd_skipped_wait=total("kswapd_skip_congestion_wait"),
        compaction=(total("compact_stall"), total("compact_success"), total("compact_fail"),
                    total("compact_pagemigrate"), total("compact_pagefailed")),
    )


def _velocity(scanned: int, elapsed: float) -> str:
    # perl -e "print ($SCAN/$ELAPSED_TIME)", then printf "%8.3f" (the table re-reads it as one word)
    return format(perl_value(scanned / elapsed) if elapsed > 0 else 0.0, ".3f")


def vmstat_texts(s: VmstatSummary, elapsed_text: str) -> dict[str, str]:
    """Each vmstat row as printed; velocities divide by the printed elapsed time."""
    elapsed = float(elapsed_text)
    kswapd_eff = _trunc_div(s.kswapd_reclaimed * 100, s.kswapd_scanned) if s.kswapd_scanned > 0 else 100
    direct_eff = _trunc_div(s.direct_reclaimed * 100, s.direct_scanned) if s.direct_scanned > 0 else 100
    scanned = s.kswapd_scanned + s.direct_scanned
    direct_pct = _trunc_div(s.direct_scanned * 100, scanned) if scanned > 0 else 0
    return {
        "Page Ins": str(s.page_ins),
        "Page Outs": str(s.page_outs),
        "Swap Ins": str(s.swap_ins),
        "Swap Outs": str(s.swap_outs),
        "Direct pages scanned": str(s.direct_scanned),
        "Kswapd pages scanned": str(s.kswapd_scanned),
        "Kswapd pages reclaimed": str(s.kswapd_reclaimed),
        "Direct pages reclaimed": str(s.direct_reclaimed),
        "Kswapd efficiency": f"{kswapd_eff}%",
        "Kswapd velocity": _velocity(s.kswapd_scanned, elapsed),
        "Direct efficiency": f"{direct_eff}%",
        "Direct velocity": _velocity(s.direct_scanned, elapsed),
        "Percentage direct scans": f"{direct_pct}%",
        "Page writes by reclaim": str(s.vmscan_write),
        "Slabs scanned": str(s.slabs_scanned),
        "Direct inode steals": str(s.direct_inode_steals),
        "Kswapd inode steals": str(s.kswapd_inode_steals),
        **({} if s.invalidate is None else {"Page reclaim invalidate": str(s.invalidate)}),
        "Page reclaim throttled": "0",  # nr_vmscan_throttled, dropped in the series' v2
        "Kswapd skipped wait": str(s.kswapd_skipped_wait),
        **dict(zip(LATE_ROWS[1:], map(str, s.compaction))),
    }


def duration_texts(user_s: float, sys_s: float, elapsed_s: float) -> dict[str, str]:
    """GNU time's user and system seconds added by perl, and GNU time's elapsed seconds."""
    user_sys = perl_number(float(gnu_time(user_s)) + float(gnu_time(sys_s)))
    return {DURATION_ROWS[0]: user_sys, DURATION_ROWS[1]: gnu_time(elapsed_s)}


def fsmark_stats(iterations: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """min/mean/stddev/max of Files/sec and App Overhead over fs_mark's per-iteration lines.

    fs_mark prints Files/sec as ``%12.1f`` and App Overhead as ``%16llu``;
    the statistics (stat/min, mean, stddev, max; stddev over the population)
    are what perl printed.
    """
    if not iterations:
        raise MmtwinError("fs_mark result has no iteration")
    files = [float(format(float(it["files_per_sec"]), ".1f")) for it in iterations]
    overhead = [float(int(it["overhead_us"])) for it in iterations]
    out: dict[str, float] = {}
    for metric, xs in (("Files/s", files), ("Overhead", overhead)):
        # math.fsum is correctly rounded, so the text is the same in every
        # Python version (3.12 changed how sum() adds floats).
        mean = math.fsum(xs) / len(xs)
        stddev = (math.fsum((x - mean) ** 2 for x in xs) / len(xs)) ** 0.5
        for stat, value in zip(STATS, (min(xs), mean, stddev, max(xs))):
            out[f"{metric} {stat}"] = perl_value(value)
    return out


def largedd_seconds(phases: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The three timed steps of largedd.result, whole seconds (``date +%s`` differences)."""
    by_name = {str(p["name"]): p["seconds"] for p in phases}
    missing = [n for n in LARGEDD_ROWS if n not in by_name]
    if missing:
        raise MmtwinError(f"largedd result has no phase {missing[0]!r}")
    return {n: float(int(by_name[n])) for n in LARGEDD_ROWS}


@dataclass(frozen=True)
class Column:
    """One kernel's figures for one workload, as the 2011 scripts printed them."""

    name: str
    bench: dict[str, float]  # FSMARK_ROWS or LARGEDD_ROWS -> value; empty for the mapped writer
    duration: dict[str, str]  # DURATION_ROWS -> printed text
    vmstat: dict[str, str]  # VMSTAT_ROWS -> printed text

    def number(self, row: str) -> float:
        """Any row as a number (``83%`` -> 83)."""
        if row in self.bench:
            return self.bench[row]
        text = self.duration.get(row, self.vmstat.get(row))
        if text is None:
            raise MmtwinError(f"no row {row!r} for {self.name}")
        return float(text.rstrip("%"))


def column_from_result(name: str, kind: str, result: Mapping[str, Any]) -> Column:
    """The 2011 figures of one engine result (Result v2: ``benchmark``, ``vmstat_start``)."""
    bench_all = result.get("benchmark") or {}
    if kind == "fsmark":
        bench = fsmark_stats((bench_all.get("fsmark") or {}).get("iterations", []))
    elif kind == "largedd":
        bench = largedd_seconds((bench_all.get("largedd") or {}).get("phases", []))
    else:
        bench = {}
    t = result["times"]
    duration = duration_texts(float(t["user_s"]), float(t["sys_s"]), float(t["elapsed_s"]))
    vmstat = vmstat_texts(summarise_vmstat(vmstat_deltas(result)), duration[DURATION_ROWS[1]])
    return Column(name, bench, duration, vmstat)


# --------------------------------------------------------------------------- tables


def _awk_field(fields: list[str], i: int) -> str | None:
    """awk's ``$i`` of a line split at '-': ``$0`` is the whole line, a negative index an error."""
    if i < 0:
        return None
    if i == 0:
        return "-".join(fields)
    return fields[i - 1] if i <= len(fields) else ""


def header_rows(bench: str, names: Sequence[str]) -> list[str]:
    """``printheader``: 12 spaces, then ``%18s`` per run of fields NF-3..NF-2 and NF-1..NF of ``<bench>-<kernel>``."""
    rows = []
    for first, second in ((3, 2), (1, 0)):
        cells = []
        for name in names:
            fields = f"{bench}-{name}".split("-")
            a, b = _awk_field(fields, len(fields) - first), _awk_field(fields, len(fields) - second)
            cells.append("-" if a is None or b is None else f"{a}-{b}")
        rows.append(" " * 12 + "".join(f"{c:>18}" for c in cells))
    return rows


def _pct(func: str, base: float, new: float) -> float:
    value = pdiff(base, new, "2011") if func == "pdiff" else pndiff(base, new, "2011")
    return perl_value(value)


def fsmark_table(columns: Sequence[Column]) -> str:
    """``subreport/fsmark``: Files/s rows with pdiff, Overhead rows with pndiff."""
    lines = header_rows("fsmark", [c.name for c in columns])
    base = columns[0]
    for row in FSMARK_ROWS:
        metric, stat = row.split(" ")
        func = "pdiff" if metric == "Files/s" else "pndiff"
        cells = "".join(
            f" {c.bench[row]:11.2f} ({_pct(func, base.bench[row], c.bench[row]):5.2f}%)" for c in columns
        )
        lines.append(f"{metric:<8} {stat:<6}{cells}")
    return "\n".join(lines)


def largedd_table(columns: Sequence[Column]) -> str:
    """``subreport/largedd``: whole seconds per step with pndiff."""
    lines = header_rows("largedd", [c.name for c in columns])
    base = columns[0]
    for row in LARGEDD_ROWS:
        cells = "".join(
            f" {int(c.bench[row]):4d} ({_pct('pndiff', base.bench[row], c.bench[row]):5.2f}%)" for c in columns
        )
        lines.append(f"{row:<20}{cells}")
    return "\n".join(lines)


def duration_block(columns: Sequence[Column]) -> str:
    lines = ["MMTests Statistics: duration"]
    for row in DURATION_ROWS:
        lines.append(f"{row:<40}" + "".join(f"{c.duration[row]:>10}" for c in columns))
    return "\n".join(lines)


def vmstat_rows(columns: Sequence[Column]) -> tuple[str, ...]:
    """The rows of the block: the seed-004 report's when a kernel has nr_vmscan_invalidate."""
    return VMSTAT_ROWS_SERIES if any(SERIES_ROWS[0] in c.vmstat for c in columns) else VMSTAT_ROWS


def _series_cells(texts: Sequence[str]) -> str:
    # the script's %10s; seed 004 keeps a space before a later value that fills its cell
    # (137530.614 149864.559), where the script runs such values together
    return "".join(f"{t:>10}" if i == 0 or len(t) < 10 else " " + t for i, t in enumerate(texts))


def vmstat_block(columns: Sequence[Column]) -> str:
    """``%-40s`` labels; values ``%12s`` in seed 000's look, ``%10s`` (the script's) in seed 004's."""
    rows = vmstat_rows(columns)
    lines = ["MMTests Statistics: vmstat"]
    for row in rows:
        texts = [c.vmstat.get(row, "0") for c in columns]
        cells = _series_cells(texts) if rows is VMSTAT_ROWS_SERIES else "".join(f"{t:>12}" for t in texts)
        lines.append(f"{row:<40}" + cells)
    return "\n".join(lines)


def report(kind: str, columns: Sequence[Column], command: str | None = None) -> str:
    """One workload's section: title, the benchmark table (fs_mark, largedd), duration, vmstat.

    ``command`` (fs_mark's command line) goes under the title, as in seed 000.
    The text ends with the last vmstat row and a newline (the 2011 script
    then printed a blank line before the next benchmark).
    """
    if kind not in TITLES:
        raise MmtwinError(f"no 2011 MMTests report for workload kind {kind!r}; kinds: {', '.join(TITLES)}")
    if not columns:
        raise MmtwinError("a report needs at least one kernel")
    lines = [TITLES[kind]]
    if command:
        lines.append(command)
    if kind == "fsmark":
        lines.append(fsmark_table(columns))
    elif kind == "largedd":
        lines.append(largedd_table(columns))
    lines += [duration_block(columns), "", vmstat_block(columns)]
    return "\n".join(lines) + "\n"


def fsmark_command(workload: Mapping[str, Any], dirs: Sequence[str] | None = None) -> str:
    """fs_mark's command line as MMTests logged it (two spaces between words), from a spec's fs_mark workload.

    The ``-d`` directories are not part of the spec: ``/tmp/fsmark`` (or
    ``/tmp/fsmark-N`` for several) unless ``dirs`` names them.
    """
    w = workload
    n = int(w["dirs"])
    names = list(dirs) if dirs is not None else ["/tmp/fsmark"] if n == 1 else [f"/tmp/fsmark-{i}" for i in range(n)]
    words = ["./fs_mark"]
    for d in names:
        words += ["-d", d]
    words += ["-D", str(w["subdirs"]), "-N", str(w["files_per_subdir"]), "-n", str(w["files"]),
              "-L", str(w["iterations"]), "-t", str(w["threads"]), f"-S{w['sync_method']}", "-s", str(w["file_bytes"])]
    if w["write_bytes"] != 16384:
        words += ["-w", str(w["write_bytes"])]
    return "  ".join(words)
