"""``mmtwin report RESULTS... --html DIR``: one self-contained HTML page for saved results.

The page holds the MMTests text of each results tree, tables (runs, the
MMTests 2011 rows with one column per run, a reproduction's claims) and
matplotlib figures embedded as ``data:image/png`` URIs (the same PNGs are
also written beside ``index.html``). Figures are drawn per benchmark
(workload kind), one line or bar per run, so a comparison shows each kernel
on the same axes:

* free pages per node over time (a panel per node, or a heat map per run
  when the machine has more than ``plots.SMALL_MULTIPLES_MAX`` nodes);
* dirty and writeback pages over time, when the timeline has them;
* block I/O over time (pgpgin and pgpgout in MiB/s), kswapd and direct
  reclaim scanning and reclaiming over time, and the other sampled event
  counters as rates between timeline samples (``TIMELINE_COUNTERS``);
* latency CDFs of direct reclaim stalls, congestion_wait and
  wait_iff_congested, from the engine's log2 histograms (``ftrace.latency``),
  with a table of counts, means and quantiles;
* whole-run /proc/vmstat rates (events per simulated second);
* kswapd and direct reclaim activity (pages scanned and reclaimed, writes by
  reclaim, kswapd CPU time and wakeups);
* a reproduction's published and simulated figures on one axis per claim.

A small inline script records, on the page's ``load`` event, how many images
decoded (``data-images-decoded`` / ``data-images-total`` on ``<body>``), so a
headless browser can check the page (tests/test_report_html.py).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from mmtwin.errors import MmtwinError
from mmtwin.results import TIMELINE_COUNTERS, Run, Saved, make_writable_dir

_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 2px 6px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.8em; }
figure { margin: 0.5em 0 1.5em 0; } img { max-width: 100%; }
figcaption { font-size: 0.85em; color: #555; }
.note { font-size: 0.85em; color: #555; }
"""

_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) { ok++; }
  }
  document.body.setAttribute('data-images-total', String(imgs.length));
  document.body.setAttribute('data-images-decoded', String(ok));
  document.body.setAttribute('data-tables', String(document.getElementsByTagName('table').length));
});
"""


def check_html_dir(path: Optional[Path], option: str = "--html") -> Optional[Path]:
    """Create --html's directory before any work: one line and exit 2 when it cannot be written."""
    if path is None:
        return None
    return make_writable_dir(Path(path), option, "give a directory for index.html and its PNGs")


# --------------------------------------------------------------------------- data from runs


def free_per_node(run: Run) -> tuple[list[float], dict[int, list[int]]]:
    """(t_s, {node: free pages of its zones}) from a run's timeline."""
    tl = run.result.get("timeline") or {}
    t = [float(x) for x in tl.get("t_s", [])]
    zones = run.result.get("zones", [])
    per: dict[int, list[int]] = {}
    for i, z in enumerate(zones):
        if int(z.get("present", 0)) <= 0:
            continue
        column = [int(row[i]) for row in tl.get("free_pages", [])][: len(t)]
        node = int(z["node"])
        per[node] = [a + b for a, b in zip(per[node], column)] if node in per else column
    return t, per


def counter_rates(run: Run) -> dict[str, tuple[list[float], list[float]]]:
    """The event counters the run's timeline samples (``TIMELINE_COUNTERS``, in that order; results
    written before the engine sampled them have none) as per-second rates between samples,
    each rate at the later sample's time."""
    tl = run.result.get("timeline") or {}
    t = [float(x) for x in tl.get("t_s", [])]
    out = {}
    for key in TIMELINE_COUNTERS:
        ys = list(tl.get(key) or [])[: len(t)]
        if not ys or isinstance(ys[0], list):
            continue
        xs, rates = [], []
        for i in range(1, len(ys)):
            dt = t[i] - t[i - 1]
            if dt > 0:
                xs.append(t[i])
                rates.append((float(ys[i]) - float(ys[i - 1])) / dt)
        out[key] = (xs, rates)
    return out


# The panels of the figures of sampled counters: (counter, panel title, y label, factor to the y unit).
BLOCK_IO_PANELS = (("pgpgin", "pgpgin: read from block devices", "MiB/s", 1 / 1024),
                   ("pgpgout", "pgpgout: written to block devices", "MiB/s", 1 / 1024))
SCAN_PANELS = (("pgscan_kswapd", "pgscan_kswapd: pages scanned by kswapd", "pages/s", 1.0),
               ("pgscan_direct", "pgscan_direct: pages scanned by direct reclaim", "pages/s", 1.0),
               ("pgsteal_kswapd", "pgsteal_kswapd: pages reclaimed by kswapd", "pages/s", 1.0),
               ("pgsteal_direct", "pgsteal_direct: pages reclaimed by direct reclaim", "pages/s", 1.0))
EVENT_PANELS = (("allocstall", "allocstall: direct reclaim entered", "per s", 1.0),
                ("kswapd_wakeups", "kswapd wakeups", "per s", 1.0),
                ("pgmajfault", "pgmajfault: major faults", "per s", 1.0),
                ("pswpin", "pswpin: pages swapped in", "pages/s", 1.0),
                ("pswpout", "pswpout: pages swapped out", "pages/s", 1.0),
                ("nr_vmscan_write", "nr_vmscan_write: pages written by reclaim", "pages/s", 1.0))


def rate_panels(rates: Mapping[str, Mapping[str, tuple[list[float], list[float]]]],
                spec: Sequence[tuple[str, str, str, float]]) -> tuple[list[tuple[str, str, list[Any]]], list[str]]:
    """(panels for plots.plot_panels, counters left out): a panel per counter of ``spec`` that some
    run sampled and that rose in at least one run, a line per run (``rates``: label -> counter_rates)."""
    panels, idle = [], []
    for key, title, unit, scale in spec:
        series = [(lab, xs, [y * scale for y in ys]) for lab, r in rates.items() if key in r for xs, ys in [r[key]]]
        if not series:
            continue
        if not any(y for _, _, ys in series for y in ys):
            idle.append(key)
            continue
        panels.append((title, unit, series))
    return panels, idle


LATENCY_KINDS = (("direct_stall", "direct reclaim stalls (mm_vmscan_direct_reclaim_begin to end)"),
                 ("congestion_wait", "congestion_wait sleeps (writeback_congestion_wait)"),
                 ("wait_iff_congested", "wait_iff_congested sleeps (writeback_wait_iff_congested)"))


def latency_hists(run: Run) -> dict[str, tuple[int, int, list[int]]]:
    """The engine's log2 latency histograms of a run (``result.ftrace.latency``, docs/ftrace.md):
    kind -> (count, sum in µs, counts per bin). Empty for kernels without tracepoints and results
    written before the engine kept them."""
    lat = (run.result.get("ftrace") or {}).get("latency") or {}
    out = {}
    for kind, _ in LATENCY_KINDS:
        h = lat.get(kind)
        if h:
            out[kind] = (int(h["count"]), int(h["sum_us"]), [int(x) for x in h["log2_us"]])
    return out


def bin_upper_us(i: int) -> int:
    """The upper bound (exclusive) of log2 bin ``i`` in µs: bin 0 holds 0 µs, bin i holds 2^(i-1) to
    2^i - 1 µs; the last bin (everything from 2^27 µs) is given the bound 2^28."""
    return 1 << i


def latency_cdf(bins: Sequence[int], lo: int, hi: int) -> tuple[list[float], list[float]]:
    """CDF points of a log2 histogram at the upper bounds of bins ``lo``..``hi`` (ms, fraction of
    durations below the bound); the fraction is exact at each bound."""
    total = sum(bins)
    xs, ys, acc = [], [], 0
    for i, n in enumerate(bins):
        acc += n
        if lo <= i <= hi:
            xs.append(bin_upper_us(i) / 1000.0)
            ys.append(acc / total if total else 0.0)
    return xs, ys


def latency_quantile_us(bins: Sequence[int], q: float) -> int:
    """The upper bound (µs) of the bin holding quantile ``q``: at least that fraction of durations lie below."""
    total = sum(bins)
    acc = 0
    for i, n in enumerate(bins):
        acc += n
        if total and acc >= q * total:
            return bin_upper_us(i)
    return 0


VMSTAT_RATE_ROWS = ("Page Ins", "Page Outs", "Kswapd pages scanned", "Direct pages scanned",
                    "Kswapd pages reclaimed", "Direct pages reclaimed", "Minor faults", "Pages allocated")


def vmstat_rates(run: Run) -> list[float]:
    """Whole-run rates per simulated second, in VMSTAT_RATE_ROWS order (MMTests' sums of the deltas)."""
    from mmtwin.reports import mmtests2011 as mt

    deltas = mt.vmstat_deltas(run.result)
    s = mt.summarise_vmstat(deltas)
    elapsed = float(run.result["times"]["elapsed_s"])
    minor = int(deltas.get("pgfault", 0)) - int(deltas.get("pgmajfault", 0))
    alloc = sum(int(v) for k, v in deltas.items() if k.startswith("pgalloc_"))
    values = (s.page_ins, s.page_outs, s.kswapd_scanned, s.direct_scanned, s.kswapd_reclaimed, s.direct_reclaimed, minor, alloc)
    return [v / elapsed if elapsed > 0 else 0.0 for v in values]


RECLAIM_PAGE_ROWS = ("Kswapd scanned", "Kswapd reclaimed", "Direct scanned", "Direct reclaimed", "Writes by reclaim")
RECLAIM_TASK_ROWS = ("kswapd sys s", "kswapd wakeups / 100", "flusher sys s")


def reclaim_activity(run: Run) -> tuple[list[float], list[float]]:
    """(pages: RECLAIM_PAGE_ROWS, tasks: RECLAIM_TASK_ROWS) of one run."""
    from mmtwin.reports import mmtests2011 as mt

    s = mt.summarise_vmstat(mt.vmstat_deltas(run.result))
    tasks = run.result.get("tasks", [])
    ksys = sum(float(t.get("sys_s", 0.0)) for t in tasks if t.get("kind") == "kswapd")
    kwake = sum(int(t.get("wakeups", 0)) for t in tasks if t.get("kind") == "kswapd")
    fsys = sum(float(t.get("sys_s", 0.0)) for t in tasks if t.get("kind") == "flusher")
    pages = [float(x) for x in (s.kswapd_scanned, s.kswapd_reclaimed, s.direct_scanned, s.direct_reclaimed, s.vmscan_write)]
    return pages, [ksys, kwake / 100.0, fsys]


# --------------------------------------------------------------------------- HTML pieces


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> str:
    """A table through pandas (escaped, deterministic)."""
    import pandas as pd

    frame = pd.DataFrame([list(r) for r in rows], columns=list(header))
    body = frame.to_html(index=False, escape=True, border=0, na_rep="")
    return (f"<p class=\"note\">{_esc(caption)}</p>\n" if caption else "") + body + "\n"


def _figure(png: bytes, alt: str, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_esc(alt)}">'
            f"<figcaption>{_esc(caption)}</figcaption></figure>\n")


def _labels(trees: Sequence[Saved]) -> list[list[str]]:
    """A label per run of each tree: its RUN name, prefixed with the tree's directory name when
    the same RUN name appears in two trees."""
    seen: dict[str, int] = {}
    for t in trees:
        for r in t.runs:
            seen[f"{r.name}\0{r.test}"] = seen.get(f"{r.name}\0{r.test}", 0) + 1
    clash = {k for k, n in seen.items() if n > 1}
    return [[f"{t.path.name}:{r.name}" if f"{r.name}\0{r.test}" in clash else r.name for r in t.runs] for t in trees]


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def render(trees: Sequence[Saved], texts: Sequence[str], out_dir: Path) -> Path:
    """Write ``out_dir/index.html`` (and the PNGs) for results trees and their MMTests texts."""
    try:
        return _render(trees, texts, out_dir)
    except OSError as exc:
        raise MmtwinError(f"--html: cannot write {exc.filename or str(out_dir)!r}: {exc.strerror}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise MmtwinError(f"RESULTS: a result file lacks what the HTML report needs ({type(exc).__name__}: {exc}); "
                          "was it edited? Rewrite it with --output-dir") from None


def _render(trees: Sequence[Saved], texts: Sequence[str], out_dir: Path) -> Path:
    from mmtwin import __version__
    from mmtwin.reports import mmtests2011 as mt
    from mmtwin.reports import plots

    out_dir = Path(out_dir)
    labels = _labels(trees)
    parts: list[str] = []
    fig_no = 0

    def figure(pngs: Sequence[bytes], alt: str, caption: str) -> None:
        nonlocal fig_no
        for png in pngs:
            fig_no += 1
            parts.append(_figure(png, alt, f"Figure {fig_no}. {caption}"))

    def png_path(name: str) -> Path:
        return out_dir / f"{fig_no + 1:02d}-{_slug(name)}.png"

    parts.append("<h1>mmtwin report</h1>\n")
    parts.append(f"<p class=\"note\">mmtwin {_esc(__version__)}; results: "
                 + ", ".join(f"<code>{_esc(t.path)}</code>" for t in trees) + "</p>\n")

    # Each tree: what was run, and its MMTests text.
    for t, text, labs in zip(trees, texts, labels):
        parts.append(f"<h2>{_esc(t.path)}: mmtwin {_esc(t.command)}</h2>\n")
        if t.summary_line:
            parts.append(f"<p>{_esc(t.summary_line)}</p>\n")
        if t.runs:
            rows = []
            for lab, r in zip(labs, t.runs):
                tm = r.result["times"]
                rows.append([lab, r.test, r.kernel, r.machine, r.iteration, f"{float(tm['user_s']):.2f}",
                             f"{float(tm['sys_s']):.2f}", f"{float(tm['elapsed_s']):.2f}", int(r.result.get("events", 0)),
                             "yes" if (r.result.get("sim") or {}).get("oom") else "no"])
            parts.append(_table(["RUN", "test", "kernel", "machine", "iteration", "user s", "sys s", "elapsed s",
                                 "page events", "oom"], rows, "Runs (simulated seconds)"))
        for rep in t.reproductions:
            parts.append(f"<h3>reproduction {_esc(rep['name'])}: {'every claim held' if rep['held'] else 'a claim did not hold'}</h3>\n")
            claims = list((rep.get("data") or {}).get("claims", []))
            if claims:
                rows = []
                for cl in claims:
                    fig = lambda rs: "; ".join(f"{r.get('kernel', '')} {r.get('figure', '')} {float(r['value']):.2f}" for r in rs)
                    rows.append([cl.get("id", ""), "HELD" if cl.get("held") else "NOT HELD", cl.get("text", ""),
                                 fig(cl.get("published", [])), fig(cl.get("simulated", []))])
                parts.append(_table(["claim", "verdict", "text", "published", "simulated"], rows))
                figure([plots.plot_published_simulated(claims, f"{rep['name']}: published and simulated",
                                                       png_path(f"{rep['name']}-claims"))],
                       f"{rep['name']} claims", f"{rep['name']}: each claim's published and simulated figures on one axis.")
        parts.append(f"<h3>MMTests text</h3>\n<pre>{_esc(text)}</pre>\n")

    # Per benchmark: every run of every tree (iteration 0), one line or bar per run.
    by_test: dict[str, list[tuple[str, Run]]] = {}
    for t, labs in zip(trees, labels):
        for lab, r in zip(labs, t.runs):
            if r.iteration == 0:
                by_test.setdefault(r.test, []).append((lab, r))
    for test, runs in by_test.items():
        names = [lab for lab, _ in runs]
        parts.append(f"<h2>{_esc(test)}: {len(runs)} run{'s' if len(runs) != 1 else ''}</h2>\n")
        cols = [mt.column_from_result(lab, test, r.result) for lab, r in runs]
        rows_all = [*cols[0].bench, *mt.DURATION_ROWS, *mt.vmstat_rows(cols)]
        rows = []
        for row in rows_all:
            cells = []
            for c in cols:
                v = c.bench.get(row) if row in c.bench else c.duration.get(row, c.vmstat.get(row))
                cells.append("" if v is None else (mt.perl_number(v) if isinstance(v, float) else v))
            rows.append([row, *cells])
        parts.append(_table(["MMTests 2011 row", *names], rows, "Benchmark, duration and vmstat rows (MMTests 2011 formulas)"))

        per_node = [(lab, *free_per_node(r)) for lab, r in runs]
        nodes = sorted({n for _, _, per in per_node for n in per})
        figure(plots.plot_free_per_node(per_node, f"{test}: free pages per node", png_path(f"{test}-free-per-node")),
               f"{test} free pages per node",
               f"{test}: free pages per node over simulated time ({len(nodes)} node{'s' if len(nodes) != 1 else ''}; "
               + ("a panel per node, a line per run" if len(nodes) <= plots.SMALL_MULTIPLES_MAX else "a heat map per run")
               + ").")

        panels = []
        for key, what in (("nr_dirty", "dirty pages"), ("nr_writeback", "pages under writeback")):
            series = [(lab, [float(x) for x in (r.result.get("timeline") or {}).get("t_s", [])],
                       list((r.result.get("timeline") or {}).get(key, []))) for lab, r in runs
                      if key in (r.result.get("timeline") or {})]
            if series:
                panels.append((f"{key} ({what})", "pages", [(a, x[: len(y)], y) for a, x, y in series]))
        if panels:
            figure([plots.plot_panels(panels, f"{test}: dirty and writeback pages", png_path(f"{test}-dirty-writeback"))],
                   f"{test} dirty and writeback pages", f"{test}: nr_dirty and nr_writeback over simulated time, a line per run.")

        rates = {lab: counter_rates(r) for lab, r in runs}
        if any(rates.values()):
            for spec, slug, what, caption in (
                (BLOCK_IO_PANELS, "block-io", "block I/O over time",
                 "pgpgin and pgpgout as MiB per simulated second between timeline samples (page cache, swap "
                 "and filesystem I/O), a line per run."),
                (SCAN_PANELS, "reclaim-over-time", "kswapd and direct reclaim over time",
                 "pages scanned and reclaimed per simulated second by kswapd and by direct reclaim "
                 "(pgscan and pgsteal summed over zones), a line per run."),
                (EVENT_PANELS, "rates-over-time", "vmstat rates over time",
                 "event counters per simulated second between timeline samples, a line per run."),
            ):
                panels, idle = rate_panels(rates, spec)
                left = f" Left out, 0 in every run: {', '.join(idle)}." if idle else ""
                if panels:
                    figure([plots.plot_panels(panels, f"{test}: {what}", png_path(f"{test}-{slug}"))],
                           f"{test} {what}", f"{test}: {caption}{left}")
                else:
                    parts.append(f"<p class=\"note\">{_esc(test)}: {_esc(what)}: every counter stayed 0 in every run "
                                 f"({_esc(', '.join(idle))}).</p>\n")
        else:
            parts.append("<p class=\"note\">These results' timelines sample no event counter (written before the "
                         "engine sampled them), so vmstat rates are shown over the whole run only.</p>\n")

        hists = {lab: latency_hists(r) for lab, r in runs}
        events = any(n for h in hists.values() for n, _, _ in h.values())
        if any(hists.values()):
            rows = []
            for kind, _ in LATENCY_KINDS:
                for lab in names:
                    if kind in hists[lab]:
                        n, us, bins = hists[lab][kind]
                        rows.append([kind, lab, n, f"{us / n:.0f}" if n else "",
                                     *(f"< {latency_quantile_us(bins, q)}" if n else "" for q in (0.5, 0.9, 0.99)),
                                     f"{us / 1e6:.3f}"])
            parts.append(_table(["latency", "RUN", "count", "mean µs", "p50 µs", "p90 µs", "p99 µs", "total s"], rows,
                                "Direct reclaim stalls and congestion waits (quantiles: the upper bound of the log2 "
                                "bin that holds them)"))
            panels = []
            for kind, title in LATENCY_KINDS:
                have = [(lab, h[kind]) for lab, h in hists.items() if kind in h and h[kind][0] > 0]
                if not have:
                    panels.append((title, []))
                    continue
                used = [i for _, (_, _, bins) in have for i, n in enumerate(bins) if n]
                lo, hi = max(0, min(used) - 1), max(used)
                panels.append((title, [(f"{lab} (n={n}{', all 0 µs' if bins[0] == n else ''})",
                                        *latency_cdf(bins, lo, hi)) for lab, (n, _, bins) in have]))
            if events:
                figure([plots.plot_cdfs(panels, f"{test}: latency CDFs", png_path(f"{test}-latency-cdf"))],
                       f"{test} latency CDFs",
                       f"{test}: the fraction of direct reclaim stalls and congestion waits shorter than each duration "
                       "(log x axis; exact at the bounds of the engine's log2 µs bins, a wait that did not sleep counts "
                       "as under 1 µs), a line per run.")
            else:
                parts.append(f"<p class=\"note\">{_esc(test)}: no direct reclaim stall or congestion wait in any run: "
                             "no latency CDFs.</p>\n")
        else:
            parts.append("<p class=\"note\">No latency histograms (kernels without tracepoints, 2.6.18, or results "
                         "written before the engine kept them): no latency CDFs.</p>\n")
        figure([plots.plot_grouped_bars(
            [("events per simulated second over the whole run", VMSTAT_RATE_ROWS,
              {lab: vmstat_rates(r) for lab, r in runs})],
            f"{test}: vmstat rates", png_path(f"{test}-vmstat-rates"))],
            f"{test} vmstat rates", f"{test}: /proc/vmstat deltas divided by the elapsed time, a bar per run.")
        acts = {lab: reclaim_activity(r) for lab, r in runs}
        figure([plots.plot_grouped_bars(
            [("pages (vmstat deltas)", RECLAIM_PAGE_ROWS, {lab: a[0] for lab, a in acts.items()}),
             ("kernel threads", RECLAIM_TASK_ROWS, {lab: a[1] for lab, a in acts.items()})],
            f"{test}: kswapd and direct reclaim", png_path(f"{test}-reclaim"))],
            f"{test} kswapd and direct reclaim activity",
            f"{test}: pages scanned and reclaimed by kswapd and by direct reclaim, writes by reclaim; kswapd and "
            "flusher CPU time and kswapd wakeups, a bar per run.")

    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>mmtwin report</title>\n<style>{_CSS}</style>\n<script>{_SCRIPT}</script>\n</head>\n"
            "<body>\n" + "".join(parts) + "</body>\n</html>\n")
    index = out_dir / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
