"""The two FTrace blocks of MMTests' 2011 reports, as seed 004 prints them:
``FTrace Reclaim Statistics: vmscan`` and ``FTrace Reclaim Statistics:
congestion_wait``, one column per kernel.

In 2011 MMTests piped the ftrace monitor's trace through the kernel's
``Documentation/trace/postprocess/trace-vmscan-postprocess.pl --ignore-pid``
and its own ``subreport/trace-congestion-postprocess.pl --ignore-pid``, and
``subreport/ftrace-vmscan`` and ``subreport/ftrace-congestion`` picked the
summary lines out of their reports (gormanm/mmtests, July 2011). mmtwin's
engine aggregates the same events as it emits them (``result["ftrace"]``,
trace.rs ``ReclaimStats``), with or without a text trace; this module only
lays the figures out. docs/ftrace.md says where each figure comes from.

What the 2011 shell scripts did, kept here:

* every row of the first part is ``%-40s`` then ``%10s `` per kernel (a
  trailing space), each value the text the script printed (``0.08`` for the
  times, ``%-1.2f``);
* ``Kswapd pages reclaimed`` and ``Direct reclaim pages reclaimed`` are not
  the trace's: the script read ``kswapd_steal`` and ``pgsteal_*`` minus
  ``kswapd_steal`` from the vmstat taken around the test;
* ``Total pages scanned``/``reclaimed`` are ``%10d``; the ``%age`` rows are
  ``%9.2f%%`` of what perl printed; pages written add the direct rows and
  the two async kswapd rows (not kswapd's sync rows), file pages written
  the three file rows but kswapd's sync one;
* ``Percentage Time Spent Direct Reclaim`` is stalled x 100 / (user + sys +
  stalled) and ``Percentage Time kswapd Awake`` awake x 100 / elapsed, with
  GNU time's user, system and elapsed seconds of the benchmark;
* the congestion rows are ``%-40s`` then ``%10s `` of the script's figure
  with its spaces removed (``0 ms`` becomes ``0ms``); times are
  ``usec_delayed`` summed and divided by 1000, printed by perl.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mmtwin.errors import MmtwinError
from mmtwin.reports import mmtests2011 as mt

VMSCAN_TITLE = "FTrace Reclaim Statistics: vmscan"
CONGESTION_TITLE = "FTrace Reclaim Statistics: congestion_wait"

# (row label, key of result["ftrace"]["vmscan"]); None: from vmstat, or a time.
VMSCAN_ROWS: tuple[tuple[str, str | None], ...] = (
    ("Direct reclaims", "direct_reclaims"),
    ("Direct reclaim pages scanned", "direct_pages_scanned"),
    ("Direct reclaim pages reclaimed", None),
    ("Direct reclaim write file async I/O", "direct_write_file_async"),
    ("Direct reclaim write anon async I/O", "direct_write_anon_async"),
    ("Direct reclaim write file sync I/O", "direct_write_file_sync"),
    ("Direct reclaim write anon sync I/O", "direct_write_anon_sync"),
    ("Wake kswapd requests", "wake_kswapd_requests"),
    ("Kswapd wakeups", "kswapd_wakeups"),
    ("Kswapd pages scanned", "kswapd_pages_scanned"),
    ("Kswapd pages reclaimed", None),
    ("Kswapd reclaim write file async I/O", "kswapd_write_file_async"),
    ("Kswapd reclaim write anon async I/O", "kswapd_write_anon_async"),
    ("Kswapd reclaim write file sync I/O", "kswapd_write_file_sync"),
    ("Kswapd reclaim write anon sync I/O", "kswapd_write_anon_sync"),
    ("Time stalled direct reclaim (seconds)", "direct_stall_us"),
    ("Time kswapd awake (seconds)", "kswapd_awake_us"),
)
SUMMARY_ROWS = (
    "Total pages scanned",
    "Total pages reclaimed",
    "%age total pages scanned/reclaimed",
    "%age total pages scanned/written",
    "%age  file pages scanned/written",
    "Percentage Time Spent Direct Reclaim",
    "Percentage Time kswapd Awake",
)
# (row label, who, kind, figure); who: result["ftrace"]["congestion_wait"][who].
CONGESTION_ROWS: tuple[tuple[str, str, str, str], ...] = tuple(
    (f"{who_label} {fig_label} {kind_label} waited", who, kind, fig)
    for who_label, who in (("Direct", "direct"), ("KSwapd", "kswapd"))
    for kind_label, kind in (("congest    ", "congest"), ("conditional", "conditional"))
    for fig_label, fig in (("number", "waited"), ("time  ", "us"), ("full  ", "full"))
)

# The MMTests test name of each workload kind: the first word of the header rows.
BENCH_NAMES = {"fsmark": "fsmark", "largedd": "largedd", "mmapstream": "micro", "memhog": "memhog"}

# The eras whose reports are the 2011 shell scripts' (kernels of 2011).
ERAS_2011 = ("3.0", "3.1")

# The text layouts of `mmtwin run --trace-format` (the engine's trace.format).
TRACE_FORMATS = ("kernel", "postprocess-6.1")


def with_trace_format(trace: dict[str, Any] | None, fmt: str | None) -> dict[str, Any] | None:
    """The spec's ``trace`` table with ``--trace-format`` applied (no ``format`` key for the default)."""
    if fmt is None:
        return trace
    if trace is None:
        raise MmtwinError("--trace-format: needs --trace FILE")
    if fmt not in TRACE_FORMATS:
        raise MmtwinError(f"--trace-format: {fmt!r} is not allowed; expected one of: {', '.join(TRACE_FORMATS)}")
    return trace if fmt == "kernel" else {**trace, "format": fmt}


def _ftrace(result: Mapping[str, Any]) -> Mapping[str, Any]:
    ft = result.get("ftrace")
    if not ft:
        era = result.get("era", "?")
        raise MmtwinError(
            f"result of kernel {result.get('kernel', '?')} has no ftrace statistics "
            f"(era {era}: the engine aggregates them only for kernels with tracepoints, 3.0 and later)"
        )
    return ft


def has_reclaim_activity(result: Mapping[str, Any]) -> bool:
    """Whether the run reclaimed, woke kswapd or waited on congestion (by the ftrace figures)."""
    ft = result.get("ftrace")
    if not ft:
        return False
    v = ft["vmscan"]
    keys = ("direct_reclaims", "kswapd_wakeups", "kswapd_rewakeups", "wake_kswapd_requests",
            "direct_pages_scanned", "kswapd_pages_scanned")
    waits = (w[k] for w in ft["congestion_wait"].values() for k in ("congest_waited", "conditional_waited"))
    return any(int(v.get(k, 0)) for k in keys) or any(int(n) for n in waits)


def shows_ftrace(results: Sequence[Mapping[str, Any]]) -> bool:
    """What ``run`` and ``compare`` decide on: every kernel of 2011 (era 3.0/3.1) with ftrace
    statistics, and at least one run with reclaim activity."""
    return (
        bool(results)
        and all(r.get("era") in ERAS_2011 and r.get("ftrace") for r in results)
        and any(has_reclaim_activity(r) for r in results)
    )


def _seconds(us: int) -> str:
    """``printf "%-1.2f"`` of the script's total latency (ms summed, divided by 1000)."""
    return format(int(us) / 1e6, ".2f")


def _pct(value: float) -> str:
    return f"{mt.perl_value(value):9.2f}%"


def vmscan_texts(result: Mapping[str, Any]) -> dict[str, str]:
    """One kernel's first-part rows, each as the script printed it."""
    v = _ftrace(result)["vmscan"]
    s = mt.summarise_vmstat(mt.vmstat_deltas(result))
    out: dict[str, str] = {}
    for label, key in VMSCAN_ROWS:
        if label == "Direct reclaim pages reclaimed":
            out[label] = str(s.direct_reclaimed)
        elif label == "Kswapd pages reclaimed":
            out[label] = str(s.kswapd_reclaimed)
        elif key == "kswapd_awake_us":
            # MMTests stopped its trace monitor 5 s after the test
            # (run-mmtests.sh stop_monitors), so kswapd's sleep after the
            # last allocation was in the published traces: count the
            # interval it was still awake when the simulated run ended.
            out[label] = _seconds(v[key] + v.get("kswapd_awake_open_us", 0))
        elif key == "direct_stall_us":
            out[label] = _seconds(v[key])
        else:
            out[label] = str(int(v[key]))
    return out


def summary_texts(result: Mapping[str, Any]) -> dict[str, str]:
    """One kernel's ``Total`` and ``%age`` rows."""
    v = _ftrace(result)["vmscan"]
    rows = vmscan_texts(result)
    scanned = int(v["direct_pages_scanned"]) + int(v["kswapd_pages_scanned"])
    reclaimed = int(rows["Direct reclaim pages reclaimed"]) + int(rows["Kswapd pages reclaimed"])
    written = sum(int(v[k]) for k in ("kswapd_write_file_async", "kswapd_write_anon_async",
                                     "direct_write_file_async", "direct_write_anon_async",
                                     "direct_write_anon_sync", "direct_write_file_sync"))
    file_written = sum(int(v[k]) for k in ("kswapd_write_file_async", "direct_write_file_async",
                                          "direct_write_file_sync"))
    t = result["times"]
    duration = mt.duration_texts(float(t["user_s"]), float(t["sys_s"]), float(t["elapsed_s"]))
    stalled = float(rows["Time stalled direct reclaim (seconds)"])
    awake = float(rows["Time kswapd awake (seconds)"])
    user = float(mt.gnu_time(float(t["user_s"])))
    sys = float(mt.gnu_time(float(t["sys_s"])))
    total_time = mt.perl_value(user + sys + stalled)
    elapsed = float(duration[mt.DURATION_ROWS[1]])
    return {
        "Total pages scanned": f"{scanned:10d}",
        "Total pages reclaimed": f"{reclaimed:10d}",
        "%age total pages scanned/reclaimed": _pct(reclaimed * 100 / scanned if scanned else 0),
        "%age total pages scanned/written": _pct(written * 100 / scanned if scanned else 0),
        "%age  file pages scanned/written": _pct(file_written * 100 / scanned if scanned else 0),
        "Percentage Time Spent Direct Reclaim": _pct(stalled * 100 / total_time if total_time else 0),
        "Percentage Time kswapd Awake": _pct(awake * 100 / elapsed if elapsed else 0),
    }


def congestion_texts(result: Mapping[str, Any]) -> dict[str, str]:
    """One kernel's congestion_wait rows (``0``, ``12396ms``)."""
    c = _ftrace(result)["congestion_wait"]
    out: dict[str, str] = {}
    for label, who, kind, fig in CONGESTION_ROWS:
        value = int(c[who][f"{kind}_{fig}"])
        out[label] = f"{mt.perl_number(value / 1000)}ms" if fig == "us" else str(value)
    return out


def _bench(results: Sequence[Mapping[str, Any]], bench: str | None) -> str:
    if bench is not None:
        return bench
    kind = str(results[0].get("workload", ""))
    return BENCH_NAMES.get(kind, kind or "-")


def vmscan_block(results: Sequence[Mapping[str, Any]], labels: Sequence[str], bench: str | None = None) -> str:
    """``subreport/ftrace-vmscan``: title, printheader, 17 rows, a blank line, 7 summary rows."""
    _check(results, labels)
    lines = [VMSCAN_TITLE, *mt.header_rows(_bench(results, bench), labels)]
    cols = [vmscan_texts(r) for r in results]
    for label, _ in VMSCAN_ROWS:
        lines.append(f"{label:<40}" + "".join(f"{c[label]:>10} " for c in cols))
    lines.append("")
    sums = [summary_texts(r) for r in results]
    for label in SUMMARY_ROWS:
        lines.append(f"{label:<40}" + "".join(s[label] for s in sums))
    return "\n".join(lines) + "\n"


def congestion_block(results: Sequence[Mapping[str, Any]]) -> str:
    """``subreport/ftrace-congestion``: title and 12 rows (no header rows, as in 2011)."""
    if not results:
        raise MmtwinError("the FTrace blocks need at least one kernel")
    cols = [congestion_texts(r) for r in results]
    lines = [CONGESTION_TITLE]
    for label, *_ in CONGESTION_ROWS:
        lines.append(f"{label:<40}" + "".join(f"{c[label]:>10} " for c in cols))
    return "\n".join(lines) + "\n"


def _check(results: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> None:
    if not results:
        raise MmtwinError("the FTrace blocks need at least one kernel")
    if len(labels) != len(results):
        raise MmtwinError(f"FTrace blocks: {len(labels)} labels for {len(results)} results; give one per result")


def ftrace_blocks(results: Sequence[Mapping[str, Any]], labels: Sequence[str], bench: str | None = None) -> str:
    """Both blocks, one column per result (in order), separated by a blank line.

    ``labels`` name the kernels (the header rows split ``<bench>-<label>``
    as MMTests' printheader did); ``bench`` is the MMTests test name
    (default: from the first result's workload, fsmark -> ``fsmark``,
    mmapstream -> ``micro``). A result without ftrace statistics (a 2.6.18
    kernel) is an error.
    """
    return vmscan_block(results, labels, bench) + "\n" + congestion_block(results)
