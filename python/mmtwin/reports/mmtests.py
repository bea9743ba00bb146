"""MMTests-style comparison of two or more kernels (docs: shared mmtests.md §1-§3).

Three report eras are supported; the duration and vmstat blocks are checked
against the real MMTests scripts of each era by tests/test_mmtests_golden.py
(goldens in tests/fixtures/mmtests-golden/):

* ``2011``: the shell ``compare-kernels.sh`` era. Percentages are relative to
  the *new* value: pdiff = (new-base)*100/new, pndiff = -(new-base)*100/new.
  Benchmark rows ``%-8s %-6s`` (op, stat; wider for long op names) with `` %11.2f (%5.2f%%)`` cells.
  The duration and vmstat blocks are those of the file workloads (``mmtests2011``:
  no header rows, ``%-40s`` labels, the derived vmstat rows of seed 000).
* ``2012``: baseline-relative percentages (pdiff = new*100/base-100,
  pndiff = 100-new*100/base; ``stat/pndiff`` of July 2012 gives 0 when the new
  value is 0) with `` %12.2f (%6.2f%%)`` cells. Duration and vmstat blocks as
  gormanm/mmtests 9e71bc6a (2012-07-02) printed them: no header rows, ``%-40s``
  labels, duration ``%10s`` (Sys, User+Sys, Total Elapsed), the 32 derived
  vmstat rows ``%12s``.
* ``2017``: the Perl Compare era before June 2017 (gormanm/mmtests 4aa747e1):
  same formulas and cell format; ``--print-monitor duration`` (``User``,
  ``System``, ``Elapsed``, ``%12.2f``) and ``--print-monitor mmtests-vmstat``
  (MonitorMmtestsvmstat's rows and formats, including its shifted formats).

The blocks read what MMTests read: GNU time's seconds (truncated to
centiseconds) and the /proc/vmstat deltas around the test.

Sign convention in every era: positive = better than the baseline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mmtwin.errors import MmtwinError

ERAS = ("2011", "2012", "2017")


def check_era(era: str) -> str:
    if era not in ERAS:
        raise MmtwinError(f"--era: {era!r} is not allowed; expected one of: {', '.join(ERAS)}")
    return era


# --------------------------------------------------------------------------- percentages


def pdiff(base: float, new: float, era: str) -> float:
    """Percentage change for a higher-is-better value; positive = better."""
    check_era(era)
    if new == base or new == 0:
        return 0.0
    if era == "2011":
        return (new - base) * 100.0 / new
    if base == 0:
        return 100.0
    return new * 100.0 / base - 100.0


def pndiff(base: float, new: float, era: str) -> float:
    """Percentage change for a lower-is-better value; positive = better."""
    check_era(era)
    if new == base:
        return 0.0
    if era == "2011":
        if new == 0:
            return 0.0
        return -(new - base) * 100.0 / new
    if new == 0:
        # stat/pndiff of 2012 printed 0 for a new value of 0; VMR::Stat::pndiff of 2017 prints 100
        return 0.0 if era == "2012" else 100.0
    if base == 0:
        return -99.0
    return 100.0 - new * 100.0 / base


# --------------------------------------------------------------------------- statistics


def _finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))


def stat_min(xs: Sequence[float]) -> float:
    return min(xs)


def stat_max(xs: Sequence[float]) -> float:
    return max(xs)


def stat_amean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)  # correctly rounded: the same in every Python version


def stat_stddev(xs: Sequence[float]) -> float:
    """Population standard deviation, as MMTests computed it before June 2017."""
    mean = stat_amean(xs)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / len(xs))


def stat_coeffvar(xs: Sequence[float]) -> float:
    mean = stat_amean(xs)
    return 0.0 if mean == 0 else stat_stddev(xs) * 100.0 / mean


# (label per era, function, compare function name). Every memhog op is a time:
# lower is better, so every row uses pndiff (Stddev and CoeffVar always do).
_PERL_STATS = (
    ("Min", stat_min),
    ("Amean", stat_amean),
    ("Stddev", stat_stddev),
    ("CoeffVar", stat_coeffvar),
    ("Max", stat_max),
)
_SHELL_STATS = (
    ("min", stat_min),
    ("mean", stat_amean),
    ("stddev", stat_stddev),
    ("max", stat_max),
)


# --------------------------------------------------------------------------- headers


def split_perl(name: str) -> tuple[str, str]:
    """Split a run name into two header rows the way Compare.pm's _generateHeaderTable did: at the
    first ``-``, moved 4 characters on when ``-rc<digit>`` occurs in the ``index + 3`` characters
    from there (so ``-rc10`` splits after ``-rc1``); a name without ``-`` loses its last character on row 1."""
    idx = name.find("-")
    if idx < 0:
        return name[:-1], name
    if re.search(r"-rc[0-9]", name[idx : idx + idx + 3]):
        idx += 4
    return name[:idx], name[idx + 1 :]


def split_shell(name: str) -> tuple[str, str]:
    """Split ``<bench>-<kernel>`` the 2011 way: last two dash fields on row 2, the two before on row 1."""
    fields = name.split("-")
    return "-".join(fields[-4:-2]), "-".join(fields[-2:])


# --------------------------------------------------------------------------- report


@dataclass
class RunSamples:
    """One kernel's samples: op name -> values (one per iteration)."""

    name: str
    ops: dict[str, list[float]]
    vmstat: dict[str, int | float] = field(default_factory=dict)
    vmstat_start: dict[str, int | float] = field(default_factory=dict)
    user_s: float = 0.0
    sys_s: float = 0.0
    elapsed_s: float = 0.0


def samples_from_results(name: str, results: Sequence[Mapping[str, Any]], threads: int) -> RunSamples:
    """Build the memhog ops (User, System, Elapsed per thread count) from engine results."""
    if not results:
        raise MmtwinError(f"no results for {name}")
    ops = {
        f"User-{threads}": [float(r["times"]["user_s"]) for r in results],
        f"System-{threads}": [float(r["times"]["sys_s"]) for r in results],
        f"Elapsed-{threads}": [float(r["times"]["elapsed_s"]) for r in results],
    }
    last = results[-1]
    return RunSamples(
        name=name,
        ops=ops,
        vmstat=dict(last.get("vmstat", {})),
        vmstat_start=dict(last.get("vmstat_start") or {}),
        user_s=float(last["times"]["user_s"]),
        sys_s=float(last["times"]["sys_s"]),
        elapsed_s=float(last["times"]["elapsed_s"]),
    )


def _fmt_value(value: float, spec: str) -> str:
    return format(value if _finite(value) else 0.0, spec)


def benchmark_table(runs: Sequence[RunSamples], era: str, benchmark: str = "memhog") -> str:
    """The main comparison table; the first run is the baseline."""
    check_era(era)
    if len(runs) < 2:
        raise MmtwinError("a comparison needs at least two kernels (the first is the baseline)")
    ops = list(runs[0].ops)
    base = runs[0]
    lines = [benchmark]
    if era == "2011":
        stats = _SHELL_STATS
        heads = [split_shell(f"{benchmark}-{r.name}") for r in runs]
        cell_w = 21  # " %11.2f (%5.2f%%)"
        widths = [max(cell_w, len(a) + 1, len(b) + 1) for a, b in heads]
        op_w = max([8, *(len(op) for op in ops)])  # "%-8s %-6s", widened for long op names
        label_w = op_w + 7
        lines.append(" " * label_w + "".join(f"{a:>{w}}" for (a, _), w in zip(heads, widths)))
        lines.append(" " * label_w + "".join(f"{b:>{w}}" for (_, b), w in zip(heads, widths)))
        for op in ops:
            for stat, fn in stats:
                b = fn(base.ops[op])
                cells = []
                for run, w in zip(runs, widths):
                    v = fn(run.ops[op])
                    pct = pndiff(b, v, era)
                    cell = " " + _fmt_value(v, "11.2f") + f" ({pct:5.2f}%)"
                    cells.append(f"{cell:>{w}}")
                lines.append(f"{op:<{op_w}} {stat:<6}" + "".join(cells))
        return "\n".join(lines)
    stats = _PERL_STATS
    heads = [split_perl(r.name) for r in runs]
    cell_w = 12 + 6 + 4
    widths = [max(cell_w, len(a) + 1, len(b) + 1) for a, b in heads]
    stat_w = max(len(s) for s, _ in stats)
    op_w = max(len(op) for op in ops)
    prefix = " " * (stat_w + 1 + op_w)
    lines.append(prefix + "".join(f"{a:>{w}}" for (a, _), w in zip(heads, widths)))
    lines.append(prefix + "".join(f"{b:>{w}}" for (_, b), w in zip(heads, widths)))
    for stat, fn in stats:
        for op in ops:
            b = fn(base.ops[op])
            cells = []
            for run, w in zip(runs, widths):
                v = fn(run.ops[op])
                pct = pndiff(b, v, era) if _finite(v) and _finite(b) else 0.0
                cell = _fmt_value(v, "12.2f") + f" ({pct:6.2f}%)"
                cells.append(f"{cell:>{w}}")
            lines.append(f"{stat:<{stat_w}} {op:<{op_w}}" + "".join(cells))
    return "\n".join(lines)


# --------------------------------------------------------------------------- duration and vmstat blocks


def _gnu_time(seconds: float) -> str:
    from mmtwin.reports.mmtests2011 import gnu_time

    return gnu_time(seconds)


def _counters(run: RunSamples) -> tuple[dict[str, int], set[str]]:
    """The run's /proc/vmstat deltas (end - start; a counter absent at one end counts 0 there) and
    the counters the start snapshot holds (the shell scripts count only those)."""
    start = run.vmstat_start or {}
    names = set(run.vmstat) | set(start)
    deltas = {n: int(run.vmstat.get(n, 0)) - int(start.get(n, 0)) for n in names}
    return deltas, set(start) if start else set(run.vmstat)


def _column_2011(run: RunSamples) -> Any:
    from mmtwin.reports import mmtests2011 as m11

    duration = m11.duration_texts(run.user_s, run.sys_s, run.elapsed_s)
    deltas, _ = _counters(run)
    vmstat = m11.vmstat_texts(m11.summarise_vmstat(deltas), duration[m11.DURATION_ROWS[1]])
    return m11.Column(run.name, {}, duration, vmstat)


def _perl_header(runs: Sequence[RunSamples], label_w: int, cell_w: int) -> list[str]:
    """Compare.pm's two header rows: an empty ``%<label_w>s`` cell, then ``%<cell_w>s`` per run
    (a name longer than the cell runs into its neighbour, as sprintf lets it)."""
    heads = [split_perl(r.name) for r in runs]
    return [" " * label_w + "".join(f"{h[i]:>{cell_w}}" for h in heads) for i in (0, 1)]


def duration_block(runs: Sequence[RunSamples], era: str, benchmark: str = "memhog") -> str:
    """``MMTests Statistics: duration`` as the era's script printed it from GNU time's line."""
    check_era(era)
    if era == "2011":
        from mmtwin.reports import mmtests2011 as m11

        return m11.duration_block([_column_2011(r) for r in runs])
    lines = ["MMTests Statistics: duration"]
    times = [(_gnu_time(r.user_s), _gnu_time(r.sys_s), _gnu_time(r.elapsed_s)) for r in runs]
    if era == "2017":
        # MonitorDuration: ``%-7s`` and a blank operation column, then ``%12.2f`` per run
        lines += _perl_header(runs, 8, 12)
        for i, label in enumerate(("User", "System", "Elapsed")):
            lines.append(f"{label:<7} " + "".join(f"{float(t[i]):12.2f}" for t in times))
        return "\n".join(lines)
    from mmtwin.reports.mmtests2011 import perl_number

    rows = (
        ("Sys Time Running Test (seconds)", [t[1] for t in times]),
        ("User+Sys Time Running Test (seconds)", [perl_number(float(t[0]) + float(t[1])) for t in times]),
        ("Total Elapsed Time (seconds)", [t[2] for t in times]),
    )
    lines += [f"{label:<40}" + "".join(f"{v:>10}" for v in values) for label, values in rows]
    return "\n".join(lines)


# The 2012 script's rows (gormanm/mmtests 9e71bc6a, subreport/mmtests-vmstat), in its order.
VMSTAT_ROWS_2012 = (
    "Page Ins", "Page Outs", "Swap Ins", "Swap Outs", "Direct pages scanned", "Kswapd pages scanned",
    "Kswapd pages reclaimed", "Direct pages reclaimed", "Kswapd efficiency", "Kswapd velocity",
    "Direct efficiency", "Direct velocity", "Percentage direct scans", "Page writes by reclaim",
    "Page writes file", "Page writes anon", "Page reclaim immediate", "Page rescued immediate",
    "Slabs scanned", "Direct inode steals", "Kswapd inode steals", "Kswapd skipped wait",
    "THP fault alloc", "THP collapse alloc", "THP splits", "THP fault fallback", "THP collapse fail",
    "Compaction stalls", "Compaction success", "Compaction failures", "Compaction pages moved",
    "Compaction move failure",
)
_ZONES = ("dma", "dma32", "normal", "movable", "high")


def vmstat_texts_2012(run: RunSamples) -> dict[str, str]:
    """Each 2012 row as text: sums of the deltas of counters present at the start, bash's
    truncating percentages, perl's quotient printed ``%.3f`` for the velocities."""
    from mmtwin.reports.mmtests2011 import _trunc_div, _velocity

    deltas, present = _counters(run)

    def total(*names: str) -> int:
        return sum(deltas[n] for n in names if n in present)

    kswapd_split = [f"pgsteal_kswapd_{z}" for z in ("dma", "dma32", "normal", "high", "movable")]
    kswapd_steal = total("kswapd_steal", *kswapd_split)
    pgsteal = total(*(f"pgsteal_{z}" for z in _ZONES), *(f"pgsteal_direct_{z}" for z in _ZONES))
    # 3.4 split pgsteal by reclaimer: then the direct ones are counted on their own
    direct_steal = pgsteal if any(n in present for n in kswapd_split) else pgsteal - kswapd_steal
    kswapd_scan = total(*(f"pgscan_kswapd_{z}" for z in _ZONES))
    direct_scan = total(*(f"pgscan_direct_{z}" for z in _ZONES))
    elapsed = float(_gnu_time(run.elapsed_s))
    write, swapout = total("nr_vmscan_write"), total("pswpout")
    values: dict[str, str] = {
        "Page Ins": str(total("pgpgin")),
        "Page Outs": str(total("pgpgout")),
        "Swap Ins": str(total("pswpin")),
        "Swap Outs": str(swapout),
        "Direct pages scanned": str(direct_scan),
        "Kswapd pages scanned": str(kswapd_scan),
        "Kswapd pages reclaimed": str(kswapd_steal),
        "Direct pages reclaimed": str(direct_steal),
        "Kswapd efficiency": f"{_trunc_div(kswapd_steal * 100, kswapd_scan) if kswapd_scan > 0 else 100}%",
        "Kswapd velocity": _velocity(kswapd_scan, elapsed),
        "Direct efficiency": f"{_trunc_div(direct_steal * 100, direct_scan) if direct_scan > 0 else 100}%",
        "Direct velocity": _velocity(direct_scan, elapsed),
        # 0% whenever kswapd scanned nothing, as the script tested kswapd's count alone
        "Percentage direct scans": f"{_trunc_div(direct_scan * 100, kswapd_scan + direct_scan) if kswapd_scan > 0 else 0}%",
        "Page writes by reclaim": str(write),
        "Page writes file": str(write - swapout),
        "Page writes anon": str(swapout),
    }
    for label, counter in (
        ("Page reclaim immediate", "nr_vmscan_immediate_reclaim"), ("Page rescued immediate", "pgrescued"),
        ("Slabs scanned", "slabs_scanned"), ("Direct inode steals", "pginodesteal"),
        ("Kswapd inode steals", "kswapd_inodesteal"), ("Kswapd skipped wait", "kswapd_skip_congestion_wait"),
        ("THP fault alloc", "thp_fault_alloc"), ("THP collapse alloc", "thp_collapse_alloc"),
        ("THP splits", "thp_split"), ("THP fault fallback", "thp_fault_fallback"),
        ("THP collapse fail", "thp_collapse_alloc_failed"), ("Compaction stalls", "compact_stall"),
        ("Compaction success", "compact_success"), ("Compaction failures", "compact_fail"),
        ("Compaction pages moved", "compact_pages_moved"), ("Compaction move failure", "compact_pagemigrate_failed"),
    ):
        values[label] = str(total(counter))
    return values


# MonitorMmtestsvmstat (gormanm/mmtests 4aa747e1): its keys in display order with their labels.
# "blank" heads the list and is never printed; each key's number format is chosen by its
# position in this list, so every key left out before a row shifts that row's format.
_VMSTAT_2017 = (
    ("blank", "blank"),
    ("mmtests_minor_faults", "Minor Faults"), ("pgmajfault", "Major Faults"),
    ("pswpin", "Swap Ins"), ("pswpout", "Swap Outs"), ("allocstall", "Allocation stalls"),
    ("pgalloc_dma", "DMA allocs"), ("pgalloc_dma32", "DMA32 allocs"), ("pgalloc_normal", "Normal allocs"),
    ("pgalloc_movable", "Movable allocs"),
    ("mmtests_direct_scan", "Direct pages scanned"), ("mmtests_kswapd_scan", "Kswapd pages scanned"),
    ("mmtests_kswapd_steal", "Kswapd pages reclaimed"), ("mmtests_direct_steal", "Direct pages reclaimed"),
    ("mmtests_kswapd_efficiency", "Kswapd efficiency"), ("mmtests_kswapd_velocity", "Kswapd velocity"),
    ("mmtests_direct_efficiency", "Direct efficiency"), ("mmtests_direct_velocity", "Direct velocity"),
    ("mmtests_direct_percentage", "Percentage direct scans"),
    ("mmtests_highmem_velocity", "Zone highmem velocity"), ("mmtests_normal_velocity", "Zone normal velocity"),
    ("mmtests_dma32_velocity", "Zone dma32 velocity"), ("mmtests_dma_velocity", "Zone dma velocity"),
    ("nr_vmscan_write", "Page writes by reclaim"), ("mmtests_vmscan_write_file", "Page writes file"),
    ("mmtests_vmscan_write_anon", "Page writes anon"), ("nr_vmscan_immediate_reclaim", "Page reclaim immediate"),
    ("pgpgin", "Sector Reads"), ("pgpgout", "Sector Writes"), ("pgrescued", "Page rescued immediate"),
    ("slabs_scanned", "Slabs scanned"), ("pginodesteal", "Direct inode steals"),
    ("kswapd_inodesteal", "Kswapd inode steals"), ("kswapd_skip_congestion_wait", "Kswapd skipped wait"),
    ("thp_fault_alloc", "THP fault alloc"), ("thp_collapse_alloc", "THP collapse alloc"),
    ("thp_split", "THP splits"), ("thp_fault_fallback", "THP fault fallback"),
    ("thp_collapse_alloc_failed", "THP collapse fail"),
    ("compact_stall", "Compaction stalls"), ("compact_success", "Compaction success"),
    ("compact_fail", "Compaction failures"), ("pgmigrate_success", "Page migrate success"),
    ("pgmigrate_fail", "Page migrate failure"), ("compact_pages_moved", "Compaction pages moved"),
    ("compact_pagemigrate_failed", "Compaction move failure"), ("compact_isolated", "Compaction pages isolated"),
    ("compact_migrate_scanned", "Compaction migrate scanned"), ("compact_free_scanned", "Compaction free scanned"),
    ("mmtests_compaction_cost", "Compaction cost"),
    ("numa_hit", "NUMA alloc hit"), ("numa_miss", "NUMA alloc miss"), ("numa_interleave", "NUMA interleave hit"),
    ("numa_local", "NUMA alloc local"), ("numa_pte_updates", "NUMA base PTE updates"),
    ("numa_huge_pte_updates", "NUMA huge PMD updates"), ("mmtests_numa_pte_updates", "NUMA page range updates"),
    ("numa_hint_faults", "NUMA hint faults"), ("numa_hint_faults_local", "NUMA hint local faults"),
    ("mmtests_hint_local", "NUMA hint local percent"), ("numa_pages_migrated", "NUMA pages migrated"),
    ("mmtests_autonuma_cost", "AutoNUMA cost"),
)
_PERCENT_2017 = {"mmtests_kswapd_efficiency", "mmtests_direct_efficiency", "mmtests_direct_percentage",
                 "mmtests_hint_local", "numa_hint_faults_local"}
_OLD_MIGRATE = {"compact_pages_moved", "compact_pagemigrate_failed"}
_NEW_MIGRATE = {"compact_migrate_scanned", "compact_free_scanned", "compact_isolated", "pgmigrate_success",
                "pgmigrate_fail"}


def vmstat_values_2017(run: RunSamples) -> dict[str, float]:
    """MonitorMmtestsvmstat's figures for one run (perl arithmetic: a missing counter is 0)."""
    d, _ = _counters(run)
    start = run.vmstat_start or run.vmstat
    v: dict[str, float] = {}

    def get(name: str) -> int:
        return d.get(name, 0)

    v["mmtests_kswapd_steal"] = sum(get(k) for k in ("kswapd_steal", *(f"pgsteal_kswapd_{z}" for z in
                                    ("dma", "dma32", "normal", "high", "movable")), "pgsteal_kswapd"))
    direct = sum(get(f"pgsteal_{z}") for z in _ZONES) + sum(get(f"pgsteal_direct_{z}") for z in _ZONES) + get("pgsteal_direct")
    v["mmtests_direct_steal"] = direct - (v["mmtests_kswapd_steal"] if "kswapd_steal" in start else 0)
    zone_scan: dict[str, int] = {}
    for who in ("kswapd", "direct"):
        total = 0
        for z in (*_ZONES, ""):
            key = f"pgscan_{who}_{z}" if z else f"pgscan_{who}"
            total += get(key)
            zone_scan[z or "normal"] = zone_scan.get(z or "normal", 0) + get(key)
        v[f"mmtests_{who}_scan"] = total
    elapsed = float(_gnu_time(run.elapsed_s))

    def per_second(x: float) -> float:
        return x / elapsed if elapsed else 0.0  # perl would stop on a zero elapsed time

    v["mmtests_kswapd_velocity"] = per_second(v["mmtests_kswapd_scan"])
    v["mmtests_direct_velocity"] = per_second(v["mmtests_direct_scan"])
    for z in ("normal", "dma32", "dma"):
        v[f"mmtests_{z}_velocity"] = per_second(zone_scan.get(z, 0))
    for who in ("direct", "kswapd"):
        scan = v[f"mmtests_{who}_scan"]
        v[f"mmtests_{who}_efficiency"] = v[f"mmtests_{who}_steal"] * 100 / scan if scan else 100
    scanned = v["mmtests_kswapd_scan"] + v["mmtests_direct_scan"]
    v["mmtests_direct_percentage"] = v["mmtests_direct_scan"] * 100 / scanned if scanned else 0
    for key, _ in _VMSTAT_2017:
        if not key.startswith("mmtests_") and key != "blank":
            v[key] = get(key)
    v["mmtests_vmscan_write_file"] = get("nr_vmscan_write") - get("pswpout")
    v["mmtests_vmscan_write_anon"] = get("pswpout")
    v["mmtests_minor_faults"] = get("pgfault") - get("pgmajfault")
    hints = get("numa_hint_faults")
    v["mmtests_hint_local"] = get("numa_hint_faults_local") * 100 / hints if hints else 100
    v["mmtests_numa_pte_updates"] = get("numa_pte_updates") + get("numa_huge_pte_updates") * 512
    # the cost models (x86-64 constants: 7 per address, 519 per page copy)
    ca, ci = 56 / 8, 56 / 8 + 12
    copy = ca + 4096 / 8
    cost = 0.0
    if "compact_migrate_scanned" in start:
        cost = (ca * get("compact_migrate_scanned") + ci * get("compact_isolated")
                + 2 * copy * get("pgmigrate_success") + 2 * ca * get("pgmigrate_fail"))
    if "compact_blocks_moved" in start:
        cost = ca * get("compact_blocks_moved") * 16384 + 2 * copy * get("compact_pages_moved") + 2 * ca * get("compact_pagemigrate_failed")
    v["mmtests_compaction_cost"] = cost / 1000000
    v["mmtests_autonuma_cost"] = (ca * get("numa_pte_updates") + 5000 * hints + ci * get("numa_pages_migrated")) / 1000000
    return v


def _perl_format(fmt: str, value: float) -> str:
    kind, width = fmt
    if kind == "f":
        return f"{value:{width}.3f}"
    number = int(value)  # %d truncates toward zero
    return f"{number:{width - 1}d}%" if kind == "%" else f"{number:{width}d}"


def vmstat_block(runs: Sequence[RunSamples], era: str, benchmark: str = "memhog") -> str:
    """``MMTests Statistics: vmstat``: MMTests' rows derived from the /proc/vmstat deltas, in the era's layout."""
    check_era(era)
    if era == "2011":
        from mmtwin.reports import mmtests2011 as m11

        return m11.vmstat_block([_column_2011(r) for r in runs])
    lines = ["MMTests Statistics: vmstat"]
    if era == "2012":
        texts = [vmstat_texts_2012(r) for r in runs]
        lines += [f"{row:<40}" + "".join(f"{t[row]:>12}" for t in texts) for row in VMSTAT_ROWS_2012]
        return "\n".join(lines)
    values = [vmstat_values_2017(r) for r in runs]
    base = runs[0].vmstat_start or runs[0].vmstat
    new_migrate = "pgmigrate_success" in base or "pgmigrate_success" in runs[0].vmstat
    skipped = {"mmtests_highmem_velocity"} | (_OLD_MIGRATE if new_migrate else _NEW_MIGRATE)
    formats = [("%", 12) if k in _PERCENT_2017 else ("f", 12) if k.endswith("_velocity") else ("d", 12)
               for k, _ in _VMSTAT_2017]
    shown = [(k, label) for k, label in _VMSTAT_2017 if k not in skipped]
    label_w = max(len(label) for _, label in shown[1:])
    lines += _perl_header(runs, label_w, 12)
    for i, (key, label) in enumerate(shown[1:], start=1):
        lines.append(f"{label:<{label_w}}" + "".join(_perl_format(formats[i], v[key]) for v in values))
    return "\n".join(lines)


def compare_report(runs: Sequence[RunSamples], era: str, benchmark: str = "memhog") -> str:
    """Benchmark table, duration block and vmstat block, separated by blank lines."""
    return "\n\n".join(
        [benchmark_table(runs, era, benchmark), duration_block(runs, era, benchmark), vmstat_block(runs, era, benchmark)]
    ) + "\n"
