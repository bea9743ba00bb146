"""Resolver arithmetic: node layout, zone bands, scaling and workload checks."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from mmtwin import config
from mmtwin.config import WorkloadParams
from mmtwin.errors import MmtwinError
from mmtwin.resolve import layout_nodes, parse_scale, resolve_spec, workload_bytes


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
        "kind": "memhog", "bytes": 2**30, "threads": 2, "stride": 4096, "cpus": None, "mems_allowed": None,
    }
    assert spec["kernel"] == {
        "name": "test-base", "era": "2.6.18", "zlc": "none", "zlc_reconsider": False,
        "min_free_kbytes": None, "zone_reclaim_mode": None, "lowmem_reserve_ratio": None, "percpu_pagelists": True,
    }
    assert (spec["seed"], spec["check"], spec["sample_ms"]) == (1, False, 100)


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
