"""MMTests-style comparison of two or more kernels (docs: shared mmtests.md §1-§3).

Three report eras are supported:

* ``2011``: the shell ``compare-kernels.sh`` era. Percentages are relative to
  the *new* value: pdiff = (new-base)*100/new, pndiff = -(new-base)*100/new.
  Benchmark rows ``%-8s %-6s`` (op, stat; wider for long op names) with `` %11.2f (%5.2f%%)`` cells;
  duration and vmstat blocks ``%-40s`` + ``%10s``.
* ``2012``: baseline-relative percentages (pdiff = new*100/base-100,
  pndiff = 100-new*100/base) with `` %12.2f (%6.2f%%)`` cells and the 2012
  duration rows, monitor blocks still ``%-40s`` + ``%10s``.
* ``2017``: the Perl Compare era before June 2017: same formulas and cell
  format, duration rows ``User``/``System``/``Elapsed`` with ``%12.2f``, vmstat
  values ``%12d``.

Sign convention in every era: positive = better than the baseline.
"""

from __future__ import annotations

import math
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
    if base == 0:
        return -99.0
    if new == 0:
        return 100.0
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
    """Split a run name into two header rows the way the Perl Compare modules did."""
    idx = name.find("-")
    if idx < 0:
        return name[:-1], name
    head, tail = name[:idx], name[idx + 1 :]
    parts = tail.split("-", 1)
    if len(parts) == 2 and parts[0][:2] == "rc" and parts[0][2:].isdigit():
        return f"{head}-{parts[0]}", parts[1]
    return head, tail


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


def _monitor_header(
    runs: Sequence[RunSamples], era: str, label_w: int, cell_w: int, benchmark: str
) -> tuple[list[str], list[int]]:
    heads = [split_shell(f"{benchmark}-{r.name}") if era == "2011" else split_perl(r.name) for r in runs]
    widths = [max(cell_w, len(a) + 1, len(b) + 1) for a, b in heads]
    rows = [
        " " * label_w + "".join(f"{a:>{w}}" for (a, _), w in zip(heads, widths)),
        " " * label_w + "".join(f"{b:>{w}}" for (_, b), w in zip(heads, widths)),
    ]
    return rows, widths


def duration_block(runs: Sequence[RunSamples], era: str, benchmark: str = "memhog") -> str:
    """``MMTests Statistics: duration`` with the era's rows."""
    check_era(era)
    lines = ["MMTests Statistics: duration"]
    if era == "2017":
        label_w = len("Elapsed") + 1
        header, widths = _monitor_header(runs, era, label_w, 12, benchmark)
        lines += header
        for label, attr in (("User", "user_s"), ("System", "sys_s"), ("Elapsed", "elapsed_s")):
            lines.append(f"{label:<{label_w}}" + "".join(f"{getattr(r, attr):>{w}.2f}" for r, w in zip(runs, widths)))
        return "\n".join(lines)
    header, widths = _monitor_header(runs, era, 40, 10, benchmark)
    lines += header
    if era == "2011":
        rows = [
            ("User/Sys Time Running Test (seconds)", lambda r: r.user_s + r.sys_s),
            ("Total Elapsed Time (seconds)", lambda r: r.elapsed_s),
        ]
    else:
        rows = [
            ("Sys Time Running Test (seconds)", lambda r: r.sys_s),
            ("User+Sys Time Running Test (seconds)", lambda r: r.user_s + r.sys_s),
            ("Total Elapsed Time (seconds)", lambda r: r.elapsed_s),
        ]
    for label, fn in rows:
        lines.append(f"{label:<40}" + "".join(f"{fn(r):>{w}.2f}" for r, w in zip(runs, widths)))
    return "\n".join(lines)


def _int_text(value: int | float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}"


def vmstat_block(runs: Sequence[RunSamples], era: str, benchmark: str = "memhog") -> str:
    """``MMTests Statistics: vmstat``: the raw /proc/vmstat counters under their kernel names.

    The engine starts every run from a fresh boot, so each counter's final
    value is the run's delta. Rows follow the baseline's (the engine's) order;
    counters only some kernels have are appended after, absent ones print 0.
    """
    check_era(era)
    names: list[str] = []
    seen: set[str] = set()
    for run in runs:
        for name in run.vmstat:
            if name not in seen:
                seen.add(name)
                names.append(name)
    cell_w = 12 if era == "2017" else 10
    header, widths = _monitor_header(runs, era, 40, cell_w, benchmark)
    lines = ["MMTests Statistics: vmstat", *header]
    for name in names:
        cells = "".join(f"{_int_text(r.vmstat.get(name, 0)):>{w}}" for r, w in zip(runs, widths))
        lines.append(f"{name:<40}{cells}")
    return "\n".join(lines)


def compare_report(runs: Sequence[RunSamples], era: str, benchmark: str = "memhog") -> str:
    """Benchmark table, duration block and vmstat block, separated by blank lines."""
    return "\n\n".join(
        [benchmark_table(runs, era, benchmark), duration_block(runs, era, benchmark), vmstat_block(runs, era, benchmark)]
    ) + "\n"
