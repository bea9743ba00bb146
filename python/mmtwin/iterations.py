"""Repeated iterations of a run: per-iteration seeds, the figures of one run,
and MMTests' summary rows over iterations (docs/sweep.md).

Seeds. Iteration 0 runs with the given seed itself, so ``--iterations 1`` is
exactly the single run. Iteration i >= 1 runs with the i-th output of
SplitMix64 (Steele, Lea and Flood, 2014) started at that seed::

    z = (seed + i * 0x9E3779B97F4A7C15) mod 2^64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 mod 2^64
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB mod 2^64
    seed_i = z ^ (z >> 31)

so neighbouring seeds (a sweep over ``seed=1,2``) do not share iterations.

What varies. The engine's one source of variation is the seed's SplitMix64
(crates/mmtwin-core/src/sched.rs), read by two workloads only: the memory
hog (where jiffies stand when it starts, and, on a machine with
fork_balance "ia64-2.6.18", the shell's CPU, the timer ticks' phase and
which idle CPU pulls a thread, and when) and fs_mark (the wall clock at
time 0, which decides each iteration's first subdirectory). Every other
workload is byte-identical from one seed to the next.
Whether iterations differ is measured, never
assumed: the deterministic part of each result (everything but ``perf``) is
hashed, and iterations with equal hashes are reported as identical instead of
as a spread of zero.

Summary rows. Per kernel (or sweep cell) and per figure: ``Min``,
``Amean`` (``Hmean`` for a rate, where higher is better), ``Stddev``,
``CoeffVar``, ``Max`` in the Perl Compare look of 2012-2017, or ``min``,
``mean``, ``stddev``, ``max`` in the 2011 shell look (docs: shared
mmtests.md §1.2-§1.4). Stddev is over the population, as MMTests computed it
before June 2017.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mmtwin.errors import MmtwinError

MASK64 = 2**64 - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
MAX_ITERATIONS = 1000

IDENTICAL_LINE = "iterations identical: the seed varies nothing in this run"


# --------------------------------------------------------------------------- seeds


def check_iterations(value: int, option: str = "--iterations") -> int:
    """``--iterations``: an integer 1..MAX_ITERATIONS."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ITERATIONS:
        raise MmtwinError(f"{option}: {value!r} is not allowed; expected an integer 1..{MAX_ITERATIONS}")
    return value


def splitmix64(seed: int, i: int) -> int:
    """The i-th output (i >= 1) of SplitMix64 started at ``seed``."""
    z = (seed + i * GOLDEN_GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def iteration_seed(seed: int, i: int) -> int:
    """The seed of iteration ``i`` (0-based) of a run whose seed is ``seed``."""
    if not 0 <= seed <= MASK64:
        raise MmtwinError(f"--seed: {seed} is not allowed; expected 0 <= seed < 2^64")
    return seed if i == 0 else splitmix64(seed, i)


def iteration_seeds(seed: int, n: int) -> list[int]:
    return [iteration_seed(seed, i) for i in range(check_iterations(n))]


def with_seed(spec: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """A copy of ``spec`` with another seed (the spec is otherwise shared)."""
    out = dict(spec)
    out["seed"] = seed
    return out


def result_digest(result: Mapping[str, Any]) -> str:
    """SHA-256 of the deterministic part of a result (every key but ``perf``), canonical JSON."""
    body = {k: v for k, v in result.items() if k != "perf"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def all_identical(digests: Sequence[str]) -> bool:
    return len(set(digests)) <= 1


# --------------------------------------------------------------------------- the figures of one run

# The /proc/vmstat counters a tidy row carries (deltas over the run), by kernel
# name; a per-zone counter (pgscan_kswapd_normal, ...) is summed over zones.
VMSTAT_COLUMNS: tuple[str, ...] = (
    "pgpgin",
    "pgpgout",
    "pswpin",
    "pswpout",
    "pgfault",
    "pgmajfault",
    "allocstall",
    "pageoutrun",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgsteal",
    "kswapd_steal",
    "nr_vmscan_write",
    "nr_vmscan_invalidate",
    "slabs_scanned",
    "pginodesteal",
    "kswapd_inodesteal",
)
_ZONE_SUMMED = ("pgscan_kswapd", "pgscan_direct", "pgsteal", "pgalloc")

TIME_COLUMNS: tuple[str, ...] = ("user_s", "sys_s", "elapsed_s")
# The benchmark's own figures, per workload kind.
BENCH_COLUMNS: dict[str, tuple[str, ...]] = {
    "memhog": (),
    "fsmark": ("files_per_sec_min", "files_per_sec_mean", "files_per_sec_stddev", "files_per_sec_max", "overhead_us_mean"),
    "largedd": ("download_tar_s", "dd_source_files_s", "delete_source_s"),
    "mmapstream": ("mmap_elapsed_s",),
}


def vmstat_figures(result: Mapping[str, Any]) -> dict[str, int | None]:
    """VMSTAT_COLUMNS from ``vmstat - vmstat_start``; None for a counter the kernel does not have."""
    end = result.get("vmstat") or {}
    start = result.get("vmstat_start") or {}

    def delta(name: str) -> int:
        return int(end[name]) - int(start.get(name, 0))

    out: dict[str, int | None] = {}
    for col in VMSTAT_COLUMNS:
        if col == "allocstall" and col not in end:
            # 4.11 counts direct reclaim entries per zone (allocstall_<zone>).
            names = [n for n in end if n.startswith("allocstall_")]
            out[col] = sum(delta(n) for n in names) if names else None
        elif col in _ZONE_SUMMED:
            names = [n for n in end if n.startswith(col + "_")]
            out[col] = sum(delta(n) for n in names) if names else None
        else:
            out[col] = delta(col) if col in end else None
    return out


def bench_figures(kind: str, result: Mapping[str, Any]) -> dict[str, float | None]:
    """The benchmark's own figures (as the benchmark printed them; docs/sweep.md)."""
    from mmtwin.reports import mmtests2011 as mt

    bench = (result.get("benchmark") or {}).get(kind) or {}
    if kind == "fsmark":
        its = bench.get("iterations") or []
        if not its:
            return dict.fromkeys(BENCH_COLUMNS[kind])
        s = mt.fsmark_stats(its)
        return {
            "files_per_sec_min": s["Files/s min"],
            "files_per_sec_mean": s["Files/s mean"],
            "files_per_sec_stddev": s["Files/s stddev"],
            "files_per_sec_max": s["Files/s max"],
            "overhead_us_mean": s["Overhead mean"],
        }
    if kind == "largedd":
        phases = {str(p["name"]): float(int(p["seconds"])) for p in bench.get("phases") or []}
        return {
            "download_tar_s": phases.get("download tar"),
            "dd_source_files_s": phases.get("dd source files"),
            "delete_source_s": phases.get("delete source"),
        }
    if kind == "mmapstream":
        value = bench.get("elapsed_s")
        return {"mmap_elapsed_s": None if value is None else float(value)}
    return {}


def run_figures(spec: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """One run's figures: times, page events, OOM, the benchmark's figures, vmstat deltas."""
    kind = str(spec["workload"]["kind"])
    t = result["times"]
    return {
        "user_s": float(t["user_s"]),
        "sys_s": float(t["sys_s"]),
        "elapsed_s": float(t["elapsed_s"]),
        "events": int(result.get("events", 0)),
        "oom": bool((result.get("sim") or {}).get("oom", False)),
        **bench_figures(kind, result),
        **vmstat_figures(result),
    }


# --------------------------------------------------------------------------- summary rows


@dataclass(frozen=True)
class Op:
    """A figure summarised over iterations: its column in the figures, its name in the table."""

    column: str
    label: str
    higher_better: bool = False


TIME_OPS = (Op("user_s", "User"), Op("sys_s", "System"), Op("elapsed_s", "Elapsed"))
BENCH_OPS: dict[str, tuple[Op, ...]] = {
    "memhog": (),
    "fsmark": (Op("files_per_sec_mean", "Files/s", True), Op("overhead_us_mean", "Overhead")),
    "largedd": (Op("download_tar_s", "download-tar"), Op("dd_source_files_s", "dd-source-files"),
                Op("delete_source_s", "delete-source")),
    "mmapstream": (Op("mmap_elapsed_s", "mmap-strm"),),
}


def ops_for(kinds: Sequence[str]) -> list[Op]:
    """The summary's figures for runs of these workload kinds: the benchmark's, then the times."""
    ops: list[Op] = []
    for kind in dict.fromkeys(kinds):
        ops += BENCH_OPS.get(kind, ())
    return ops + list(TIME_OPS)


@dataclass
class Column:
    """One kernel's (or sweep cell's) iterations."""

    name: str
    figures: list[dict[str, Any]]  # one per iteration, in iteration order
    identical: bool  # every iteration's result was byte-identical
    heads: tuple[str, str] = ("", "")
    values: dict[str, list[float]] = field(init=False)

    def __post_init__(self) -> None:
        self.values = {}
        for fig in self.figures:
            for key, v in fig.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    self.values.setdefault(key, []).append(float(v))

    @property
    def measured(self) -> bool:
        """Spread means something: two or more iterations that did not all come out the same."""
        return len(self.figures) > 1 and not self.identical


def _amean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def _hmean(xs: Sequence[float]) -> float:
    # MMTests' calc_hmean: NaN when a sample is <= 0 (printed as 0.00).
    if any(x <= 0 for x in xs):
        return math.nan
    return len(xs) / math.fsum(1.0 / x for x in xs)


def _stddev(xs: Sequence[float]) -> float:
    mean = _amean(xs)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / len(xs))


def _coeffvar(xs: Sequence[float]) -> float:
    mean = _amean(xs)
    return 0.0 if mean == 0 else _stddev(xs) * 100.0 / mean


SPREAD_STATS = frozenset({"stddev", "coeffvar"})


def _stats(era: str, op: Op, spread: bool = True) -> list[tuple[str, str, Any]]:
    """(label, kind, function) rows for one op in an era (without Stddev and CoeffVar unless ``spread``)."""
    if era == "2011":
        rows = [("min", "min", min), ("mean", "mean", _amean), ("stddev", "stddev", _stddev), ("max", "max", max)]
    else:
        mean = ("Hmean", "mean", _hmean) if op.higher_better else ("Amean", "mean", _amean)
        rows = [("Min", "min", min), mean, ("Stddev", "stddev", _stddev), ("CoeffVar", "coeffvar", _coeffvar),
                ("Max", "max", max)]
    return [r for r in rows if spread or r[1] not in SPREAD_STATS]


def _pct(era: str, op: Op, kind: str, base: float, new: float) -> float:
    from mmtwin.reports.mmtests import pdiff, pndiff

    if not (math.isfinite(base) and math.isfinite(new)):
        return 0.0
    # 2011: a metric's rows all use its function (subreport/fsmark); later,
    # Stddev and CoeffVar always pndiff (Summarise.pm::getStatCompareFunc).
    higher = op.higher_better and (era == "2011" or kind not in SPREAD_STATS)
    return pdiff(base, new, era) if higher else pndiff(base, new, era)


def summary_table(columns: Sequence[Column], ops: Sequence[Op], era: str, *, percentages: bool = True,
                  title: str | None = None) -> str:
    """MMTests' summary rows over iterations, one column per kernel or cell.

    ``era`` 2011: ``%-Ns %-6s`` labels (op, stat), `` %11.2f (%5.2f%%)`` cells,
    pdiff/pndiff relative to the new value. 2012/2017: stat-major rows,
    ``%12.2f (%6.2f%%)`` cells, relative to the baseline (the first column).
    Without ``percentages`` cells are ``%12.2f`` alone. A Stddev or CoeffVar
    cell of a column whose iterations were identical (or that has one
    iteration) prints ``-``: there is no spread to measure; when no column has
    one, those rows are left out. A figure a column does not have prints ``-``.
    """
    from mmtwin.reports.mmtests import check_era

    check_era(era)
    if not columns:
        raise MmtwinError("a summary needs at least one column")
    ops = [op for op in ops if any(op.column in c.values for c in columns)]
    # No column with a spread to measure: leave the Stddev and CoeffVar rows out (the notes say why).
    spread = any(c.measured for c in columns)
    base = columns[0]
    if era == "2011":
        cell_w = 21 if percentages else 12
    else:
        cell_w = 22 if percentages else 13
    widths = [max(cell_w, len(c.heads[0]) + 1, len(c.heads[1]) + 1) for c in columns]

    def cell(c: Column, op: Op, kind: str, fn: Any, w: int) -> str:
        xs = c.values.get(op.column)
        if not xs or (kind in SPREAD_STATS and not c.measured):
            return f"{'-':>{w}}"
        v = fn(xs)
        shown = v if math.isfinite(v) else 0.0
        if not percentages:
            return f"{shown:>{w}.2f}"
        bxs = base.values.get(op.column)
        pct = _pct(era, op, kind, fn(bxs), v) if bxs and (kind not in SPREAD_STATS or base.measured) else 0.0
        if era == "2011":
            text = f" {shown:11.2f} ({pct:5.2f}%)"
        else:
            text = f"{shown:12.2f} ({pct:6.2f}%)"
        return f"{text:>{w}}"

    lines = [title] if title else []
    if era == "2011":
        op_w = max([8, *(len(op.label) for op in ops)])
        label_w = op_w + 7
        for row in (0, 1):
            if any(c.heads[row] for c in columns):
                lines.append(" " * label_w + "".join(f"{c.heads[row]:>{w}}" for c, w in zip(columns, widths)))
        for op in ops:
            for label, kind, fn in _stats(era, op, spread):
                lines.append(f"{op.label:<{op_w}} {label:<6}"
                             + "".join(cell(c, op, kind, fn, w) for c, w in zip(columns, widths)))
        return "\n".join(lines)
    stat_w = max(len(label) for op in ops for label, _, _ in _stats(era, op, spread)) if ops else 8
    op_w = max([len(op.label) for op in ops] or [1])
    prefix = " " * (stat_w + 1 + op_w)
    for row in (0, 1):
        if any(c.heads[row] for c in columns):
            lines.append(prefix + "".join(f"{c.heads[row]:>{w}}" for c, w in zip(columns, widths)))
    n_stats = len(_stats(era, Op("", ""), spread))
    for i in range(n_stats):
        for op in ops:
            label, kind, fn = _stats(era, op, spread)[i]
            lines.append(f"{label:<{stat_w}} {op.label:<{op_w}}"
                         + "".join(cell(c, op, kind, fn, w) for c, w in zip(columns, widths)))
    return "\n".join(lines)


def notes(columns: Sequence[Column], what: str = "kernel") -> list[str]:
    """The lines that say where there was no spread to measure."""
    same = [c.name for c in columns if len(c.figures) > 1 and c.identical]
    single = [c.name for c in columns if len(c.figures) == 1]
    out = []
    if same and len(same) == len(columns):
        out.append(IDENTICAL_LINE.replace("this run", "this sweep" if what == "cell" else "this run")
                   + f" (every {what}'s {len(columns[0].figures)} iterations gave byte-identical results; "
                   "no Stddev or CoeffVar rows: there is no spread to measure)")
    elif same:
        out.append(f"iterations identical for {what} {', '.join(same)}: the seed varies nothing in those runs "
                   "(their Stddev and CoeffVar print -, not a measured 0)")
    if single and len(single) == len(columns):
        out.append(f"one iteration per {what}: no spread to measure, so no Stddev or CoeffVar rows (--iterations 2 or more)")
    elif single:
        out.append(f"one iteration for {what} {', '.join(single)}: no spread to measure (their Stddev and CoeffVar print -)")
    return out


# --------------------------------------------------------------------------- run and compare


@dataclass
class Iterated:
    """The iterations of one spec: seeds, full results, digests."""

    seeds: list[int]
    results: list[dict[str, Any]]
    digests: list[str]

    @property
    def identical(self) -> bool:
        return all_identical(self.digests)

    @property
    def first(self) -> dict[str, Any]:
        return self.results[0]


def run_iterations(specs: Sequence[Mapping[str, Any]], iterations: int, jobs: int | None = None,
                   label: str = "simulating") -> list[Iterated]:
    """Run each spec ``iterations`` times with the derived seeds, on the process pool
    (spec-major, iteration inner; results in that order whatever ``jobs`` is)."""
    from mmtwin.engine import run_many

    check_iterations(iterations)
    planned: list[dict[str, Any]] = []
    seeds_of: list[list[int]] = []
    for spec in specs:
        seeds = iteration_seeds(int(spec["seed"]), iterations)
        seeds_of.append(seeds)
        planned += [with_seed(spec, s) for s in seeds]
    results = run_many(planned, jobs, label=label)
    out = []
    for i, seeds in enumerate(seeds_of):
        rs = results[i * iterations : (i + 1) * iterations]
        out.append(Iterated(seeds, rs, [result_digest(r) for r in rs]))
    return out


def seeds_line(seeds: Sequence[int], base: int) -> str:
    shown = ", ".join(str(s) for s in seeds[:4]) + (", ..." if len(seeds) > 4 else "")
    return f"iterations: {len(seeds)}, seeds {shown} (iteration 0 is seed {base}, the others SplitMix64 of it)"


def iterations_block(names: Sequence[str], specs: Sequence[Mapping[str, Any]], its: Sequence[Iterated], era: str,
                     heads: Sequence[tuple[str, str]] | None = None) -> str:
    """The text printed after a run's or a comparison's report when --iterations > 1.

    Iterations all byte-identical: the one line saying so. Otherwise the
    summary rows over iterations (one column per kernel) and the notes.
    """
    lines = [seeds_line(its[0].seeds, int(specs[0]["seed"]))]
    columns = [
        Column(name, [run_figures(spec, r) for r in it.results], it.identical, tuple(heads[i]) if heads else ("", name))
        for i, (name, spec, it) in enumerate(zip(names, specs, its))
    ]
    if all(c.identical for c in columns):
        each = " of each kernel" if len(columns) > 1 else ""
        lines.append(f"{IDENTICAL_LINE} ({len(its[0].seeds)} iterations{each} gave byte-identical results)")
        return "\n".join(lines)
    kinds = [str(s["workload"]["kind"]) for s in specs]
    lines.append(summary_table(columns, ops_for(kinds), era, title="MMTests Statistics: iterations"))
    lines += notes(columns)
    return "\n".join(lines)


def iterations_json(its: Iterated, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[{"iteration", "seed", "spec", "result"}]`` (results without perf)."""
    out = []
    for i, (seed, r) in enumerate(zip(its.seeds, its.results)):
        out.append({"iteration": i, "seed": seed, "spec": with_seed(spec, seed),
                    "result": {k: v for k, v in r.items() if k != "perf"}})
    return out


def report_result(it: Iterated, kind: str) -> dict[str, Any]:
    """The result a comparison's report is made from: iteration 0's, with fs_mark's
    per-loop lines of every iteration pooled (MMTests pools the samples of every
    iter-*) when the iterations differ."""
    first = it.first
    if kind != "fsmark" or it.identical:
        return first
    lines = [line for r in it.results for line in ((r.get("benchmark") or {}).get("fsmark") or {}).get("iterations", [])]
    bench = dict(first.get("benchmark") or {})
    bench["fsmark"] = {**(bench.get("fsmark") or {}), "iterations": lines}
    return {**first, "benchmark": bench}


def memhog_samples(name: str, it: Iterated, threads: int) -> Any:
    """A memory hog's samples for the comparison table: every iteration's times
    (iteration 0's alone when they are identical); duration and vmstat blocks
    from iteration 0."""
    import dataclasses

    from mmtwin.reports.mmtests import samples_from_results

    pooled = samples_from_results(name, [it.first] if it.identical else it.results, threads)
    t = it.first["times"]
    return dataclasses.replace(pooled, vmstat=dict(it.first.get("vmstat", {})),
                               vmstat_start=dict(it.first.get("vmstat_start") or {}), user_s=float(t["user_s"]),
                               sys_s=float(t["sys_s"]), elapsed_s=float(t["elapsed_s"]))


def compare_block(names: Sequence[str], specs: Sequence[Mapping[str, Any]], its: Sequence[Iterated], era: str) -> str:
    """After a comparison's report (--iterations > 1): the memory hog's table already has
    the iterations, so only the seeds and notes; the file workloads get the summary rows."""
    kind = str(specs[0]["workload"]["kind"])
    if kind != "memhog":
        from mmtwin.reports.mmtests import split_perl, split_shell

        heads = [split_shell(f"{kind}-{n}") if era == "2011" else split_perl(n) for n in names]
        return iterations_block(names, specs, its, era, heads)
    lines = [seeds_line(its[0].seeds, int(specs[0]["seed"]))]
    columns = [Column(n, [run_figures(s, r) for r in it.results], it.identical) for n, s, it in zip(names, specs, its)]
    if all(c.identical for c in columns):
        lines.append(f"{IDENTICAL_LINE} ({len(its[0].seeds)} iterations of each kernel gave byte-identical results; "
                     "the table above is iteration 0's)")
    else:
        lines += notes(columns)
    return "\n".join(lines)
