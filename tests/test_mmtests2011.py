"""The 2011 MMTests report of seed 000, golden against the seed's own text.

tests/fixtures/seed000/*.txt are the seed's FS-Mark, LARGE DD and Streaming
Mapped Writer blocks copied verbatim (without the two header rows above each
benchmark table, which the seed's author edited by hand: tabs, a truncated
"zlcfirs"). The tests feed the seed's own figures back in, either as the
printed figures or as engine-shaped results (per-iteration fs_mark samples,
/proc/vmstat snapshots, times) that reproduce them, and compare the text
character by character.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import FIXTURES

from mmtwin.reports import mmtests2011 as mt
from mmtwin.reproduce.zlcfirst import PUBLISHED, PUBLISHED_BENCH, PUBLISHED_DURATION, PUBLISHED_KERNELS, PUBLISHED_VMSTAT

SEED = {kind: (FIXTURES / "seed000" / f"{kind}.txt").read_text() for kind in ("fsmark", "largedd", "mmapstream")}

# Per-iteration fs_mark samples (value: how many of the 35 iterations) whose
# 2011 statistics are exactly the seed's printed min/mean/stddev/max, per kernel.
FILES_PER_SEC = (
    {54.9: 1, 87.0: 1, 87.1: 31, 300.6: 1, 361.1: 1},
    {49.8: 1, 103.9: 31, 105.1: 1, 520.6: 1, 834.4: 1},
    {49.1: 1, 109.3: 1, 109.8: 31, 777.8: 1, 802.4: 1},
)
OVERHEAD_US = (
    {76704: 1, 773030: 28, 773035: 1, 5375959: 1, 5375960: 3, 7989060: 1},
    {76501: 1, 313090: 1, 313093: 18, 1918467: 13, 1918470: 1, 3369118: 1},
    {77784: 1, 1064631: 29, 1064636: 1, 4553922: 3, 10135324: 1},
)

# /proc/vmstat at the start of the test: arbitrary, so that the deltas matter.
VMSTAT_START = {
    "pgpgin": 1234567, "pgpgout": 7654321, "pswpin": 3, "pswpout": 4,
    "pgsteal_dma": 0, "pgsteal_dma32": 1000, "pgsteal_normal": 5000,
    "pgscan_kswapd_dma": 0, "pgscan_kswapd_dma32": 700, "pgscan_kswapd_normal": 2100,
    "pgscan_direct_dma": 0, "pgscan_direct_dma32": 300, "pgscan_direct_normal": 4000,
    "kswapd_steal": 2500, "kswapd_inodesteal": 17, "pginodesteal": 23, "slabs_scanned": 1024,
    "nr_vmscan_write": 9, "nr_free_pages": 3000000,
}


def _expand(counts: dict[Any, int]) -> list[Any]:
    return [value for value, n in counts.items() for _ in range(n)]


def seed_result(kind: str, i: int) -> dict[str, Any]:
    """An engine result (Result v2 shape) whose 2011 report is the seed's column ``i`` of ``kind``."""
    v = {row: int(texts[i]) for row, texts in PUBLISHED_VMSTAT[kind].items() if texts[i].isdigit()}
    direct, kswapd = v["Direct pages scanned"], v["Kswapd pages scanned"]
    delta = {
        "pgpgin": v["Page Ins"], "pgpgout": v["Page Outs"], "pswpin": v["Swap Ins"], "pswpout": v["Swap Outs"],
        # scanning split over the zones: the script sums them
        "pgscan_direct_dma32": direct // 3, "pgscan_direct_normal": direct - direct // 3,
        "pgscan_kswapd_dma32": kswapd // 4, "pgscan_kswapd_normal": kswapd - kswapd // 4,
        # 3.0's pgsteal_<zone> counts both reclaimers; kswapd_steal is kswapd's part
        "kswapd_steal": v["Kswapd pages reclaimed"],
        "pgsteal_dma32": 7, "pgsteal_normal": v["Direct pages reclaimed"] + v["Kswapd pages reclaimed"] - 7,
        "nr_vmscan_write": v["Page writes by reclaim"], "slabs_scanned": v["Slabs scanned"],
        "pginodesteal": v["Direct inode steals"], "kswapd_inodesteal": v["Kswapd inode steals"],
        "nr_free_pages": -12345,
    }
    vmstat = {name: VMSTAT_START[name] + delta.get(name, 0) for name in VMSTAT_START}
    user_sys = PUBLISHED_DURATION[kind]["User/Sys Time Running Test (seconds)"][i]
    elapsed = PUBLISHED_DURATION[kind]["Total Elapsed Time (seconds)"][i]
    # GNU time truncates to centiseconds: add less than 0.01 s to each figure
    user = round(float(user_sys) * 0.3, 2)
    sys_ = round(float(user_sys) - user, 2)
    benchmark: dict[str, Any] = {}
    if kind == "fsmark":
        benchmark = {"fsmark": {"iterations": [
            {"files_per_sec": f + 0.0004, "overhead_us": o}
            for f, o in zip(_expand(FILES_PER_SEC[i]), _expand(OVERHEAD_US[i]))
        ]}}
    elif kind == "largedd":
        benchmark = {"largedd": {"phases": [
            {"name": name, "seconds": int(PUBLISHED_BENCH["largedd"][name][i])} for name in mt.LARGEDD_ROWS
        ]}}
    else:
        benchmark = {"mmapstream": {"elapsed_s": float(elapsed)}}
    return {
        "times": {"user_s": user + 0.004, "sys_s": sys_ + 0.0049, "elapsed_s": float(elapsed) + 0.0099},
        "vmstat_start": VMSTAT_START,
        "vmstat": vmstat,
        "benchmark": benchmark,
    }


def body(text: str) -> str:
    """A report without its title, command and header rows: what the seed fixture holds."""
    lines = text.splitlines()[1:]
    return "\n".join(line for line in lines if not line.startswith("./fs_mark") and not line.startswith(" " * 12)) + "\n"


@pytest.mark.parametrize("kind", ["fsmark", "largedd", "mmapstream"])
def test_published_figures_print_as_the_seed(kind: str) -> None:
    """The transcribed figures, formatted with the 2011 layout, give the seed's text, percentages included."""
    assert body(mt.report(kind, PUBLISHED[kind])) == SEED[kind]


@pytest.mark.parametrize("kind", ["fsmark", "largedd", "mmapstream"])
def test_engine_results_with_the_seed_figures_print_as_the_seed(kind: str) -> None:
    """From raw samples, counters and times through the whole 2011 pipeline to the seed's text."""
    cols = [mt.column_from_result(name, kind, seed_result(kind, i)) for i, name in enumerate(PUBLISHED_KERNELS)]
    assert body(mt.report(kind, cols)) == SEED[kind]


def test_kswapd_velocity_from_raw_counters() -> None:
    """zlcfirst fs_mark: 1830011 pages scanned by kswapd over 2257.48 s prints 810.643."""
    s = mt.summarise_vmstat({"pgscan_kswapd_normal": 1830011, "pgscan_direct_normal": 8966863,
                             "kswapd_steal": 1829068, "pgsteal_normal": 1829068 + 8956828})
    rows = mt.vmstat_texts(s, "2257.48")
    assert rows["Kswapd velocity"] == "810.643"
    assert rows["Direct velocity"] == "3972.068"
    assert rows["Kswapd efficiency"] == "99%"  # 182906800 / 1830011 = 99.95, truncated
    assert rows["Percentage direct scans"] == "83%"
    assert rows["Direct pages reclaimed"] == "8956828"  # pgsteal - kswapd_steal


def test_vmstat_rules_when_nothing_is_scanned() -> None:
    nothing = mt.vmstat_texts(mt.summarise_vmstat({}), "10.00")
    assert (nothing["Kswapd efficiency"], nothing["Direct efficiency"]) == ("100%", "100%")
    assert nothing["Percentage direct scans"] == "0%"
    assert (nothing["Kswapd velocity"], nothing["Direct velocity"]) == ("0.000", "0.000")
    # only direct reclaim scanned: the seed prints 100% (vanilla fs_mark)
    direct_only = mt.vmstat_texts(mt.summarise_vmstat({"pgscan_direct_dma32": 5}), "1.00")
    assert direct_only["Percentage direct scans"] == "100%"
    assert mt.vmstat_texts(mt.summarise_vmstat({"pgscan_direct_normal": 5}), "0.00")["Direct velocity"] == "0.000"


def test_vmstat_deltas_and_zone_sums() -> None:
    result = {"vmstat_start": {"pgpgin": 10, "pgscan_direct_dma": 1}, "vmstat": {"pgpgin": 15, "pgscan_direct_dma": 4,
              "pgscan_direct_high": 2, "pgscan_direct_movable": 1, "pswpin": 7}}
    deltas = mt.vmstat_deltas(result)
    assert deltas == {"pgpgin": 5, "pgscan_direct_dma": 3, "pgscan_direct_high": 2, "pgscan_direct_movable": 1, "pswpin": 7}
    s = mt.summarise_vmstat(deltas)
    assert (s.page_ins, s.direct_scanned, s.swap_ins) == (5, 6, 7)
    assert mt.vmstat_deltas({"vmstat": {"pgpgin": 3}}) == {"pgpgin": 3}  # no start snapshot: from boot


def test_gnu_time_truncates_and_perl_prints_shortest() -> None:
    assert mt.gnu_time(2257.4899) == "2257.48"
    assert mt.gnu_time(0.999) == "0.99"
    assert mt.gnu_time(5) == "5.00"
    assert mt.perl_number(500.0) == "500"
    assert mt.perl_number(120.12 + 4.35) == "124.47"
    # User/Sys is perl's sum of GNU time's two figures: a trailing zero disappears
    assert mt.duration_texts(100.204, 1.309, 3.0) == {
        "User/Sys Time Running Test (seconds)": "101.5",
        "Total Elapsed Time (seconds)": "3.00",
    }


def test_fsmark_stats_use_the_printed_one_decimal_and_population_stddev() -> None:
    stats = mt.fsmark_stats([{"files_per_sec": 1.04, "overhead_us": 10}, {"files_per_sec": 2.96, "overhead_us": 30}])
    assert stats["Files/s min"] == 1.0 and stats["Files/s max"] == 3.0  # fs_mark printed %.1f
    assert stats["Files/s mean"] == 2.0 and stats["Files/s stddev"] == 1.0
    assert (stats["Overhead mean"], stats["Overhead stddev"]) == (20.0, 10.0)


def test_header_rows_are_the_2011_scripts() -> None:
    rows = mt.header_rows("fsmark", ["3.0-rc6-vanilla", "3.0-rc6-zlcfirst"])
    assert rows == [
        " " * 12 + f"{'fsmark-3.0':>18}{'fsmark-3.0':>18}",
        " " * 12 + f"{'rc6-vanilla':>18}{'rc6-zlcfirst':>18}",
    ]
    # awk's $0 for a field index of 0, and '-' for an index below it
    assert mt.header_rows("micro", ["a-b"])[0].split() == ["micro-a-b-micro"]
    assert mt.header_rows("micro", ["a"])[0].split() == ["-"]


def test_fsmark_command_as_logged() -> None:
    w = {"dirs": 1, "subdirs": 100, "files_per_subdir": 5000, "files": 208, "iterations": 35, "threads": 24,
         "sync_method": 0, "file_bytes": 524288, "write_bytes": 16384}
    assert mt.fsmark_command(w, ["/tmp/fsmark-10813"]) == (
        "./fs_mark  -d  /tmp/fsmark-10813  -D  100  -N  5000  -n  208  -L  35  -t  24  -S0  -s  524288"
    )


def test_report_rejects_memhog() -> None:
    from mmtwin.errors import MmtwinError

    with pytest.raises(MmtwinError, match="no 2011 MMTests report for workload kind 'memhog'"):
        mt.report("memhog", PUBLISHED["fsmark"])


def test_series_rows_appear_when_a_kernel_has_nr_vmscan_invalidate() -> None:
    """Seed 004's vmstat block adds Page reclaim invalidate/throttled, Kswapd skipped wait and the
    compaction rows; a kernel without the counter prints 0 there. Figures: the seed's 512M-xfs run."""
    van = {"pgscan_kswapd_dma32": 18931089, "kswapd_steal": 8878200, "pgsteal_dma32": 8878200 + 883407,
           "pgscan_direct_dma32": 886587, "nr_vmscan_write": 170014, "kswapd_skip_congestion_wait": 20}
    kwb = {**van, "nr_vmscan_write": 117717, "nr_vmscan_invalidate": 1221396, "kswapd_skip_congestion_wait": 3}

    def column(name: str, deltas: dict[str, int]) -> mt.Column:
        return mt.Column(name, {}, {}, mt.vmstat_texts(mt.summarise_vmstat(deltas), "137.65"))

    cols = [column("vanilla", van), column("kswapwb", kwb)]
    assert mt.vmstat_rows(cols) == mt.VMSTAT_ROWS_SERIES
    assert mt.vmstat_rows(cols[:1]) == mt.VMSTAT_ROWS  # 3.0 alone: the seed-000 rows
    block = mt.vmstat_block(cols).splitlines()
    rows = [line[:40].rstrip() for line in block[1:]]
    assert rows[13:16] == ["Page writes by reclaim", "Page reclaim invalidate", "Page reclaim throttled"]
    assert rows[-6:] == ["Kswapd skipped wait", "Compaction stalls", "Compaction success", "Compaction failures",
                         "Compaction pages moved", "Compaction move failure"]
    by_row = {line[:40].rstrip(): line[40:].split() for line in block[1:]}
    assert by_row["Page reclaim invalidate"] == ["0", "1221396"]
    assert by_row["Kswapd skipped wait"] == ["20", "3"]
    assert by_row["Kswapd velocity"] == ["137530.614", "137530.614"]  # as the seed prints it
