"""/proc snapshots printed as each era's kernel prints them (mmtwin.reports.procfs): exact text of a tiny
machine just booted (counts worked out by hand), consistency between the files at any time, what differs
between eras, the results tree's files and monitors, and bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import requires_engine

from mmtwin import cli
from mmtwin import results as saved
from mmtwin.errors import MmtwinError
from mmtwin.reports import procfs

# --------------------------------------------------------------------------- a tiny machine just booted

COST = {"fault_ns": 1000, "clear_ns_per_kib": 100, "clear_remote_ns_per_kib": 200, "line_miss_ns": 100,
        "line_hit_ns": 1, "buddy_page_ns": 10, "user_store_ns": 50}


def tiny_spec(era: str, pages: int = 64, snapshots: Any = None) -> dict[str, Any]:
    """One node, 2 CPUs, DMA 4096 pages at pfn 0 and NORMAL 8192 pages with 100 reserved at its top."""
    return {
        "machine": {"name": "tiny", "page_size": 4096, "cache_line": 64, "hz": 100,
                    "nodes": [{"cpus": 2, "zones": [{"name": "DMA", "present_pages": 4096},
                                                    {"name": "NORMAL", "present_pages": 8192}], "reserved_pages": 100}],
                    "distance": [[10]], "cost": COST},
        "kernel": {"name": f"tiny-{era}", "era": era, "zlc": "none"},
        "workload": {"kind": "memhog", "bytes": pages * 4096, "threads": 1},
        "snapshots": snapshots or {"at_ms": [], "every_ms": None, "max_periodic": 4},
    }


def run_tiny(era: str, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    from mmtwin.engine import run_spec, strip_perf

    spec = tiny_spec(era, **kw)
    return spec, strip_perf(run_spec(spec))


def start_text(era: str, name: str) -> str:
    spec, result = run_tiny(era)
    return procfs.render(name, result["snapshots"][0], procfs.Machine.of(spec, result))


# By hand: lowmem 12288 pages = 49152 KiB, min_free_kbytes = isqrt(49152 * 16) = 886, 221 pages; DMA gets
# 221 * 4096 / 12288 = 73 (low + 73/4, high + 73/2), NORMAL 147 (183, 220). lowmem_reserve of DMA toward
# NORMAL and MOVABLE: 8192 / 256 = 32. zone_batchsize 1 (high 6). The vm_stat threshold: 2 * fls(2 CPUs) *
# (1 + fls(pages >> 15)) = 4. Free at boot: DMA 4 blocks of order 10; NORMAL [4096, 12188): 7 of order 10,
# then 924 = 512 + 256 + 128 + 16 + 8 + 4.
BUDDYINFO_START = (
    "Node 0, zone      DMA      0      0      0      0      0      0      0      0      0      0      4 \n"
    "Node 0, zone   Normal      0      0      1      1      1      0      0      1      1      1      7 \n"
)


def _pagesets(cpus: int, high: int, batch: int, threshold: int) -> str:
    return "".join(f"    cpu: {c}\n              count: 0\n              high:  {high}\n              batch: {batch}\n"
                   f"  vm stats threshold: {threshold}\n" for c in range(cpus))


def _items(names: str, values: dict[str, int], indent: int) -> str:
    return "".join(f"{' ' * indent}{n:<12} {values.get(n, 0)}\n" for n in names.split())


ITEMS_30 = ("nr_free_pages nr_inactive_anon nr_active_anon nr_inactive_file nr_active_file nr_unevictable nr_mlock "
            "nr_anon_pages nr_mapped nr_file_pages nr_dirty nr_writeback nr_slab_reclaimable nr_slab_unreclaimable "
            "nr_page_table_pages nr_kernel_stack nr_unstable nr_bounce nr_vmscan_write nr_writeback_temp "
            "nr_isolated_anon nr_isolated_file nr_shmem nr_dirtied nr_written numa_hit numa_miss numa_foreign "
            "numa_interleave numa_local numa_other nr_anon_transparent_hugepages")

ZONEINFO_30_START = (
    "Node 0, zone      DMA\n"
    "  pages free     4096\n        min      73\n        low      91\n        high     109\n"
    "        scanned  0\n        spanned  4096\n        present  4096\n"
    + _items(ITEMS_30, {"nr_free_pages": 4096}, 4)
    + "        protection: (0, 32, 32)\n  pagesets\n" + _pagesets(2, 6, 1, 4)
    + "  all_unreclaimable: 0\n  start_pfn:         0\n  inactive_ratio:    1\n"
    "Node 0, zone   Normal\n"
    "  pages free     8092\n        min      147\n        low      183\n        high     220\n"
    "        scanned  0\n        spanned  8192\n        present  8192\n"
    + _items(ITEMS_30, {"nr_free_pages": 8092}, 4)
    + "        protection: (0, 0, 0)\n  pagesets\n" + _pagesets(2, 6, 1, 4)
    + "  all_unreclaimable: 0\n  start_pfn:         4096\n  inactive_ratio:    1\n"
)

ITEMS_2618 = ("nr_anon_pages nr_mapped nr_file_pages nr_slab_reclaimable nr_slab_unreclaimable nr_page_table_pages "
              "nr_dirty nr_writeback nr_unstable nr_bounce numa_hit numa_miss numa_foreign numa_interleave numa_local "
              "numa_other")

# 2.6.18: active/inactive and the scan counts, MAX_NR_ZONES 4 (DMA, DMA32, NORMAL, HIGHMEM), no CPU listed
# under pagesets while both its lists are empty, the reclaim priorities at DEF_PRIORITY.
ZONEINFO_2618_START = (
    "Node 0, zone      DMA\n"
    "  pages free     4096\n        min      73\n        low      91\n        high     109\n"
    "        active   0\n        inactive 0\n        scanned  0 (a: 0 i: 0)\n        spanned  4096\n        present  4096\n"
    + _items(ITEMS_2618, {}, 4)
    + "        protection: (0, 0, 32, 32)\n  pagesets\n"
    "  all_unreclaimable: 0\n  prev_priority:     12\n  temp_priority:     12\n  start_pfn:         0\n"
    "Node 0, zone   Normal\n"
    "  pages free     8092\n        min      147\n        low      183\n        high     220\n"
    "        active   0\n        inactive 0\n        scanned  0 (a: 0 i: 0)\n        spanned  8192\n        present  8192\n"
    + _items(ITEMS_2618, {}, 4)
    + "        protection: (0, 0, 0, 0)\n  pagesets\n"
    "  all_unreclaimable: 0\n  prev_priority:     12\n  temp_priority:     12\n  start_pfn:         4096\n"
)

NODE_411 = ("nr_inactive_anon nr_active_anon nr_inactive_file nr_active_file nr_unevictable nr_isolated_anon "
            "nr_isolated_file nr_pages_scanned workingset_refault workingset_activate workingset_nodereclaim "
            "nr_anon_pages nr_mapped nr_file_pages nr_dirty nr_writeback nr_writeback_temp nr_shmem "
            "nr_shmem_hugepages nr_shmem_pmdmapped nr_anon_transparent_hugepages nr_unstable nr_vmscan_write "
            "nr_vmscan_immediate_reclaim nr_dirtied nr_written")
ZONE_411 = ("nr_free_pages nr_zone_inactive_anon nr_zone_active_anon nr_zone_inactive_file nr_zone_active_file "
            "nr_zone_unevictable nr_zone_write_pending nr_mlock nr_slab_reclaimable nr_slab_unreclaimable "
            "nr_page_table_pages nr_kernel_stack nr_bounce nr_zspages numa_hit numa_miss numa_foreign "
            "numa_interleave numa_local numa_other nr_free_cma")

# 4.11: the node's counters once, under its first zone; managed pages (present less reserved); the
# watermark gap is max(min/4, present * 10/10000) = min/4 here, and high is min + 2 gaps (219 for NORMAL, not 220).
ZONEINFO_411_START = (
    "Node 0, zone      DMA\n  per-node stats\n" + _items(NODE_411, {}, 6)
    + "  pages free     4096\n        min      73\n        low      91\n        high     109\n"
    "   node_scanned  0\n        spanned  4096\n        present  4096\n        managed  4096\n"
    + _items(ZONE_411, {"nr_free_pages": 4096}, 6)
    + "        protection: (0, 32, 32)\n  pagesets\n" + _pagesets(2, 6, 1, 4)
    + "  node_unreclaimable:  0\n  start_pfn:           0\n  node_inactive_ratio: 0\n"
    "Node 0, zone   Normal\n"
    "  pages free     8092\n        min      147\n        low      183\n        high     219\n"
    "   node_scanned  0\n        spanned  8192\n        present  8192\n        managed  8092\n"
    + _items(ZONE_411, {"nr_free_pages": 8092}, 6)
    + "        protection: (0, 0, 0)\n  pagesets\n" + _pagesets(2, 6, 1, 4)
    + "  node_unreclaimable:  0\n  start_pfn:           4096\n  node_inactive_ratio: 0\n"
)

PAGETYPEINFO_30_START = (
    "Page block order: 9\nPages per block:  512\n\n"
    "Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 \n"
    + "".join(f"Node    0, zone {z:>8}, type {t:>12} " + "".join(f"{c:6d} " for c in counts) + "\n"
              for z, free in (("DMA", [0] * 10 + [4]), ("Normal", [0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 7]))
              for t, counts in (("Unmovable", [0] * 11), ("Reclaimable", [0] * 11), ("Movable", free),
                                ("Reserve", [0] * 11), ("Isolate", [0] * 11)))
    + "\nNumber of blocks type     Unmovable  Reclaimable      Movable      Reserve      Isolate \n"
    "Node 0, zone      DMA            0            0            8            0            0 \n"
    "Node 0, zone   Normal            0            0           16            0            0 \n"
)


@requires_engine
def test_buddyinfo_right_after_boot_is_exact_in_every_era() -> None:
    for era in ("2.6.18", "3.0", "3.1", "4.11"):
        assert start_text(era, "buddyinfo") == BUDDYINFO_START, era


@requires_engine
def test_zoneinfo_right_after_boot_is_exact() -> None:
    assert start_text("3.0", "zoneinfo") == ZONEINFO_30_START
    assert start_text("3.1", "zoneinfo") == ZONEINFO_30_START
    assert start_text("2.6.18", "zoneinfo") == ZONEINFO_2618_START
    assert start_text("4.11", "zoneinfo") == ZONEINFO_411_START


@requires_engine
def test_pagetypeinfo_right_after_boot_is_exact() -> None:
    assert start_text("3.0", "pagetypeinfo") == PAGETYPEINFO_30_START
    # 4.11 orders the types Unmovable, Movable, Reclaimable, HighAtomic (no CMA), Isolate.
    text = start_text("4.11", "pagetypeinfo")
    assert "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate \n" in text
    assert "Node 0, zone   Normal            0           16            0            0            0 \n" in text
    assert "Node    0, zone   Normal, type      Movable      0      0      1      1      1      0      0      1      1      1      7 \n" in text


@requires_engine
def test_vmstat_and_numastat_right_after_boot() -> None:
    text = start_text("3.0", "vmstat")
    rows = [ln.split() for ln in text.splitlines()]
    assert rows[0] == ["nr_free_pages", str(4096 + 8092)]
    # 3.0's global_dirty_limits: dirtyable = free + reclaimable + 1 = 12189; 20% and 10% of it.
    assert [r for r in rows if r[1] != "0"] == [["nr_free_pages", "12188"], ["nr_dirty_threshold", "2437"],
                                                ["nr_dirty_background_threshold", "1218"]], "nothing else has happened yet"
    # 3.0 with DMA and NORMAL: 34 state rows, 56 event rows (zone rows for dma, normal and movable).
    assert [n for n, _ in rows if n.startswith("pgalloc_")] == ["pgalloc_dma", "pgalloc_normal", "pgalloc_movable"]
    assert len(rows) == 34 + 56
    assert start_text("3.0", "numastat") == ("node: 0\nnuma_hit 0\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 0\n"
                                             "local_node 0\nother_node 0\n")


# --------------------------------------------------------------------------- the complete lists


def test_vmstat_lists_are_the_kernels() -> None:
    """Lengths and landmarks of each era's list (2.6.18 mainline; 3.0 and 4.11 with the configuration docs/results.md names)."""
    n2618 = procfs.vmstat_names("2.6.18", procfs.zone_types("2.6.18", ["DMA", "NORMAL"]))
    assert len(n2618) == 16 + 4 + 4 + 5 + 16 + 7 and n2618[-1] == "pgrotated" and "pgalloc_high" in n2618
    assert "nr_free_pages" not in n2618 and "pgalloc_movable" not in n2618
    n30 = procfs.vmstat_names("3.0", procfs.zone_types("3.0", ["DMA", "DMA32", "NORMAL"]))
    assert len(n30) == 95 and n30[:2] == ["nr_free_pages", "nr_inactive_anon"] and n30[-1] == "thp_split"
    patched = procfs.vmstat_names("3.0", procfs.zone_types("3.0", ["DMA", "DMA32", "NORMAL"]), invalidate=True)
    assert patched.index("nr_vmscan_invalidate") == patched.index("nr_vmscan_write") + 1
    n411 = procfs.vmstat_names("4.11", procfs.zone_types("4.11", ["DMA", "DMA32", "NORMAL"]))
    assert n411[n411.index("pgalloc_movable") + 1] == "allocstall_dma" and "allocstall" not in n411
    assert n411[n411.index("allocstall_movable") + 1] == "pgskip_dma"
    assert n411[-3:] == ["balloon_inflate", "balloon_deflate", "balloon_migrate"] and "thp_split_pud" in n411
    assert len(n411) == len(set(n411)) and len(n30) == len(set(n30)) and len(n2618) == len(set(n2618))


@requires_engine
@pytest.mark.parametrize("era", ["2.6.18", "3.0", "3.1", "4.11"])
def test_every_engine_row_is_in_the_eras_list_in_its_order(era: str) -> None:
    spec, result = run_tiny(era, pages=20000)  # more than the machine: reclaim and OOM counters move
    zones = [z["zone"] for z in result["zones"]]
    names = procfs.vmstat_names(procfs.era_format(era), procfs.zone_types(procfs.era_format(era), zones))
    rows = list(result["vmstat"])
    assert [n for n in names if n in rows] == rows, "the engine's rows are a subsequence of the kernel's list"
    modelled, zero = procfs.modelled_rows(era, result["vmstat"], zones)
    assert set(modelled) | set(zero) == set(names) and not set(modelled) & set(zero)
    text = procfs.vmstat_text(era, result["vmstat"], zones)
    assert all(f"{n} {result['vmstat'][n]}\n" in text for n in rows)


# --------------------------------------------------------------------------- consistency at any time


def _zoneinfo_field(text: str, field: str) -> list[int]:
    return [int(ln.split()[-1]) for ln in text.splitlines() if ln.split()[:len(field.split())] == field.split()]


@requires_engine
@pytest.mark.parametrize("era", ["2.6.18", "3.0", "4.11"])
def test_the_files_agree_with_each_other_at_every_snapshot(era: str) -> None:
    from mmtwin.engine import run_spec, strip_perf

    spec = tiny_spec(era, pages=16000, snapshots={"at_ms": [1, 2, 5], "every_ms": 1, "max_periodic": 16})
    spec["machine"]["nodes"] = [dict(spec["machine"]["nodes"][0]), dict(spec["machine"]["nodes"][0])]
    spec["machine"]["distance"] = [[10, 20], [20, 10]]
    spec["workload"]["threads"] = 2
    result = strip_perf(run_spec(spec))
    machine = procfs.Machine.of(spec, result)
    snaps = result["snapshots"]
    assert len(snaps) > 6
    moved = False
    for snap in snaps:
        buddy = procfs.render("buddyinfo", snap, machine)
        zoneinfo = procfs.render("zoneinfo", snap, machine)
        vmstat = dict(ln.split() for ln in procfs.render("vmstat", snap, machine).splitlines())
        free = _zoneinfo_field(zoneinfo, "pages free")
        per_zone = [[int(x) for x in ln.split()[4:]] for ln in buddy.splitlines()]
        # sum over orders of nr_free << order is the zone's free pages
        assert [sum(n << o for o, n in enumerate(row)) for row in per_zone] == free
        if era != "2.6.18":
            assert int(vmstat["nr_free_pages"]) == sum(free)
            assert _zoneinfo_field(zoneinfo, "nr_free_pages") == free
            # the migrate types' counts add up to buddyinfo's at every order
            pti = procfs.render("pagetypeinfo", snap, machine)
            types = [ln for ln in pti.splitlines() if ", type " in ln]
            for zi, row in enumerate(per_zone):
                mine = [[int(x) for x in t.split()[6:]] for t in types[5 * zi: 5 * zi + 5]]
                assert [sum(col) for col in zip(*mine)] == row
            blocks = [ln for ln in pti.splitlines() if ln.startswith("Node ") and ", type " not in ln]
            # pageblocks every 512 pages from each zone's start: DMA 8, Normal 16, on each node
            assert [sum(int(x) for x in b.split()[4:]) for b in blocks] == [8, 16, 8, 16]
        # numastat sums to /proc/vmstat's NUMA rows
        numa = procfs.render("numastat", snap, machine)
        hits = [int(ln.split()[1]) for ln in numa.splitlines() if ln.startswith("numa_hit")]
        assert sum(hits) == int(vmstat["numa_hit"])
        if snap["kind"] != "start" and free != _zoneinfo_field(procfs.render("zoneinfo", snaps[0], machine), "pages free"):
            moved = True
    assert moved, "the memory hog changed the buddy lists"


# --------------------------------------------------------------------------- eras differ


@requires_engine
def test_2618_has_no_pagetypeinfo() -> None:
    spec, result = run_tiny("2.6.18")
    assert procfs.files_of("2.6.18") == ("vmstat", "zoneinfo", "buddyinfo", "numastat", "diskstats")
    with pytest.raises(MmtwinError, match=r"pagetypeinfo is not there in era 2.6.18"):
        procfs.render("pagetypeinfo", result["snapshots"][0], procfs.Machine.of(spec, result))
    assert result["snapshots"][0]["zones"][0]["free_by_type"] == [[0] * 10 + [4]], "one list per order, no types"


# --------------------------------------------------------------------------- the CLI and the tree


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mmtwin: error: "), err
    for n in needles:
        assert n in lines[0], (n, lines[0])


RUN_LARGEDD = ["run", "-e", "zlcfirst", "-r", "largedd", "--scale", "0.02"]


@requires_engine
def test_run_writes_snapshots_and_report_prints_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "t"
    code, _, err = call(capsys, *RUN_LARGEDD, "--output-dir", str(root), "--proc-at", "2.5s,1s,500ms,1s,900s",
                        "--proc-every", "4s")
    assert code == 0, err
    assert "note: --proc-at 900s: after the run of 3.0-rc6-vanilla ended" in err
    own = root / "mmtwin" / "3.0-rc6-vanilla" / "iter-0" / "largedd"
    assert sorted(p.name for p in (own / "proc").iterdir()) == ["1s", "2500ms", "500ms", "end", "start"]
    assert sorted(str(p.relative_to(own / "proc" / "1s")) for p in (own / "proc" / "1s").rglob("*") if p.is_file()) == [
        "buddyinfo", "diskstats", "node0/numastat", "node1/numastat", "pagetypeinfo", "vmstat", "zoneinfo"]
    snaps = json.loads((own / "snapshots.json").read_text())
    assert [s["kind"] for s in snaps][:5] == ["start", "at", "at", "at", "periodic"] and snaps[-1]["kind"] == "end"
    assert "snapshots" not in json.loads((own / "result.json").read_text())
    spec = json.loads((own / "spec.json").read_text())
    assert spec["snapshots"] == {"at_ms": [500, 1000, 2500, 900000], "every_ms": 4000, "max_periodic": 256}

    code, out, err = call(capsys, "report", str(root), "--proc", "buddyinfo", "--at", "2.5s")
    assert code == 0, err
    assert out == (own / "proc" / "2500ms" / "buddyinfo").read_text()
    code, out, _ = call(capsys, "report", str(root), "--proc", "zoneinfo")
    assert out == (own / "proc" / "end" / "zoneinfo").read_text()
    sysstate = (root / "work" / "log" / "3.0-rc6-vanilla" / "iter-0" / "tests-sysstate").read_text()
    assert out == sysstate.split("file end :: /proc/zoneinfo\n")[1].split("file end :: /proc/meminfo\n")[0]
    code, out, _ = call(capsys, "report", str(root), "--proc", "numastat", "--at", "start")
    assert out == "".join(f"node: {n}\n" + (own / "proc" / "start" / f"node{n}" / "numastat").read_text() for n in (0, 1))
    # a periodic snapshot can be printed too; the monitor holds the same text under its time stamp
    code, out, _ = call(capsys, "report", str(root), "--proc", "buddyinfo", "--at", "4s")
    assert code == 0
    mon = gzip.decompress((root / "work/log/3.0-rc6-vanilla/iter-0/proc-buddyinfo-largedd.gz").read_bytes()).decode()
    assert f"time: {saved.SIM_EPOCH + 4}\n{out}" in mon
    code, _, err = call(capsys, "report", str(root), "--proc", "buddyinfo", "--at", "3s")
    one_line_error(code, err, "--at: no snapshot at '3s'; the run has: start, 500ms, 1s, 2500ms, 4s, 8s", "end")

    # the tree reads back whole: compare --results writes the snapshots again
    again = tmp_path / "again"
    code, _, err = call(capsys, "compare", "--results", str(root), "--results", str(root), "--output-dir", str(again))
    assert code == 0, err
    copied = next(again.rglob("snapshots.json"))
    assert json.loads(copied.read_text()) == snaps


@requires_engine
def test_2618_tree_has_no_pagetypeinfo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "t"
    code, _, err = call(capsys, "run", "-m", "sgi-altix-28node", "-k", "2.6.18-mm3", "--size-gb", "2", "-t", "2",
                        "--scale", "0.01", "--output-dir", str(root))
    assert code == 0, err
    assert not list(root.rglob("*pagetypeinfo*"))
    assert list(root.rglob("proc-buddyinfo-memhog.gz")) and list(root.rglob("proc/end/zoneinfo"))
    code, _, err = call(capsys, "report", str(root), "--proc", "pagetypeinfo")
    one_line_error(code, err, "pagetypeinfo is not there in era 2.6.18")
    code, out, _ = call(capsys, "report", str(root), "--proc", "zoneinfo")
    assert "  prev_priority:     12\n" in out and "        scanned  " in out


@requires_engine
def test_bad_proc_options_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "o")
    for args, needles in [
        (["--proc-at", "10s"], ["--proc-at: needs --output-dir DIR", "or --json"]),
        (["--output-dir", out, "--proc-at", "10x"], ["--proc-at: '10x' is not a time"]),
        (["--output-dir", out, "--proc-at", "1.0005s"], ["--proc-at: '1.0005s' is not a whole number of milliseconds"]),
        (["--output-dir", out, "--proc-at", "90000s"], ["--proc-at: '90000s' is not allowed; 0 to 86400s"]),
        (["--output-dir", out, "--proc-at", ","], ["--proc-at: ',' is empty"]),
        (["--output-dir", out, "--proc-every", "0s"], ["--proc-every: '0s' is not allowed; 1ms to 86400s"]),
        (["--output-dir", out, "--proc-max", "5000"], ["--proc-max: 5000 is not allowed; 1 to 4096"]),
        (["--json", "--proc-max", "3"], ["--proc-max: needs --proc-every TIME"]),
    ]:
        code, _, err = call(capsys, *RUN_LARGEDD, *args)
        one_line_error(code, err, *needles)
    code, _, err = call(capsys, "reproduce", "zlcfirst", "--scale", "0.02", "--proc-at", "1s")
    one_line_error(code, err, "--proc-at: needs --output-dir DIR (the snapshots are written there)")
    code, _, err = call(capsys, "report", out, "--at", "1s")
    one_line_error(code, err, "--at: needs --proc FILE")
    code, _, err = call(capsys, "report", out, "--proc", "slabinfo")
    one_line_error(code, err, "--proc: 'slabinfo' is not allowed; one of vmstat, zoneinfo, buddyinfo, pagetypeinfo, numastat")


@requires_engine
def test_report_proc_on_a_tree_without_snapshots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "t"
    assert call(capsys, *RUN_LARGEDD, "--output-dir", str(root))[0] == 0
    next(root.rglob("snapshots.json")).unlink()  # as an earlier mmtwin wrote it
    code, out, err = call(capsys, "report", str(root))
    assert code == 0, err
    code, _, err = call(capsys, "report", str(root), "--proc", "vmstat")
    one_line_error(code, err, "--at: the run has no /proc snapshots")


def test_the_cap_is_the_engines() -> None:
    """Python refuses what the engine would, with the same formula (crates/mmtwin-core/tests/snapshots.rs)."""
    zones = [{"name": n, "present_pages": 64} for n in ("DMA", "DMA32", "NORMAL", "MOVABLE")]
    big = {"machine": {"max_order": 11, "nodes": [{"cpus": 64, "zones": zones}] * 64}}
    assert procfs.snapshot_bytes(big) == 8610856
    with pytest.raises(MmtwinError, match=r"^--proc-max: 4096 is too many on this machine; at most 29 \(a snapshot "
                                          r"takes up to 8610856 bytes, 256 MiB for all of a run's\)$"):
        procfs.snapshots_spec(big, [], 10, 4096)
    # without --proc-max the default shrinks to fit
    assert procfs.snapshots_spec(big, [], 10)["max_periodic"] == 29
    assert procfs.snapshots_spec(big, [5, 1, 5]) == {"at_ms": [1, 5], "every_ms": None, "max_periodic": 27}


@requires_engine
def test_python_api_snapshots() -> None:
    import mmtwin

    r = mmtwin.run(machine="x86-64-4core-512m-xfs", kernel="3.0-rc6-vanilla",
                   workload={"kind": "memhog", "size_gb": 0.1, "threads": 1}, proc_at=["1ms", 0.002], proc_every="1ms")
    assert r.snapshots[0] == "start" and r.snapshots[-1] == "end" and "1ms" in r.snapshots and "2ms" in r.snapshots
    assert r.proc("buddyinfo", at="start").startswith("Node 0, zone      DMA ")
    assert r.proc("vmstat").splitlines()[0].startswith("nr_free_pages ")
    with pytest.raises(MmtwinError, match=r"^file: 'meminfo' is not allowed; one of vmstat"):
        r.proc("meminfo")
    with pytest.raises(MmtwinError, match=r"^at: no snapshot at '7s'; the run has: start, "):
        r.proc("vmstat", at="7s")
    with pytest.raises(MmtwinError, match=r"^proc_at: 'x' is not a time"):
        mmtwin.run(machine="x86-64-4core-512m-xfs", kernel="3.0-rc6-vanilla", workload={"kind": "memhog", "size_gb": 0.05, "threads": 1},
                   proc_at="x")


# --------------------------------------------------------------------------- diskstats


def test_diskstats_names_numbers_and_converts_jiffies() -> None:
    """md RAID-0 members take sd names the machine's devices leave free; ticks print in ms (HZ 250: 4 ms a jiffy)."""
    machine = procfs.Machine(era="3.0", page_size=4096, pageblock_order=9, max_order=11, cpus=4, nodes=1, hz=250,
                             devices=(("md0", 2), ("sdb", 1)))

    def disk(n: int) -> dict[str, Any]:
        return {"ios": [n, 2 * n], "merges": [0, n], "sectors": [8 * n, 16 * n], "ticks": [n, 3 * n],
                "in_flight": 1, "io_ticks": 5 * n, "time_in_queue": 7 * n}

    snap = {"devices": [{"bios": [3, 9], "sectors": [24, 72], "disks": [disk(1), disk(2)]},
                        {"bios": [4, 4], "sectors": [32, 64], "disks": [disk(4)]}]}
    assert procfs.diskstats_text(snap, machine) == (
        "   8       0 sda 1 0 8 4 2 1 16 12 1 20 28\n"
        "   8      16 sdb 4 0 32 16 8 4 64 48 1 80 112\n"
        "   8      32 sdc 2 0 16 8 4 2 32 24 1 40 56\n"
        "   9       0 md0 3 0 24 0 9 0 72 0 0 0 0\n")
    assert procfs.diskstats_text({}, machine) == ""
    with pytest.raises(MmtwinError, match=r"^--proc: diskstats is not in this run's snapshots"):
        procfs.render("diskstats", {"vmstat": {}, "zones": []}, machine)
    assert [procfs._devt(n, 0) for n in ("sdb", "sdp", "sdq", "sdz", "md3")] == [(8, 16), (8, 240), (65, 0), (65, 144), (9, 3)]
    assert [procfs.jiffies_to_msecs(j, hz) for j, hz in ((3, 250), (3, 1000), (1000, 1024), (2**31, 250))] == [12, 3, 976, 0]


@requires_engine
def test_diskstats_of_a_run_add_up() -> None:
    """The 512M xfs box's micro benchmark, small: members' sectors never exceed what md was given; busy time
    within the elapsed time; time_in_queue at least io_ticks; the disks wrote what pgpgout counts."""
    from mmtwin import experiment
    from mmtwin.engine import run_spec, strip_perf

    loaded = experiment.load("reclaim-writeback-xfs")
    spec = next(p.spec for p in experiment.plan(loaded, scale=0.05) if p.run == "micro-512M" and p.kernel == "3.0-rc6-vanilla")
    spec["snapshots"] = {"at_ms": [1000, 2000], "every_ms": None, "max_periodic": 1}
    result = strip_perf(run_spec(spec))
    machine = procfs.Machine.of(spec, result)
    assert [d[0] for d in machine.devices] == ["md0", "sdb"]
    for snap in result["snapshots"]:
        rows = [ln.split() for ln in procfs.render("diskstats", snap, machine).splitlines()]
        by = {r[2]: [int(x) for x in r[3:]] for r in rows}
        assert sorted(by) == ["md0", "sda", "sdb", "sdc", "sdd", "sde"], rows
        ms = int(snap["t_ns"]) // 1_000_000
        for name in ("sda", "sdb", "sdc", "sdd", "sde"):
            f = by[name]
            assert f[9] <= ms + 4 and f[10] >= f[9], (name, f)
        members = [by[n] for n in ("sda", "sdc", "sdd", "sde")]
        for col in (2, 6):  # sectors read, written
            assert sum(m[col] for m in members) <= by["md0"][col]
        if snap["kind"] == "end":
            written = sum(f[6] for f in by.values() if f is not by["md0"])
            assert 0 < written // 2 <= int(snap["vmstat"]["pgpgout"])
            assert sum(m[4] for m in members) > 0 and by["sdb"][0] > 0, "the array was written, swap read back"
