"""Reproduce seed 000: Mel Gorman's "mm: page allocator: initialise ZLC for
first zone eligible for zone_reclaim" (commit cd38b115d5ad, July 2011) and
"reconsider zones for allocation after direct reclaim" (76d3fbf8fbf6).

The mail ran three workloads bound to node 0's CPUs of a 24-thread 2-node
x86_64 box with 3.0-rc6 vanilla, zlcfirst (patch 1) and zlcreconsider
(patches 1+2), and printed MMTests' 2011 report for each: FS-Mark, LARGE DD
and a streaming mapped writer, each with the duration and vmstat blocks.
The ``PUBLISHED_*`` tables below are those figures, transcribed. The claims
are the mail's conclusions made testable; each is evaluated on the simulated
figures (and, for reference, on the published ones), never on the inputs.
"""

from __future__ import annotations

from fractions import Fraction

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mmtwin import engine
from mmtwin import experiment as experiments
from mmtwin.errors import MmtwinError
from mmtwin.reports import mmtests2011 as mt
from mmtwin.reports.mmtests2011 import Column
from mmtwin.reproduce import Options, Outcome, Reproduction, format_claims

EXPERIMENT = "zlcfirst"
SEED_DOCUMENT = "000_aa33612caaf20dab.txt"
KINDS = ("fsmark", "largedd", "mmapstream")
PUBLISHED_KERNELS = ("3.0-rc6-vanilla", "3.0-rc6-zlcfirst", "3.0-rc6-zlcreconsider")
PUBLISHED_FSMARK_COMMAND = (
    "./fs_mark  -d  /tmp/fsmark-10813  -D  100  -N  5000  -n  208  -L  35  -t  24  -S0  -s  524288"
)

# Benchmark tables: row -> (vanilla, zlcfirst, zlcreconsider), as printed.
PUBLISHED_BENCH: dict[str, dict[str, tuple[float, float, float]]] = {
    "fsmark": {
        "Files/s min": (54.90, 49.80, 49.10),
        "Files/s mean": (100.11, 135.17, 146.93),
        "Files/s stddev": (57.51, 138.97, 158.69),
        "Files/s max": (361.10, 834.40, 802.40),
        "Overhead min": (76704.00, 76501.00, 77784.00),
        "Overhead mean": (1485356.51, 1035797.83, 1594680.26),
        "Overhead stddev": (1848122.53, 881489.88, 1772354.90),
        "Overhead max": (7989060.00, 3369118.00, 10135324.00),
    },
    "largedd": {
        "download tar": (59, 59, 55),
        "dd source files": (527, 296, 320),
        "delete source": (36, 19, 20),
    },
    "mmapstream": {},
}

# "MMTests Statistics: duration", as printed.
PUBLISHED_DURATION: dict[str, dict[str, tuple[str, str, str]]] = {
    "fsmark": {
        "User/Sys Time Running Test (seconds)": ("501.49", "493.91", "499.93"),
        "Total Elapsed Time (seconds)": ("2451.57", "2257.48", "2215.92"),
    },
    "largedd": {
        "User/Sys Time Running Test (seconds)": ("125.03", "118.98", "122.01"),
        "Total Elapsed Time (seconds)": ("624.56", "375.02", "398.06"),
    },
    "mmapstream": {
        "User/Sys Time Running Test (seconds)": ("124.47", "111.67", "112.64"),
        "Total Elapsed Time (seconds)": ("2138.14", "1816.30", "1867.56"),
    },
}

# "MMTests Statistics: vmstat", as printed.
PUBLISHED_VMSTAT: dict[str, dict[str, tuple[str, str, str]]] = {
    "fsmark": {
        "Page Ins": ("46268", "63840", "66008"),
        "Page Outs": ("90821596", "90671128", "88043732"),
        "Swap Ins": ("0", "0", "0"),
        "Swap Outs": ("0", "0", "0"),
        "Direct pages scanned": ("13091697", "8966863", "8971790"),
        "Kswapd pages scanned": ("0", "1830011", "1831116"),
        "Kswapd pages reclaimed": ("0", "1829068", "1829930"),
        "Direct pages reclaimed": ("13037777", "8956828", "8648314"),
        "Kswapd efficiency": ("100%", "99%", "99%"),
        "Kswapd velocity": ("0.000", "810.643", "826.346"),
        "Direct efficiency": ("99%", "99%", "96%"),
        "Direct velocity": ("5340.128", "3972.068", "4048.788"),
        "Percentage direct scans": ("100%", "83%", "83%"),
        "Page writes by reclaim": ("0", "3", "0"),
        "Slabs scanned": ("796672", "720640", "720256"),
        "Direct inode steals": ("7422667", "7160012", "7088638"),
        "Kswapd inode steals": ("0", "1736840", "2021238"),
    },
    "largedd": {
        "Page Ins": ("3594216", "439368", "407032"),
        "Page Outs": ("23380832", "23380488", "23377444"),
        "Swap Ins": ("0", "0", "0"),
        "Swap Outs": ("0", "436", "287"),
        "Direct pages scanned": ("17482342", "69315973", "82864918"),
        "Kswapd pages scanned": ("0", "519123", "575425"),
        "Kswapd pages reclaimed": ("0", "466501", "522487"),
        "Direct pages reclaimed": ("5858054", "2732949", "2712547"),
        "Kswapd efficiency": ("100%", "89%", "90%"),
        "Kswapd velocity": ("0.000", "1384.254", "1445.574"),
        "Direct efficiency": ("33%", "3%", "3%"),
        "Direct velocity": ("27991.453", "184832.737", "208171.929"),
        "Percentage direct scans": ("100%", "99%", "99%"),
        "Page writes by reclaim": ("0", "5082", "13917"),
        "Slabs scanned": ("17280", "29952", "35328"),
        "Direct inode steals": ("115257", "1431122", "332201"),
        "Kswapd inode steals": ("0", "0", "979532"),
    },
    "mmapstream": {
        "Page Ins": ("90760", "89124", "89516"),
        "Page Outs": ("121028340", "120199524", "120736696"),
        "Swap Ins": ("0", "86", "55"),
        "Swap Outs": ("0", "0", "0"),
        "Direct pages scanned": ("114989363", "96461439", "96330619"),
        "Kswapd pages scanned": ("56430948", "56965763", "57075875"),
        "Kswapd pages reclaimed": ("27743219", "27752044", "27766606"),
        "Direct pages reclaimed": ("49777", "46884", "36655"),
        "Kswapd efficiency": ("49%", "48%", "48%"),
        "Kswapd velocity": ("26392.541", "31363.631", "30561.736"),
        "Direct efficiency": ("0%", "0%", "0%"),
        "Direct velocity": ("53780.091", "53108.759", "51581.004"),
        "Percentage direct scans": ("67%", "62%", "62%"),
        "Page writes by reclaim": ("385", "122", "1513"),
        "Slabs scanned": ("43008", "39040", "42112"),
        "Direct inode steals": ("0", "10", "8"),
        "Kswapd inode steals": ("733", "534", "477"),
    },
}


def published_columns(kind: str) -> list[Column]:
    """The seed's figures for one workload, one column per kernel (vanilla first)."""
    return [
        Column(
            name,
            {row: float(values[i]) for row, values in PUBLISHED_BENCH[kind].items()},
            {row: values[i] for row, values in PUBLISHED_DURATION[kind].items()},
            {row: values[i] for row, values in PUBLISHED_VMSTAT[kind].items()},
        )
        for i, name in enumerate(PUBLISHED_KERNELS)
    ]


PUBLISHED: dict[str, list[Column]] = {kind: published_columns(kind) for kind in KINDS}


# --------------------------------------------------------------------------- claims

ELAPSED = "Total Elapsed Time (seconds)"


def rise(row: str) -> Callable[[Column, Column], float]:
    """Percent by which ``row`` is higher than the baseline's."""
    return lambda base, new: (new.number(row) - base.number(row)) * 100.0 / base.number(row) if base.number(row) else 0.0


def fall(row: str) -> Callable[[Column, Column], float]:
    """Percent by which ``row`` is lower than the baseline's."""
    return lambda base, new: (base.number(row) - new.number(row)) * 100.0 / base.number(row) if base.number(row) else 0.0


def kswapd_share(col: Column) -> float:
    """Kswapd pages scanned as a percentage of all pages scanned."""
    kswapd, direct = col.number("Kswapd pages scanned"), col.number("Direct pages scanned")
    return kswapd * 100.0 / (kswapd + direct) if kswapd + direct else 0.0


def kswapd_per_direct(col: Column) -> float:
    """Kswapd pages scanned as a percentage of direct pages scanned."""
    direct = col.number("Direct pages scanned")
    return col.number("Kswapd pages scanned") * 100.0 / direct if direct else 0.0


@dataclass(frozen=True)
class Check:
    """One figure of a claim: which kernel, what, its value and whether it passes."""

    kernel: str
    figure: str
    value: float
    ok: bool


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    rule: str
    kind: str  # the workload whose figures it reads
    checks: Callable[[Sequence[Column]], list[Check]]


def each_new(figure: str, value: Callable[[Column, Column], float], ok: Callable[[float], bool]) -> Callable[[Sequence[Column]], list[Check]]:
    """The same check for every kernel after the baseline."""

    def checks(cols: Sequence[Column]) -> list[Check]:
        base = cols[0]
        out = []
        for c in cols[1:]:
            v = value(base, c)
            out.append(Check(c.name, figure, v, ok(v)))
        return out

    return checks


def _c4(cols: Sequence[Column]) -> list[Check]:
    base = cols[0]
    v = kswapd_per_direct(base)
    out = [Check(base.name, "kswapd scanned % of direct", v, v < 1.0)]
    for c in cols[1:]:
        s = kswapd_share(c)
        out.append(Check(c.name, "kswapd % of all scanning", s, s > 5.0))
    return out


def _both(*parts: Callable[[Sequence[Column]], list[Check]]) -> Callable[[Sequence[Column]], list[Check]]:
    return lambda cols: [check for part in parts for check in part(cols)]


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "C1",
        "fs_mark creates more files per second with zlcfirst and with zlcreconsider",
        "FS-Mark 'Files/s mean' at least 8% above vanilla's (a quarter of the smaller published rise, 35%)",
        "fsmark",
        each_new("Files/s mean rise %", rise("Files/s mean"), lambda v: v >= 8.0),
    ),
    Claim(
        "C2",
        "fs_mark completes faster",
        "FS-Mark 'Total Elapsed Time' at least 2% below vanilla's (a quarter of the smaller published fall, 7.9%)",
        "fsmark",
        each_new("elapsed fall %", fall(ELAPSED), lambda v: v >= 2.0),
    ),
    Claim(
        "C3",
        "zone_reclaim scans fewer pages: direct pages scanned fall by about a third under fs_mark",
        "FS-Mark 'Direct pages scanned' 15% to 50% below vanilla's",
        "fsmark",
        each_new("direct scanned fall %", fall("Direct pages scanned"), lambda v: 15.0 <= v <= 50.0),
    ),
    Claim(
        "C4",
        "kswapd is used for more work under fs_mark: from almost none to a real share",
        "vanilla: kswapd scanned < 1% of direct scanned; patched: kswapd > 5% of all pages scanned",
        "fsmark",
        _c4,
    ),
    Claim(
        "C5",
        "LARGE DD: copying is much faster and far less is read back",
        "'dd source files' at least 20% and 'Page Ins' at least 50% below vanilla's",
        "largedd",
        _both(
            each_new("dd source files fall %", fall("dd source files"), lambda v: v >= 20.0),
            each_new("Page Ins fall %", fall("Page Ins"), lambda v: v >= 50.0),
        ),
    ),
    Claim(
        "C6",
        "The streaming mapped writer completes faster",
        "Streaming Mapped Writer 'Total Elapsed Time' at least 3% below vanilla's (a quarter of the smaller published fall, 12.7%)",
        "mmapstream",
        each_new("elapsed fall %", fall(ELAPSED), lambda v: v >= 3.0),
    ),
)


def _evaluate(claim: Claim, columns: dict[str, list[Column]]) -> tuple[list[dict[str, Any]], bool]:
    rows = [
        {"kernel": c.kernel, "figure": c.figure, "value": round(c.value, 2), "ok": c.ok}
        for c in claim.checks(columns[claim.kind])
    ]
    return rows, all(r["ok"] for r in rows)


def evaluate(simulated: dict[str, list[Column]], published: dict[str, list[Column]] = PUBLISHED) -> list[dict[str, Any]]:
    """Every claim with its published and simulated figures; ``held`` refers to the simulation."""
    out = []
    for claim in CLAIMS:
        pub_rows, pub_held = _evaluate(claim, published)
        sim_rows, sim_held = _evaluate(claim, simulated)
        out.append(
            {
                "id": claim.id,
                "text": claim.text,
                "rule": claim.rule,
                "workload": claim.kind,
                "published": pub_rows,
                "simulated": sim_rows,
                "held": sim_held,
                "held_published": pub_held,
            }
        )
    return out


# --------------------------------------------------------------------------- the experiment


def check_experiment(loaded: experiments.LoadedExperiment) -> dict[str, str]:
    """Fail before any run unless the experiment has three kernels and one run of each kind; kind -> run name."""
    exp = loaded.experiment
    if exp.runs is None:
        raise MmtwinError(f"{loaded.where}: runs: missing; this reproduction needs [[runs]] of kinds {', '.join(KINDS)}")
    if len(loaded.kernels) != len(PUBLISHED_KERNELS):
        raise MmtwinError(
            f"{loaded.where}: kernels: {len(loaded.kernels)} listed; this reproduction compares exactly "
            f"{len(PUBLISHED_KERNELS)} (the baseline first, as the seed's {', '.join(PUBLISHED_KERNELS)})"
        )
    by_kind: dict[str, str] = {}
    for run in exp.runs:
        kind = run.workload.kind
        if kind in by_kind:
            raise MmtwinError(f"{loaded.where}: runs: {by_kind[kind]!r} and {run.name!r} are both {kind}; the claims need one of each")
        by_kind[kind] = run.name
    missing = [k for k in KINDS if k not in by_kind]
    if missing:
        raise MmtwinError(f"{loaded.where}: runs: no {missing[0]} run, which the claims need ({', '.join(KINDS)} one each)")
    return by_kind


def simulated_columns(
    planned: Sequence[experiments.PlannedRun], results: Sequence[dict[str, Any]], runs_by_kind: dict[str, str], kernels: Sequence[str]
) -> dict[str, list[Column]]:
    by_key = {(p.kernel, p.run): r for p, r in zip(planned, results)}
    return {
        kind: [mt.column_from_result(k, kind, by_key[(k, runs_by_kind[kind])]) for k in kernels]
        for kind in KINDS
    }


def _cell_texts(kind: str, col: Column) -> list[str]:
    bench = [f"{col.bench[r]:.2f}" if kind == "fsmark" else f"{int(col.bench[r])}" for r in col.bench]
    return bench + [col.duration[r] for r in mt.DURATION_ROWS] + [col.vmstat[r] for r in mt.VMSTAT_ROWS]


def format_beside(kind: str, published: Sequence[Column], simulated: Sequence[Column]) -> str:
    """Every row of one workload's report, each cell ``published/simulated``."""
    rows = [*PUBLISHED_BENCH[kind], *mt.DURATION_ROWS, *mt.VMSTAT_ROWS]
    labels = [r.replace("Files/s ", "Files/s  ") for r in rows]
    cells = [
        [f"{p}/{s}" for p, s in zip(_cell_texts(kind, pub), _cell_texts(kind, sim))]
        for pub, sim in zip(published, simulated)
    ]
    widths = [max(len(sim.name), *(len(c) for c in col)) + 2 for sim, col in zip(simulated, cells)]
    lines = [mt.TITLES[kind], " " * 40 + "".join(f"{s.name:>{w}}" for s, w in zip(simulated, widths))]
    for i, label in enumerate(labels):
        lines.append(f"{label:<40}" + "".join(f"{col[i]:>{w}}" for col, w in zip(cells, widths)))
    return "\n".join(lines) + "\n"


def _format_claims(claims: Sequence[dict[str, Any]]) -> str:
    return format_claims(claims, figure=lambda r: f"{r['kernel']} {r['figure']}", sep="; ")


def _column_json(c: Column) -> dict[str, Any]:
    return {"kernel": c.name, "bench": c.bench, "duration": c.duration, "vmstat": c.vmstat}


def run(options: Options) -> Outcome:
    loaded = experiments.load(options.experiment or EXPERIMENT)
    exp = loaded.experiment
    runs_by_kind = check_experiment(loaded)
    kernels = [k.name for k in loaded.kernels]
    planned = experiments.plan(loaded, scale=options.scale, check=options.check)
    started = time.perf_counter()
    results = engine.run_many([p.spec for p in planned], options.jobs, label=f"reproduce {exp.name}")
    perf = engine.perf_line(results, time.perf_counter() - started)
    simulated = simulated_columns(planned, results, runs_by_kind, kernels)
    claims = evaluate(simulated)
    held = all(cl["held"] for cl in claims)
    oom_runs = [f"{p.kernel} ({p.run})" for p, r in zip(planned, results) if r.get("sim", {}).get("oom")]
    scale = float(options.scale)
    data = {
        "reproduction": EXPERIMENT,
        "experiment": exp.name,
        "seed_document": exp.seed_document,
        "machine": loaded.machine.name,
        "kernels": kernels,
        "seed": exp.seed,
        "scale": scale,
        "runs": dict(runs_by_kind),
        "workloads": {
            kind: {
                "simulated": [_column_json(c) for c in simulated[kind]],
                "published": [_column_json(c) for c in PUBLISHED[kind]],
            }
            for kind in KINDS
        },
        "claims": claims,
        "held": held,
        "oom_runs": oom_runs,
    }
    if options.plot_dir is not None:
        from mmtwin.reports import plots

        options.plot_dir.mkdir(parents=True, exist_ok=True)
        for p, r in zip(planned, results):
            plots.plot_zone_timeline(r, options.plot_dir / f"{exp.name}-{p.run}-{p.kernel}-zones.png",
                                     title=f"{p.run}, {p.kernel}")
    if options.json:
        return Outcome(json.dumps(data, indent=2, sort_keys=True) + "\n", held, data, perf)
    spec_of = {(p.kernel, p.run): p.spec for p in planned}
    parts = [
        f"{exp.name}: {exp.description}",
        f"seed document {exp.seed_document or SEED_DOCUMENT}; machine {loaded.machine.name}; "
        f"kernels {kernels[0]} (baseline), {', '.join(kernels[1:])}; seed {exp.seed}; scale {scale:g}; {len(planned)} runs",
        "",
        "Simulated (MMTests 2011 report)",
    ]
    for kind in KINDS:
        command = None
        if kind == "fsmark":
            command = mt.fsmark_command(spec_of[(kernels[0], runs_by_kind[kind])]["workload"])
        parts.append(mt.report(kind, simulated[kind], command))
    parts.append(
        f"Published (seed {SEED_DOCUMENT[:3]}) beside simulated: published/simulated"
        + ("" if options.scale == 1 else f" (simulated at scale {scale:g}: absolute figures are not comparable)")
    )
    parts += [format_beside(kind, PUBLISHED[kind], simulated[kind]) for kind in KINDS]
    parts += ["Claims", _format_claims(claims)]
    if oom_runs:
        parts.append(f"warning: {len(oom_runs)} run(s) ended in OOM: {', '.join(oom_runs)}\n")
    return Outcome("\n".join(parts), held, data, perf)


REPRODUCTION = Reproduction(
    name=EXPERIMENT,
    description="Seed 000: fs_mark, LARGE DD, streaming mapped writer on the 2-node 24-CPU box, 3.0-rc6 vs zlcfirst vs zlcreconsider",
    experiment=EXPERIMENT,
    run=run,
    # Published scale: all nine runs take well under a minute on two cores.
    default_scale=Fraction(1),
)
