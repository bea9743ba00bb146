"""Reproduce seed 003: Paul Jackson's zonelist cache (2.6.20-rc1, commit 9276b1bc96a1).

The mail measured a multi-threaded memory hog on a 56-CPU, 28-node, 96 GB
ia64 (SGI Altix) box with 2.6.18-mm3 and with the zonelist cache patch, and
printed sys/user/real seconds for 12/38/64/90 GB and 1/19/37/55 threads.
``PUBLISHED`` is that table, transcribed. The claims below are the mail's
conclusions made testable; each is evaluated on the simulated cells (and, for
reference, on the published ones).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mmtwin import engine
from mmtwin import experiment as experiments
from mmtwin import iterations as its_mod
from mmtwin.errors import MmtwinError
from mmtwin.reports.mmtests import stat_amean, stat_stddev
from mmtwin.reports.seedtable import (Cell, Times, cell_errors, format_beside, format_errors, format_seed_table, median_errors,
                                      short_name)
from mmtwin.reproduce import Options, Outcome, Reproduction, add_iteration_counts, format_claims

EXPERIMENT = "zonelist-cache"
SEED_DOCUMENT = "003_5aa5dcf5f94a5787.txt"

# (GB, threads): (2.6.18-mm3 sys, user, real), (zonelist-cache sys, user, real), seed's "percent systime better"
_PUBLISHED_ROWS: tuple[tuple[int, int, tuple[int, int, int], tuple[int, int, int], str], ...] = (
    (12, 1, (153, 24, 177), (151, 24, 176), "1%"),
    (12, 19, (99, 22, 8), (99, 22, 8), "0%"),
    (12, 37, (111, 25, 6), (112, 25, 6), "-0%"),
    (12, 55, (115, 25, 5), (110, 23, 5), "4%"),
    (38, 1, (502, 74, 576), (497, 73, 570), "0%"),
    (38, 19, (426, 78, 48), (373, 76, 39), "12%"),
    (38, 37, (544, 83, 36), (547, 82, 36), "-0%"),
    (38, 55, (501, 77, 23), (511, 80, 24), "-1%"),
    (64, 1, (917, 125, 1042), (890, 124, 1014), "2%"),
    (64, 19, (1118, 138, 119), (965, 141, 103), "13%"),
    (64, 37, (1202, 151, 94), (1136, 150, 81), "5%"),
    (64, 55, (1118, 141, 61), (1072, 140, 58), "4%"),
    (90, 1, (1342, 177, 1519), (1275, 174, 1450), "4%"),
    (90, 19, (2392, 199, 192), (2116, 189, 176), "11%"),
    (90, 37, (3313, 238, 175), (2972, 225, 145), "10%"),
    (90, 55, (1948, 210, 104), (1843, 213, 100), "5%"),
)

PUBLISHED: tuple[Cell, ...] = tuple(
    Cell(gb, n, Times(*base), Times(*new)) for gb, n, base, new, _ in _PUBLISHED_ROWS
)
PUBLISHED_PERCENT: dict[tuple[int, int], str] = {(gb, n): pct for gb, n, _, _, pct in _PUBLISHED_ROWS}


# --------------------------------------------------------------------------- claims


def sys_better(c: Cell) -> float:
    """Percent by which the new kernel's sys time is lower (positive = better)."""
    return (c.base.sys - c.new.sys) * 100.0 / c.base.sys if c.base.sys else 0.0


def real_better(c: Cell) -> float:
    return (c.base.real - c.new.real) * 100.0 / c.base.real if c.base.real else 0.0


def fewer_threads_real(c: Cell, cells: Sequence[Cell]) -> float:
    """Real of this cell over the real of the next smaller thread count at the
    same size, the worse of the two kernels, in percent (< 100: faster)."""
    smaller = [o for o in cells if o.size_gb == c.size_gb and o.threads < c.threads]
    if not smaller:
        return 0.0
    prev = max(smaller, key=lambda o: o.threads)
    ratios = [
        mine.real * 100.0 / theirs.real if theirs.real else 0.0
        for mine, theirs in ((c.base, prev.base), (c.new, prev.new))
    ]
    return max(ratios)


def serial_share(c: Cell) -> float:
    """Baseline real over the CPU time spread evenly over the threads, (sys + user) / N:
    1 when the run is its parallel part alone; above 1 by whatever runs serially
    (process exit, a lock everyone waits for) or unevenly (threads that finish late)."""
    spread = (c.base.sys + c.base.user) / c.threads if c.threads else 0.0
    return c.base.real / spread if spread else 0.0


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    rule: str
    figure: str  # what the per-cell number is
    cells: Callable[[Sequence[Cell]], list[Cell]]
    value: Callable[[Cell, Sequence[Cell]], float]  # (cell, every cell of the table)
    ok: Callable[[float], bool]


def _pick(keys: Sequence[tuple[int, int]]) -> Callable[[Sequence[Cell]], list[Cell]]:
    def select(cells: Sequence[Cell]) -> list[Cell]:
        by_key = {(c.size_gb, c.threads): c for c in cells}
        missing = [k for k in keys if k not in by_key]
        if missing:
            gb, n = missing[0]
            raise MmtwinError(f"the experiment has no cell ({gb} GB, {n} threads), which the claims need")
        return [by_key[k] for k in keys]

    return select


def _where(pred: Callable[[Cell], bool], what: str) -> Callable[[Sequence[Cell]], list[Cell]]:
    def select(cells: Sequence[Cell]) -> list[Cell]:
        chosen = [c for c in cells if pred(c)]
        if not chosen:
            raise MmtwinError(f"the experiment has no {what} cell, which the claims need")
        return chosen

    return select


def _cell_only(f: Callable[[Cell], float]) -> Callable[[Cell, Sequence[Cell]], float]:
    return lambda c, _cells: f(c)


_SIZES = (12, 38, 64, 90)

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "C1",
        "At 12 GB the cache makes no material difference",
        "every 12 GB cell: |sys change| <= 5%",
        "sys better %",
        _where(lambda c: c.size_gb == 12, "12 GB"),
        _cell_only(sys_better),
        lambda v: abs(v) <= 5.0,
    ),
    Claim(
        "C2",
        "Intermediate thread counts with substantial off-node allocation improve clearly",
        "sys at least 3% lower with the cache at (38,19), (64,19), (64,37), (90,19), (90,37)",
        "sys better %",
        _pick([(38, 19), (64, 19), (64, 37), (90, 19), (90, 37)]),
        _cell_only(sys_better),
        lambda v: v >= 3.0,
    ),
    Claim(
        "C3",
        "Real (elapsed) time falls with it at the larger sizes",
        "real lower with the cache at (64,19), (64,37), (90,19), (90,37)",
        "real better %",
        _pick([(64, 19), (64, 37), (90, 19), (90, 37)]),
        _cell_only(real_better),
        lambda v: v > 0.0,
    ),
    Claim(
        "C4",
        "The high thread count passes ran quite efficiently (note 6): more threads, less real time",
        "at every size, real with 37 threads below real with 19, and with 55 below 37, in both kernels",
        "real % of the next smaller thread count's (worse kernel)",
        _pick([(gb, n) for gb in _SIZES for n in (37, 55)]),
        fewer_threads_real,
        lambda v: v < 100.0,
    ),
    Claim(
        "C5",
        "Multi-thread elapsed time is more than the CPU time spread over the threads (note 2: 'up to')",
        "baseline real >= 1.5 x (sys + user) / N at 38, 64 and 90 GB with 37 and 55 threads",
        "real / ((sys + user) / N)",
        _pick([(gb, n) for gb in (38, 64, 90) for n in (37, 55)]),
        _cell_only(serial_share),
        lambda v: v >= 1.5,
    ),
    Claim(
        "C6",
        "Where the hog fits on the threads' own nodes, no material difference",
        "(38,37) and (38,55): |sys change| <= 5%",
        "sys better %",
        _pick([(38, 37), (38, 55)]),
        _cell_only(sys_better),
        lambda v: abs(v) <= 5.0,
    ),
)


def _figures(claim: Claim, cells: Sequence[Cell]) -> tuple[list[dict[str, Any]], bool]:
    rows = []
    held = True
    for c in claim.cells(cells):
        v = claim.value(c, cells)
        ok = claim.ok(v)
        held = held and ok
        rows.append({"size_gb": c.size_gb, "threads": c.threads, "value": round(v, 2), "ok": ok})
    return rows, held


def check_cells(keys: Sequence[tuple[Any, int]], where: str) -> None:
    """Fail before any run when the experiment lacks a cell some claim needs."""
    zero = Times(1.0, 1.0, 1.0)
    dummies = [Cell(gb, n, zero, zero) for gb, n in keys]
    for claim in CLAIMS:
        try:
            claim.cells(dummies)
        except MmtwinError as exc:
            raise MmtwinError(f"{where}: matrix: {exc.message} ({claim.id})") from None


def evaluate(simulated: Sequence[Cell], published: Sequence[Cell] = PUBLISHED) -> list[dict[str, Any]]:
    """Every claim with its published and simulated figures; ``held`` refers to the simulation."""
    out = []
    for claim in CLAIMS:
        pub_rows, pub_held = _figures(claim, published)
        sim_rows, sim_held = _figures(claim, simulated)
        out.append(
            {
                "id": claim.id,
                "text": claim.text,
                "rule": claim.rule,
                "figure": claim.figure,
                "published": pub_rows,
                "simulated": sim_rows,
                "held": sim_held,
                "held_published": pub_held,
            }
        )
    return out


# --------------------------------------------------------------------------- running


def cells_from_results(runs: Sequence[experiments.PlannedRun], results: Sequence[dict[str, Any]], base: str, new: str) -> list[Cell]:
    times: dict[tuple[str, Any, int], Times] = {}
    for run, result in zip(runs, results):
        t = result["times"]
        times[(run.kernel, run.size_gb, run.threads)] = Times(
            float(t["sys_s"]), float(t["user_s"]), float(t["elapsed_s"])
        )
    cells = []
    for run in runs:
        if run.kernel != base:
            continue
        key = (run.size_gb, run.threads)
        cells.append(Cell(run.size_gb, run.threads, times[(base, *key)], times[(new, *key)]))
    return cells


def _format_claims(claims: Sequence[dict[str, Any]]) -> str:
    return format_claims(
        claims,
        figure=lambda r: f"({r['size_gb']},{r['threads']})",
        sep=", ",
        rule_extra=lambda cl: f"; figure per cell: {cl['figure']}",
    )


def _cell_json(c: Cell) -> dict[str, Any]:
    def t(x: Times) -> dict[str, float]:
        return {"sys": x.sys, "user": x.user, "real": x.real}

    return {"size_gb": c.size_gb, "threads": c.threads, "base": t(c.base), "new": t(c.new)}


def mean_cells(per_iteration: Sequence[Sequence[Cell]]) -> list[Cell]:
    """Each cell's Amean over the iterations (every iteration has the same cells, in order)."""
    out = []
    for same in zip(*per_iteration):
        def t(kernel: str) -> Times:
            ts = [getattr(c, kernel) for c in same]
            return Times(stat_amean([x.sys for x in ts]), stat_amean([x.user for x in ts]), stat_amean([x.real for x in ts]))

        out.append(Cell(same[0].size_gb, same[0].threads, t("base"), t("new")))
    return out


def spread_rows(per_iteration: Sequence[Sequence[Cell]]) -> list[dict[str, Any]]:
    """Per cell and kernel, the population stddev of sys, user and real over the iterations."""
    rows = []
    for same in zip(*per_iteration):
        row: dict[str, Any] = {"size_gb": same[0].size_gb, "threads": same[0].threads}
        for kernel in ("base", "new"):
            ts = [getattr(c, kernel) for c in same]
            row[kernel] = {col: round(stat_stddev([getattr(x, col) for x in ts]), 4) for col in ("sys", "user", "real")}
        rows.append(row)
    return rows


def format_spread(rows: Sequence[dict[str, Any]], base: str, new: str, decimals: int) -> str:
    w = 8
    lines = [
        f"{'':>13}{base:>{2 * w}}  {new:>{2 * w}}",
        f"{'GBs':>4} {'N':>4}   " + "".join(f"{h:>{w}}" for h in ("sys", "real")) + "  "
        + "".join(f"{h:>{w}}" for h in ("sys", "real")),
    ]
    for r in rows:
        cols = [r["base"]["sys"], r["base"]["real"], r["new"]["sys"], r["new"]["real"]]
        f = [f"{v:>{w}.{decimals + 1}f}" for v in cols]
        lines.append(f"{r['size_gb']:>4} {r['threads']:>4}   {f[0]}{f[1]}  {f[2]}{f[3]}")
    return "\n".join(lines) + "\n"


def run(options: Options) -> Outcome:
    loaded = experiments.load(options.experiment or EXPERIMENT)
    exp = loaded.experiment
    if len(loaded.kernels) != 2:
        raise MmtwinError(
            f"{loaded.where}: kernels: {len(loaded.kernels)} listed; this reproduction compares exactly two "
            "(the baseline first, then the kernel with the zonelist cache)"
        )
    base, new = (k.name for k in loaded.kernels)
    planned = experiments.plan(loaded, scale=options.scale, check=options.check)
    check_cells([(p.size_gb, p.threads) for p in planned if p.kernel == base], loaded.where)
    n_its = its_mod.check_iterations(options.iterations)
    started = time.perf_counter()
    label = f"reproduce {exp.name}"
    if n_its == 1:
        results = engine.run_many([p.spec for p in planned], options.jobs, label=label)
        per_iteration = [cells_from_results(planned, results, base, new)]
        every = results
        its: list[its_mod.Iterated] = []
    else:
        its = its_mod.run_iterations([p.spec for p in planned], n_its, options.jobs, label=label)
        per_iteration = [cells_from_results(planned, [it.results[i] for it in its], base, new) for i in range(n_its)]
        results = [it.first for it in its]
        every = [r for it in its for r in it.results]
    perf = engine.perf_line(every, time.perf_counter() - started)
    cells = per_iteration[0] if n_its == 1 else mean_cells(per_iteration)
    claims = evaluate(cells)
    if n_its > 1:
        add_iteration_counts(claims, [evaluate(cs) for cs in per_iteration])
    oom_runs = [
        f"{p.kernel} ({p.size_gb} GB, {p.threads} threads)" for p, r in zip(planned, results) if r.get("sim", {}).get("oom")
    ]
    for p, it in zip(planned, its):
        oom_runs += [f"{p.kernel} ({p.size_gb} GB, {p.threads} threads), seed {s}"
                     for s, r in list(zip(it.seeds, it.results))[1:] if r.get("sim", {}).get("oom")]
    held = all(cl["held"] for cl in claims)
    scale = float(options.scale)
    errors = cell_errors(PUBLISHED, cells)
    data = {
        "reproduction": EXPERIMENT,
        "experiment": exp.name,
        "seed_document": exp.seed_document,
        "machine": loaded.machine.name,
        "kernels": [base, new],
        "seed": exp.seed,
        "scale": scale,
        "cells": [_cell_json(c) for c in cells],
        "published": [_cell_json(c) for c in PUBLISHED],
        "claims": claims,
        "cell_errors": errors,
        # median |error| in percent per column: "base" is the fitted kernel, "new" predicted
        "median_error_pct": median_errors(errors),
        "held": held,
        "oom_runs": oom_runs,
    }
    identical = n_its > 1 and all(it.identical for it in its)
    if n_its > 1:
        data["iterations"] = {
            "n": n_its,
            "seeds": its[0].seeds,
            "identical": identical,
            "cells": [[_cell_json(c) for c in cs] for cs in per_iteration],
            "stddev": spread_rows(per_iteration),
        }
    if options.plot_dir is not None:
        from mmtwin.reports import plots

        options.plot_dir.mkdir(parents=True, exist_ok=True)
        plots.plot_seed_table(cells, options.plot_dir / f"{exp.name}-sys.png", base, new, published=PUBLISHED,
                              same_scale=scale == 1)
    if options.json:
        return Outcome(json.dumps(data, indent=2, sort_keys=True) + "\n", held, data, perf)
    decimals = 0 if options.scale == 1 else 2
    amean = "" if n_its == 1 else f", Amean of {n_its} iterations"
    parts = [
        f"{exp.name}: {exp.description}",
        f"seed document {exp.seed_document or SEED_DOCUMENT}; machine {loaded.machine.name}; "
        f"kernels {base} (baseline), {new}; seed {exp.seed}; scale {scale:g}; {len(planned) * n_its} runs",
        "",
        f"Simulated (seconds{amean})",
        format_seed_table(cells, base, new, decimals),
    ]
    if n_its > 1:
        parts.append(its_mod.seeds_line(its[0].seeds, exp.seed))
        if identical:
            parts.append(its_mod.IDENTICAL_LINE + "\n")
        else:
            parts += [f"Spread over the {n_its} iterations (Stddev, seconds)",
                      format_spread(data["iterations"]["stddev"], base, short_name(new, base), decimals)]
    parts += [
        f"Published (seed {SEED_DOCUMENT[:3]}) beside simulated{amean}"
        + ("" if options.scale == 1 else f" (simulated at scale {scale:g}: absolute times are not comparable, percentages are)"),
        format_beside(PUBLISHED, cells, base, new, decimals),
        *(
            ["Cell errors", format_errors(errors, base, new)]
            if options.scale == 1
            else ["Cell errors: at full scale only (absolute times scale with --scale)\n"]
        ),
        "Claims" + ("" if n_its == 1 else f" (judged on the Amean of {n_its} iterations)"),
        _format_claims(claims),
    ]
    if oom_runs:
        parts.append(f"warning: {len(oom_runs)} run(s) ended in OOM: {', '.join(oom_runs)}\n")
    return Outcome("\n".join(parts), held, data, perf)


REPRODUCTION = Reproduction(
    name=EXPERIMENT,
    description="Seed 003: memory hog on the 28-node Altix, 2.6.18-mm3 with and without the zonelist cache",
    experiment=EXPERIMENT,
    run=run,
    iterations=True,
)
