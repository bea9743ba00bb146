"""Resolver arithmetic: node layout, zone bands, scaling and workload checks."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from mmtwin import config
from mmtwin.config import WorkloadParams
from mmtwin.errors import MmtwinError
from mmtwin.resolve import MIB, layout_nodes, parse_scale, resolve_spec, workload_bytes


def tiny(fixture_presets: Path) -> tuple[config.Machine, config.Kernel]:
    return config.load_machine("tiny-x86"), config.load_kernel("test-base")


def zones_of(spec: dict) -> list[list[tuple[str, int]]]:
    return [[(z["name"], z["present_pages"]) for z in n["zones"]] for n in spec["machine"]["nodes"]]


def test_full_scale_zone_pages(fixture_presets: Path) -> None:
    m, k = tiny(fixture_presets)
    spec = resolve_spec(m, k, WorkloadParams(size_gb=1, threads=2))
    # 256 pages per MiB. Node 0 = [0, 3000) MiB, node 1 = [3000, 5000) MiB.
    assert zones_of(spec) == [
        [("DMA", 16 * 256), ("DMA32", 2984 * 256), ("NORMAL", 0)],
        [("DMA", 0), ("DMA32", 1096 * 256), ("NORMAL", 904 * 256)],
    ]
    assert [n["reserved_pages"] for n in spec["machine"]["nodes"]] == [40 * 256, 8 * 256]
    assert [n["cpus"] for n in spec["machine"]["nodes"]] == [2, 2]
    assert spec["machine"]["distance"] == [[10, 21], [21, 10]]
    assert spec["machine"]["arch"] == "x86_64"
    assert spec["workload"] == {
        "kind": "memhog", "bytes": 2**30, "threads": 2, "stride": 4096, "passes": 1, "cpus": None, "mems_allowed": None,
    }
    assert spec["kernel"] == {
        "name": "test-base", "era": "2.6.18", "zlc": "none", "zlc_reconsider": False,
        "min_free_kbytes": None, "zone_reclaim_mode": None, "lowmem_reserve_ratio": None, "percpu_pagelists": True,
        "pcp_sizing": "6x-batch", "new_anon_lru": "active", "slab_allocator": "slub",
        # Specification v2: the writeback and reclaim sysctls, kernel defaults written out
        "dirty_ratio": 20, "dirty_background_ratio": 10, "dirty_bytes": 0, "dirty_background_bytes": 0,
        "dirty_expire_centisecs": 3000, "dirty_writeback_centisecs": 500, "swappiness": 60,
        "min_unmapped_ratio": 1, "min_slab_ratio": 5, "vfs_cache_pressure": 100,
        "watermark_boost_factor": 0,  # no boost before 5.0
        # the 3.0 writeback-from-reclaim behaviour (seed 004's series off), 3.x's kswapd
        "direct_fs_writeback": True, "kswapd_fs_writeback": "always", "reclaim_throttle_dirty": False,
        "reclaim_invalidate": False, "kswapd_balance": "per-zone", "min_free_kbytes_max": 65536,
    }
    assert spec["machine"]["storage"] is None  # no [storage] table
    assert spec["machine"]["cost"] == {
        "fault_ns": 1000, "clear_ns_per_kib": 100, "clear_remote_ns_per_kib": 200, "line_miss_ns": 100,
        "line_hit_ns": 1, "buddy_page_ns": 30, "user_store_ns": 50,
        # the seven costs the preset leaves out: the engine's defaults (docs/engine-api.md)
        "syscall_ns": 300, "copy_ns_per_kib": 250, "page_cache_ns": 400, "scan_page_ns": 150,
        "inode_ns": 20000, "writepage_ns": 1500, "clone_ns": 25000,
    }
    assert (spec["seed"], spec["check"], spec["sample_ms"], spec["trace"]) == (1, False, 100, None)
    assert list(spec) == ["machine", "kernel", "workload", "seed", "check", "sample_ms", "trace", "snapshots"]
    # /proc snapshots at the start and the end only, unless asked for more (mmtwin.reports.procfs)
    assert spec["snapshots"] == {"at_ms": [], "every_ms": None, "max_periodic": 256}


def test_scaled_zone_pages_round_down(fixture_presets: Path) -> None:
    m, _ = tiny(fixture_presets)
    nodes = layout_nodes(m, Fraction(1, 20))
    # Node sizes: 3000*256/20 = 38400, 2000*256/20 = 25600 pages.
    # Band ends: 16*256/20 = 204.8 -> 204, 4096*256/20 = 52428.8 -> 52428.
    assert [(n.start_pfn, n.pages) for n in nodes] == [(0, 38400), (38400, 25600)]
    assert [list(n.zones) for n in nodes] == [
        [("DMA", 204), ("DMA32", 38196), ("NORMAL", 0)],
        [("DMA", 0), ("DMA32", 52428 - 38400), ("NORMAL", 64000 - 52428)],
    ]
    assert [n.reserved_pages for n in nodes] == [512, 102]  # 40*256/20, floor(8*256/20 = 102.4)


def test_workload_bytes_gb_is_2_to_30_and_rounds_to_pages() -> None:
    assert workload_bytes(12, Fraction(1), 16384) == 12 * 2**30
    assert workload_bytes(0.5, Fraction(1), 4096) == 2**29
    # 12 GiB * 0.05 = 644245094.4 bytes -> 157286 whole 4 KiB pages
    assert workload_bytes(12, parse_scale(0.05), 4096) == 157286 * 4096


def test_scale_is_exact_decimal() -> None:
    assert parse_scale(0.1) == Fraction(1, 10)
    assert parse_scale(1) == 1
    for bad in (0, -0.5, 1.01):
        with pytest.raises(MmtwinError, match="--scale"):
            parse_scale(bad)


def test_spec_is_deterministic(fixture_presets: Path) -> None:
    m, k = tiny(fixture_presets)
    a = resolve_spec(m, k, WorkloadParams(size_gb=1.5, threads=3), scale=0.3, seed=7)
    b = resolve_spec(m, k, WorkloadParams(size_gb=1.5, threads=3), scale=0.3, seed=7)
    assert a == b


def test_single_band_machine(fixture_presets: Path) -> None:
    m = config.load_machine("tiny-numa")
    nodes = layout_nodes(m)
    assert [list(n.zones) for n in nodes] == [[("DMA", 256 * 64)]] * 4  # 16 KiB pages: 64 per MiB
    assert [n.cpus for n in nodes] == [2, 2, 2, 0]


def test_pci_hole_moves_ram_above_4g_and_out_of_dma32() -> None:
    """The hole holds no RAM: node 0's RAM behind it lands above 4 GiB, in
    NORMAL, and the next node starts after it (physical start_pfn)."""
    m = config.load_machine("x86-64-2node-24cpu")
    assert m.topology.pci_hole_mib == [3328, 4096]
    per_mib = MIB // m.page_size
    n0, n1 = layout_nodes(m)
    assert dict(n0.zones) == {"DMA": 16 * per_mib, "DMA32": (3328 - 16) * per_mib, "NORMAL": (6144 - 3328) * per_mib}
    assert n1.start_pfn == (6144 + 4096 - 3328) * per_mib
    assert dict(n1.zones)["NORMAL"] == 6144 * per_mib
    without = m.model_copy(update={"topology": m.topology.model_copy(update={"pci_hole_mib": None})})
    assert dict(layout_nodes(without)[0].zones)["NORMAL"] == (6144 - 4096) * per_mib
    # Scaled, the hole scales with the zone bands.
    half = dict(layout_nodes(m, Fraction(1, 2))[0].zones)
    assert half["DMA32"] == (3328 - 16) * per_mib // 2


def test_kernel_sysctls_pass_through(fixture_presets: Path) -> None:
    m = config.load_machine("tiny-x86")
    spec = resolve_spec(m, config.load_kernel("test-zlc"), WorkloadParams(size_gb=1, threads=1))
    assert spec["kernel"]["zlc"] == "after-first-zone"
    assert spec["kernel"]["min_free_kbytes"] == 1024
    assert spec["kernel"]["lowmem_reserve_ratio"] == [256, 256, 32, 32]


@pytest.mark.parametrize(
    ("params", "kwargs", "expected"),
    [
        ({"size_gb": 1, "threads": 5}, {}, "workload.threads: 5 is not allowed; machine tiny-x86 has 4 CPUs"),
        ({"size_gb": 1, "threads": 2, "cpus": [0]}, {}, "workload.cpus: 1 CPUs listed for 2 threads"),
        ({"size_gb": 1, "threads": 2, "cpus": [0, 4]}, {}, "workload.cpus: CPU 4 does not exist; machine tiny-x86 has CPUs 0..3"),
        ({"size_gb": 1, "threads": 2, "cpus": [1, 1]}, {}, "lists a CPU twice"),
        ({"size_gb": 1, "threads": 1, "mems_allowed": [2]}, {}, "workload.mems_allowed: node 2 does not exist; machine tiny-x86 has nodes 0..1"),
        ({"size_gb": 1, "threads": 1, "mems_allowed": []}, {}, "workload.mems_allowed: [] is not allowed"),
        ({"size_gb": 1, "threads": 1, "stride": 3000}, {}, "workload.stride: 3000 is not allowed; it must divide the page size 4096"),
        ({"size_gb": 1e-9, "threads": 1}, {}, "is less than one 4096-byte page"),
        ({"size_gb": 1, "threads": 1}, {"scale": 1e-6}, "leaves node 0 (3000 MiB) without a single 4096-byte page"),
    ],
)
def test_workload_errors(fixture_presets: Path, params: dict, kwargs: dict, expected: str) -> None:
    m, k = tiny(fixture_presets)
    with pytest.raises(MmtwinError) as info:
        resolve_spec(m, k, WorkloadParams(**params), **kwargs)
    assert expected in info.value.message


def test_workload_params_validation() -> None:
    with pytest.raises(MmtwinError, match=r"command line: size_gb: -5 is not allowed"):
        config.validate(WorkloadParams, {"size_gb": -5, "threads": 1}, "command line")
    with pytest.raises(MmtwinError, match=r"command line: threads: 0 is not allowed; must be >= 1"):
        config.validate(WorkloadParams, {"size_gb": 1, "threads": 0}, "command line")
    with pytest.raises(MmtwinError, match=r"command line: kind: 'fsmark' is not allowed; expected 'memhog'"):
        config.validate(WorkloadParams, {"kind": "fsmark", "size_gb": 1, "threads": 1}, "command line")


def test_altix_preset_layout() -> None:
    """The shipped seed-003 machine: 28 one-zone nodes, 2 CPUs each, 16 KiB pages."""
    m = config.load_machine("sgi-altix-28node")
    nodes = layout_nodes(m)
    assert len(nodes) == 28 and all(n.cpus == 2 for n in nodes)
    assert all(len(n.zones) == len(m.zones) for n in nodes)
    assert sum(n.pages for n in nodes) == m.total_memory_mib() * 64


def test_layout_properties_hold_for_random_machines() -> None:
    """Every node is split exactly across the bands, nodes are contiguous, scaling never adds pages."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=150, deadline=None)
    @hypothesis.given(
        mem=st.lists(st.integers(1, 9000), min_size=1, max_size=6),
        ends=st.lists(st.integers(1, 20000), min_size=0, max_size=3, unique=True),
        page_shift=st.integers(12, 16),
        scale=st.fractions(min_value=Fraction(1, 1000), max_value=1),
    )
    def check(mem: list[int], ends: list[int], page_shift: int, scale: Fraction) -> None:
        n = len(mem)
        names = ["DMA", "DMA32", "NORMAL", "HIGHMEM"][: len(ends) + 1]
        zones = [{"name": nm, "end_mib": e} for nm, e in zip(names, sorted(ends))] + [{"name": names[len(ends)]}]
        machine = config.Machine.model_validate(
            {
                "name": "h", "description": "d", "source": "s", "arch": "x86_64",
                "page_size": 2**page_shift, "cache_line": 64, "hz": 1000,
                "topology": {"nodes": n, "cpus_per_node": 1, "memory_mib": mem, "reserved_mib": 0,
                             "distance": [[10 if i == j else 20 for j in range(n)] for i in range(n)]},
                "zones": zones,
                "cost": {"fault_ns": 1, "clear_ns_per_kib": 1, "clear_remote_ns_per_kib": 1, "line_miss_ns": 1,
                         "line_hit_ns": 1, "buddy_page_ns": 1, "user_store_ns": 1},
            }
        )
        try:
            nodes = layout_nodes(machine, scale)
        except MmtwinError:
            assert any(m * 2**20 * scale < 2**page_shift for m in mem)  # only when a node gets no page
            return
        pfn = 0
        for node, m in zip(nodes, mem):
            assert node.start_pfn == pfn
            assert sum(p for _, p in node.zones) == node.pages
            assert node.pages == int(m * 2**20 * scale // 2**page_shift) <= m * 2**20 // 2**page_shift
            pfn += node.pages

    check()


def test_max_order_comes_from_the_machine() -> None:
    from mmtwin.config import WorkloadParams, load_kernel, load_machine
    from mmtwin.resolve import resolve_spec

    altix = resolve_spec(load_machine("sgi-altix-28node"), load_kernel("2.6.18-mm3"), WorkloadParams(size_gb=1, threads=1))
    x86 = resolve_spec(load_machine("uma-x86-64"), load_kernel("2.6.18-mm3"), WorkloadParams(size_gb=1, threads=1))
    assert (altix["machine"]["max_order"], altix["machine"]["pageblock_order"]) == (17, 9)
    assert (x86["machine"]["max_order"], x86["machine"]["pageblock_order"]) == (11, 9)


# --------------------------------------------------------------------------- Specification v2: seed 000's runs

NODE0 = list(range(12))
KERNEL_3_0 = {
    "era": "3.0", "min_free_kbytes": None, "zone_reclaim_mode": None, "lowmem_reserve_ratio": None,
    "percpu_pagelists": True, "pcp_sizing": "6x-batch", "new_anon_lru": "active", "slab_allocator": "slab", "dirty_ratio": 20, "dirty_background_ratio": 10, "dirty_bytes": 0,
    "dirty_background_bytes": 0, "dirty_expire_centisecs": 3000, "dirty_writeback_centisecs": 500,
    "swappiness": 60, "min_unmapped_ratio": 1, "min_slab_ratio": 5, "vfs_cache_pressure": 100,
    "watermark_boost_factor": 0,
    "direct_fs_writeback": True, "kswapd_fs_writeback": "always", "reclaim_throttle_dirty": False,
    "reclaim_invalidate": False, "kswapd_balance": "per-zone", "min_free_kbytes_max": 65536,
}


def test_zlcfirst_specs_are_exactly_the_v2_contract() -> None:
    from mmtwin import experiment

    planned = experiment.plan(experiment.load("zlcfirst"))
    assert [(p.kernel, p.run) for p in planned] == [
        (k, r) for k in ("3.0-rc6-vanilla", "3.0-rc6-zlcfirst", "3.0-rc6-zlcreconsider")
        for r in ("fsmark", "largedd", "mmapstream")
    ]
    machine = {
        "name": "x86-64-2node-24cpu", "arch": "x86_64", "page_size": 4096, "cache_line": 64, "cache_kib": 1024, "link_mb_s": 0, "hz": 250,
        "max_order": 11, "pageblock_order": 9,
        "nodes": [
            # The PCI hole [3328, 4096) MiB: DMA32 holds 3312 MiB, NORMAL 2816 MiB.
            {"cpus": 12, "zones": [{"name": "DMA", "present_pages": 4096}, {"name": "DMA32", "present_pages": 847872},
                                   {"name": "NORMAL", "present_pages": 720896}], "reserved_pages": 180 * 256},
            {"cpus": 12, "zones": [{"name": "DMA", "present_pages": 0}, {"name": "DMA32", "present_pages": 0},
                                   {"name": "NORMAL", "present_pages": 1572864}], "reserved_pages": 100 * 256},
        ],
        "distance": [[10, 31], [31, 10]],
        "cost": {"fault_ns": 1500, "clear_ns_per_kib": 60, "clear_remote_ns_per_kib": 90, "line_miss_ns": 90,
                 "line_hit_ns": 1, "buddy_page_ns": 30, "user_store_ns": 80, "syscall_ns": 300, "copy_ns_per_kib": 250,
                 "page_cache_ns": 400, "scan_page_ns": 150, "inode_ns": 20000, "writepage_ns": 1500, "clone_ns": 25000},
        "storage": {
            "devices": [{"name": "sda", "disks": 1, "chunk_kib": 64, "bandwidth_mib_s": 100, "access_us": 0,
                         "rpm": 7200, "track_seek_us": 1000, "full_seek_us": 15000,
                         "nr_requests": 128, "max_sectors_kib": 512, "size_mib": 476940, "elevator": "deadline",
                         "queue_depth": 1}],
            "fs": {"kind": "ext4", "device": 0, "size_mib": 476940, "journal": True, "commit_s": 5},
            "swap": None,
        },
        "fork_balance": "none",
    }
    workloads = {
        "fsmark": {"kind": "fsmark", "threads": 24, "cpus": NODE0, "mems_allowed": None, "dirs": 1, "subdirs": 100,
                   "files_per_subdir": 5000, "files": 208, "iterations": 35, "file_bytes": 524288,
                   "write_bytes": 16384, "sync_method": 0},
        "largedd": {"kind": "largedd", "cpus": NODE0, "mems_allowed": None, "tar_bytes": 1576 * 2**20, "copies": 14,
                    "dd_bytes": 512, "threads": 1, "download_mib_s": 27},
        "mmapstream": {"kind": "mmapstream", "cpus": NODE0, "mems_allowed": None, "bytes": 120080 * 2**20, "threads": 24},
    }
    policy = {
        "3.0-rc6-vanilla": {"era": "3.0", "zlc": "after-first-zone", "zlc_reconsider": False},
        "3.0-rc6-zlcfirst": {"era": "3.0", "zlc": "first-eligible", "zlc_reconsider": False},
        "3.0-rc6-zlcreconsider": {"era": "3.0", "zlc": "first-eligible", "zlc_reconsider": True},
    }
    for p in planned:
        assert p.spec == {
            "machine": machine,
            "kernel": {"name": p.kernel, **KERNEL_3_0, **policy[p.kernel]},
            "workload": workloads[p.run],
            "seed": 1,
            "check": False,
            "sample_ms": 100,
            "trace": None,
            "snapshots": {"at_ms": [], "every_ms": None, "max_periodic": 256},
        }, (p.kernel, p.run)
    # JSON-ready, and the same spec whatever is asked twice
    json.dumps(planned[0].spec, allow_nan=False)
    assert experiment.plan(experiment.load("zlcfirst"))[0].spec == planned[0].spec


def test_zlcfirst_specs_at_scale() -> None:
    from mmtwin import experiment

    planned = experiment.plan(experiment.load("zlcfirst"), scale=0.1, check=True)
    w = {p.run: p.spec["workload"] for p in planned if p.kernel == "3.0-rc6-vanilla"}
    assert w["fsmark"]["files"] == 20  # 208 x 0.1 rounded down
    assert w["largedd"]["tar_bytes"] == 157.6 * 2**20 // 4096 * 4096 and w["largedd"]["dd_bytes"] == 512
    assert w["mmapstream"]["bytes"] == 12008 * 2**20 // 4096 * 4096  # 120080 MiB x 0.1, whole pages
    assert planned[0].spec["machine"]["storage"]["devices"][0]["size_mib"] == 476940  # storage is not scaled
    assert planned[0].spec["check"] is True
    tiny = experiment.plan(experiment.load("zlcfirst"), scale=0.001)
    assert tiny[0].spec["workload"]["files"] == 1  # at least one file per thread per iteration


def test_file_workload_errors() -> None:
    m = config.load_machine("x86-64-2node-24cpu")
    k = config.load_kernel("3.0-rc6-vanilla")
    fs = config.validate_workload({"kind": "fsmark", "subdirs": 10, "files_per_subdir": 5, "threads": 64,
                                   "files": 1000, "iterations": 100, "file_bytes": 2**20}, "x")
    with pytest.raises(MmtwinError, match=re.escape(
        "workload.files: fs_mark keeps 6400000 files of 1048576 bytes (64 threads x 1000 files x 100 iterations) "
        "(6250.0 GiB) is larger than the ext4 filesystem on sda (476940 MiB)"
    )):
        resolve_spec(m, k, fs)
    # Empty files fit any filesystem, but each is an inode of engine state: at most 2^24 of them.
    empty = config.validate_workload({"kind": "fsmark", "subdirs": 10, "files_per_subdir": 5, "threads": 64,
                                      "files": 1_000_000, "iterations": 100_000, "file_bytes": 0}, "x")
    with pytest.raises(MmtwinError) as info:
        resolve_spec(m, k, empty)
    assert info.value.message == ("workload.files: fs_mark keeps 6400000000000 files (64 threads x 1000000 files x 100000 "
                                  "iterations); at most 16777216, the engine's bound on inodes (about 200 bytes of state each)")
    altix = config.load_machine("sgi-altix-28node")
    with pytest.raises(MmtwinError, match=r"workload.kind: 'fsmark' needs a filesystem; machine sgi-altix-28node has no \[storage\] table"):
        resolve_spec(altix, config.load_kernel("2.6.18-mm3"), fs)
    dd = config.validate_workload({"kind": "largedd", "tar_mib": 1e-5, "copies": 1, "download_mib_s": 1}, "x")
    with pytest.raises(MmtwinError, match=r"workload.tar_mib: 1e-05 MiB at scale 1 is less than one 4096-byte page"):
        resolve_spec(m, k, dd)
    dd = config.validate_workload({"kind": "largedd", "tar_mib": 10, "copies": 1, "download_mib_s": 1, "dd_kib": 20 * 2**20}, "x")
    with pytest.raises(MmtwinError, match=r"workload.dd_kib: 1 dd process\(es\) with bs=21474836480 needs 20480 MiB of memory"):
        resolve_spec(m, k, dd)
    st = config.validate_workload({"kind": "mmapstream", "size_mib": 1, "threads": 512}, "x")
    with pytest.raises(MmtwinError, match=r"gives each of the 512 threads less than one 4096-byte page"):
        resolve_spec(m, k, st)
    st = config.validate_workload({"kind": "mmapstream", "size_mib": 1, "cpus": [3, 3]}, "x")
    with pytest.raises(MmtwinError, match=r"workload.cpus: \[3, 3\] lists a CPU twice; each CPU at most once"):
        resolve_spec(m, k, st)
    st = config.validate_workload({"kind": "mmapstream", "size_mib": 1, "cpus": []}, "x")
    with pytest.raises(MmtwinError, match=r"workload.cpus: \[\] is not allowed; list at least one CPU"):
        resolve_spec(m, k, st)


def test_memory_check_counts_allowed_nodes_and_refuses_swap(fixture_presets: Path) -> None:
    m, k = tiny(fixture_presets)  # node 0: 3000 MiB - 40 reserved, node 1: 2000 - 8
    resolve_spec(m, k, WorkloadParams(size_gb=4952 / 1024, threads=1))  # exactly what is free: fits
    with pytest.raises(MmtwinError, match=r"needs 4953 MiB of memory, more than machine tiny-x86 has \(4952 MiB after boot"):
        resolve_spec(m, k, WorkloadParams(size_gb=4953 / 1024, threads=1))
    with pytest.raises(MmtwinError, match=r"more than nodes 1 of tiny-x86 has \(1992 MiB after boot reservations, no swap\)"):
        resolve_spec(m, k, WorkloadParams(size_gb=2, threads=1, mems_allowed=[1]))
    data = m.model_dump()
    data["storage"] = {
        "devices": [{"name": "sda", "bandwidth_mib_s": 100, "access_us": 8000, "nr_requests": 128,
                     "max_sectors_kib": 512, "size_mib": 10000}],
        "fs": {"kind": "xfs", "device": "sda", "size_mib": 6000},
        "swap": {"device": "sda", "size_mib": 4000},
    }
    # The swap area shares sda with the filesystem: the engine puts it after the filesystem's blocks.
    with_swap = config.validate(config.Machine, data, "m.toml")
    spec = resolve_spec(with_swap, k, WorkloadParams(size_gb=4, threads=1))
    assert spec["machine"]["storage"]["swap"] == {"device": 0, "size_mib": 4000}
    data["storage"]["swap"] = None
    with_fs = config.Machine.model_validate(data)
    spec = resolve_spec(with_fs, k, WorkloadParams(size_gb=4, threads=1))
    assert spec["machine"]["storage"]["swap"] is None
    assert spec["machine"]["storage"]["fs"] == {"kind": "xfs", "device": 0, "size_mib": 6000, "journal": False, "commit_s": 5}


def test_dirty_bytes_minimum_is_two_pages(fixture_presets: Path) -> None:
    m, k = tiny(fixture_presets)
    low = k.model_copy(update={"sysctl": k.sysctl.model_copy(update={"dirty_bytes": 4096})})
    with pytest.raises(MmtwinError, match=r"kernel test-base: sysctl.dirty_bytes: 4096 is not allowed; the kernel's minimum is two pages \(8192 bytes\)"):
        resolve_spec(m, low, WorkloadParams(size_gb=1, threads=1))


def test_trace_spec() -> None:
    from mmtwin.resolve import trace_spec

    assert trace_spec(None) is None
    assert trace_spec("/tmp/t", None) == {"path": "/tmp/t", "events": None}
    assert trace_spec("/tmp/t", ["mm_vmscan_kswapd_wake"]) == {"path": "/tmp/t", "events": ["mm_vmscan_kswapd_wake"]}
    with pytest.raises(MmtwinError, match="--trace-events: needs --trace FILE"):
        trace_spec(None, ["x"])


def test_a_machine_over_the_engines_page_bound_is_refused_unless_scaled() -> None:
    """A 10 TiB machine would need ~75 GB of page state: one line, and a smaller --scale runs it."""
    m = config.load_machine("x86-64-4core-512m-xfs")
    huge = m.model_copy(update={"topology": m.topology.model_copy(update={"memory_mib": 10 * 2**20})})
    k = config.load_kernel("3.0-rc6-vanilla")
    with pytest.raises(MmtwinError) as info:
        resolve_spec(huge, k, WorkloadParams(size_gb=1, threads=1))
    assert "2684354560 pages at scale 1 is more than the engine's 134217728" in info.value.message
    assert "\n" not in info.value.message
    spec = resolve_spec(huge, k, WorkloadParams(size_gb=1, threads=1), scale=0.01)
    assert sum(z["present_pages"] for n in spec["machine"]["nodes"] for z in n["zones"]) <= 2**27


def test_a_machine_over_the_engines_cache_model_bound_is_refused(fixture_presets: Path) -> None:
    """4096 CPUs on 256 nodes: the engine's cache model (a stream position per CPU per cache line, a line per
    CPU per zone) would take 35 GB; the engine once aborted allocating such a model. Python refuses it first, by
    the engine's formula."""
    from mmtwin.resolve import cache_lines_bound

    m = config.load_machine("tiny-numa")
    dist = [[10 if a == b else 20 for b in range(256)] for a in range(256)]
    topo = m.topology.model_copy(update={"nodes": 256, "cpus_per_node": 16, "memory_mib": 16, "reserved_mib": 0, "distance": dist})
    big = m.model_copy(update={"topology": topo})
    with pytest.raises(MmtwinError) as info:
        resolve_spec(big, config.load_kernel("test-base"), WorkloadParams(size_gb=0.001, threads=1))
    assert info.value.message == ("machine tiny-numa: 4096 CPUs x 1078275 cache lines take 34366 MiB of the engine's cache "
                                  "model; at most 1024 MiB (fewer CPUs, nodes or zones)")
    # The same count as the engine's Spec::cache_lines_bound (crates/mmtwin-core/tests/engine.rs, the_cache_model_is_bounded).
    node = {"cpus": 16, "zones": [{"name": "NORMAL", "present_pages": 64}]}
    assert cache_lines_bound({"cache_line": 64, "nodes": [node] * 256}, processes=1) == 1103875
