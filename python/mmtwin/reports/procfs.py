"""/proc text as the kernel of each era prints it, from the engine's snapshots.

The engine records numbers at chosen simulated times (``result["snapshots"]``,
docs/engine-api.md, "Snapshots"); this module prints them as the files a
kernel of the profile's era shows:

* ``vmstat``: /proc/vmstat, the era's complete counter list in the era's
  order (mm/vmstat.c ``vmstat_text``); a counter the engine does not model
  prints 0 (``modelled_rows`` says which are modelled);
* ``zoneinfo``: /proc/zoneinfo, with the zone's counters, protection
  (lowmem_reserve) and the per-cpu pagesets;
* ``buddyinfo``: /proc/buddyinfo, free blocks per order;
* ``pagetypeinfo``: /proc/pagetypeinfo, free blocks per order and migrate
  type and pageblocks per migrate type (2.6.24 on: not in era 2.6.18);
* ``numastat``: /sys/devices/system/node/node<N>/numastat, one node, or every
  node each after ``node: <N>`` as MMTests' numa-numastat monitor logs them;
* ``diskstats``: /proc/diskstats, a line per disk (the whole disk, no
  partitions) and per md device (block/genhd.c's diskstats_show): an md
  RAID-0's members are named sd<letter> in order, skipping the names the
  machine's other devices take; an md device counts bios and sectors only,
  as md_make_request does.

The formats follow mm/vmstat.c and drivers/base/node.c of 2.6.18, 3.0 (3.1
prints the same) and 4.11 (read from 4.11-rc8), built with the configuration
docs/results.md names ("/proc snapshots"). The text is this module's own;
only the layouts come from the kernel.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from mmtwin.errors import MmtwinError

FILES = ("vmstat", "zoneinfo", "buddyinfo", "pagetypeinfo", "numastat", "diskstats")

# Engine zone names (spec ZONE_NAMES) in zone-type order, the kernel's zone->name and the vmstat suffix.
ZONE_TYPES = ("DMA", "DMA32", "NORMAL", "HIGHMEM", "MOVABLE")
KERNEL_ZONE_NAME = {"DMA": "DMA", "DMA32": "DMA32", "NORMAL": "Normal", "HIGHMEM": "HighMem", "MOVABLE": "Movable"}
_SUFFIX = ("dma", "dma32", "normal", "high", "movable")

DEF_PRIORITY = 12

# Migrate type columns of pagetypeinfo, and the engine's list each takes its
# counts from (engine numbering: 0 unmovable, 1 reclaimable, 2 movable; None:
# a type the engine does not have, always 0).
_MIGRATETYPES = {
    "3.0": (("Unmovable", 0), ("Reclaimable", 1), ("Movable", 2), ("Reserve", None), ("Isolate", None)),
    # 4.11: MIGRATE_UNMOVABLE, MOVABLE, RECLAIMABLE, HIGHATOMIC, (no CONFIG_CMA), ISOLATE.
    "4.11": (("Unmovable", 0), ("Movable", 2), ("Reclaimable", 1), ("HighAtomic", None), ("Isolate", None)),
}


def jbd2_info_lines(result: Mapping[str, Any]) -> list[str]:
    """The journal's /proc/fs/jbd2/<dev>-8/info as the engine wrote it (ext4 with a journal),
    with its path above and a blank line below; nothing for other filesystems."""
    info = result.get("jbd2_info")
    if not info:
        return []
    return [str(info["path"]), str(info["text"]).rstrip("\n"), ""]


def era_format(era: str) -> str:
    """The era whose formats a kernel profile's era prints (3.1 prints as 3.0)."""
    if era == "3.1":
        return "3.0"
    if era in ("2.6.18", "3.0", "4.11"):
        return era
    raise MmtwinError(f"era: {era!r} has no /proc formats here; 2.6.18, 3.0, 3.1 or 4.11")


# --------------------------------------------------------------------------- the machine


@dataclass(frozen=True)
class Machine:
    """What the texts need besides a snapshot: the era and the machine's shape."""

    era: str  # a format era: 2.6.18, 3.0 or 4.11
    page_size: int
    pageblock_order: int
    max_order: int
    cpus: int
    nodes: int
    hz: int = 250
    # (name, member disks) of each block device, in the engine's order.
    devices: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, spec: Mapping[str, Any], result: Mapping[str, Any]) -> "Machine":
        m = spec["machine"]
        era = str(result.get("era") or spec["kernel"]["era"])
        storage = m.get("storage") or {}
        return cls(
            era=era_format(era),
            page_size=int(m["page_size"]),
            pageblock_order=int(m.get("pageblock_order", 9)),
            max_order=int(m.get("max_order", 11)),
            cpus=sum(int(n["cpus"]) for n in m["nodes"]),
            nodes=len(m["nodes"]),
            hz=int(m.get("hz", 250)),
            devices=tuple((str(d["name"]), int(d.get("disks", 1))) for d in storage.get("devices") or ()),
        )

    @property
    def page_shift(self) -> int:
        return self.page_size.bit_length() - 1


def zone_types(era: str, present: Iterable[str]) -> list[int]:
    """The zone types the era's kernel is built with (MAX_NR_ZONES): the rows of TEXTS_FOR_ZONES and
    the entries of ``protection``. 2.6.18 always has DMA, DMA32, NORMAL and HIGHMEM; later eras have
    DMA, NORMAL and MOVABLE, and DMA32 and HIGHMEM where the machine has such a zone."""
    have = set(present)
    if era == "2.6.18":
        return [0, 1, 2, 3]
    return [zt for zt, name in enumerate(ZONE_TYPES) if zt in (0, 2, 4) or name in have]


# --------------------------------------------------------------------------- /proc/vmstat


def _zoned(prefix: str, zts: Sequence[int]) -> list[str]:
    return [f"{prefix}_{_SUFFIX[zt]}" for zt in zts]


_V2618_ZONED = (
    "nr_anon_pages", "nr_mapped", "nr_file_pages", "nr_slab_reclaimable", "nr_slab_unreclaimable",
    "nr_page_table_pages", "nr_dirty", "nr_writeback", "nr_unstable", "nr_bounce",
)
_NUMA = ("numa_hit", "numa_miss", "numa_foreign", "numa_interleave", "numa_local", "numa_other")
_V30_ZONED = (
    "nr_free_pages", "nr_inactive_anon", "nr_active_anon", "nr_inactive_file", "nr_active_file",
    "nr_unevictable", "nr_mlock", "nr_anon_pages", "nr_mapped", "nr_file_pages", "nr_dirty",
    "nr_writeback", "nr_slab_reclaimable", "nr_slab_unreclaimable", "nr_page_table_pages",
    "nr_kernel_stack", "nr_unstable", "nr_bounce", "nr_vmscan_write", "nr_writeback_temp",
    "nr_isolated_anon", "nr_isolated_file", "nr_shmem", "nr_dirtied", "nr_written",
)
_V411_ZONE_ITEMS = (
    "nr_free_pages", "nr_zone_inactive_anon", "nr_zone_active_anon", "nr_zone_inactive_file",
    "nr_zone_active_file", "nr_zone_unevictable", "nr_zone_write_pending", "nr_mlock",
    "nr_slab_reclaimable", "nr_slab_unreclaimable", "nr_page_table_pages", "nr_kernel_stack",
    "nr_bounce", "nr_zspages", *_NUMA, "nr_free_cma",
)
_V411_NODE_ITEMS = (
    "nr_inactive_anon", "nr_active_anon", "nr_inactive_file", "nr_active_file", "nr_unevictable",
    "nr_isolated_anon", "nr_isolated_file", "nr_pages_scanned", "workingset_refault",
    "workingset_activate", "workingset_nodereclaim", "nr_anon_pages", "nr_mapped", "nr_file_pages",
    "nr_dirty", "nr_writeback", "nr_writeback_temp", "nr_shmem", "nr_shmem_hugepages",
    "nr_shmem_pmdmapped", "nr_anon_transparent_hugepages", "nr_unstable", "nr_vmscan_write",
    "nr_vmscan_immediate_reclaim", "nr_dirtied", "nr_written",
)
_UNEVICTABLE_EVENTS = (
    "unevictable_pgs_culled", "unevictable_pgs_scanned", "unevictable_pgs_rescued",
    "unevictable_pgs_mlocked", "unevictable_pgs_munlocked", "unevictable_pgs_cleared",
    "unevictable_pgs_stranded",
)


def zone_stat_items(era: str, invalidate: bool = False) -> list[str]:
    """The era's zone_stat_item names (the first NR_VM_ZONE_STAT_ITEMS rows of vmstat_text): the
    counters /proc/zoneinfo prints per zone. ``invalidate``: the kernel carries seed 004's patch 7."""
    if era == "2.6.18":
        return [*_V2618_ZONED, *_NUMA]
    if era == "3.0":
        zoned = list(_V30_ZONED)
        if invalidate:
            zoned.insert(zoned.index("nr_vmscan_write") + 1, "nr_vmscan_invalidate")
        return [*zoned, *_NUMA, "nr_anon_transparent_hugepages"]
    return list(_V411_ZONE_ITEMS)


def vmstat_names(era: str, zts: Sequence[int], invalidate: bool = False) -> list[str]:
    """Every /proc/vmstat row of the era, in its order (docs/results.md names the configuration)."""
    if era == "2.6.18":
        return [
            *_V2618_ZONED, *_NUMA,
            "pgpgin", "pgpgout", "pswpin", "pswpout", *_zoned("pgalloc", zts),
            "pgfree", "pgactivate", "pgdeactivate", "pgfault", "pgmajfault",
            *_zoned("pgrefill", zts), *_zoned("pgsteal", zts), *_zoned("pgscan_kswapd", zts), *_zoned("pgscan_direct", zts),
            "pginodesteal", "slabs_scanned", "kswapd_steal", "kswapd_inodesteal", "pageoutrun", "allocstall",
            "pgrotated",
        ]
    if era == "3.0":
        return [
            *zone_stat_items(era, invalidate), "nr_dirty_threshold", "nr_dirty_background_threshold",
            "pgpgin", "pgpgout", "pswpin", "pswpout", *_zoned("pgalloc", zts),
            "pgfree", "pgactivate", "pgdeactivate", "pgfault", "pgmajfault",
            *_zoned("pgrefill", zts), *_zoned("pgsteal", zts), *_zoned("pgscan_kswapd", zts), *_zoned("pgscan_direct", zts),
            "zone_reclaim_failed", "pginodesteal", "slabs_scanned", "kswapd_steal", "kswapd_inodesteal",
            "kswapd_low_wmark_hit_quickly", "kswapd_high_wmark_hit_quickly", "kswapd_skip_congestion_wait",
            "pageoutrun", "allocstall", "pgrotated",
            "compact_blocks_moved", "compact_pages_moved", "compact_pagemigrate_failed", "compact_stall",
            "compact_fail", "compact_success", "htlb_buddy_alloc_success", "htlb_buddy_alloc_fail",
            *_UNEVICTABLE_EVENTS, "unevictable_pgs_mlockfreed",
            "thp_fault_alloc", "thp_fault_fallback", "thp_collapse_alloc", "thp_collapse_alloc_failed", "thp_split",
        ]
    return [
        *_V411_ZONE_ITEMS, *_V411_NODE_ITEMS, "nr_dirty_threshold", "nr_dirty_background_threshold",
        "pgpgin", "pgpgout", "pswpin", "pswpout",
        *_zoned("pgalloc", zts), *_zoned("allocstall", zts), *_zoned("pgskip", zts),
        "pgfree", "pgactivate", "pgdeactivate", "pgfault", "pgmajfault", "pglazyfreed",
        "pgrefill", "pgsteal_kswapd", "pgsteal_direct", "pgscan_kswapd", "pgscan_direct", "pgscan_direct_throttle",
        "zone_reclaim_failed", "pginodesteal", "slabs_scanned", "kswapd_inodesteal",
        "kswapd_low_wmark_hit_quickly", "kswapd_high_wmark_hit_quickly", "pageoutrun", "pgrotated",
        "drop_pagecache", "drop_slab",
        "numa_pte_updates", "numa_huge_pte_updates", "numa_hint_faults", "numa_hint_faults_local", "numa_pages_migrated",
        "pgmigrate_success", "pgmigrate_fail",
        "compact_migrate_scanned", "compact_free_scanned", "compact_isolated", "compact_stall", "compact_fail",
        "compact_success", "compact_daemon_wake", "compact_daemon_migrate_scanned", "compact_daemon_free_scanned",
        "htlb_buddy_alloc_success", "htlb_buddy_alloc_fail", *_UNEVICTABLE_EVENTS,
        "thp_fault_alloc", "thp_fault_fallback", "thp_collapse_alloc", "thp_collapse_alloc_failed",
        "thp_file_alloc", "thp_file_mapped", "thp_split_page", "thp_split_page_failed", "thp_deferred_split_page",
        "thp_split_pmd", "thp_split_pud", "thp_zero_page_alloc", "thp_zero_page_alloc_failed",
        "balloon_inflate", "balloon_deflate", "balloon_migrate",
    ]


def _derived(era: str, zones: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Rows the engine's vmstat lacks but a snapshot's zones hold (4.11's node counter of pages scanned)."""
    if era == "4.11" and zones:
        return {"nr_pages_scanned": sum(int(z.get("pages_scanned", 0)) for z in zones)}
    return {}


def vmstat_text(era: str, rows: Mapping[str, Any], present: Iterable[str], zones: Sequence[Mapping[str, Any]] = ()) -> str:
    """/proc/vmstat: every row of the era in its order, ``name value``; the engine's value where it
    models the counter (``rows``, its result's ``vmstat``), else 0."""
    era = era_format(era)
    extra = _derived(era, zones)
    names = vmstat_names(era, zone_types(era, present), "nr_vmscan_invalidate" in rows)
    return "".join(f"{n} {int(rows[n]) if n in rows else extra.get(n, 0)}\n" for n in names)


def modelled_rows(era: str, rows: Mapping[str, Any], present: Iterable[str]) -> tuple[list[str], list[str]]:
    """(modelled, printed as 0): the era's rows the engine's ``vmstat`` holds, and the others."""
    era = era_format(era)
    names = vmstat_names(era, zone_types(era, present), "nr_vmscan_invalidate" in rows)
    derived = set(_derived(era, [{}]))
    return [n for n in names if n in rows or n in derived], [n for n in names if n not in rows and n not in derived]


# --------------------------------------------------------------------------- /proc/zoneinfo


def _fls(x: int) -> int:
    return int(x).bit_length()


def stat_threshold(machine: Machine, pages: int) -> int:
    """The per-cpu vm_stat threshold of a zone (calculate_threshold / calculate_normal_threshold):
    2 * fls(CPUs) * (1 + fls(pages in 128 MB units)), at most 125. 4.11 counts managed pages."""
    mem = pages >> max(0, 27 - machine.page_shift)
    return min(125, 2 * _fls(machine.cpus) * (1 + _fls(mem)))


def _stat(z: Mapping[str, Any], name: str) -> int:
    return int((z.get("vm_stat") or {}).get(name, 0))


def _zone_item(era: str, z: Mapping[str, Any], name: str) -> int:
    """One zone_stat_item of the era from the engine's zone counters (named as 3.0 names them)."""
    if era == "3.0" and name == "nr_vmscan_invalidate":
        return _stat(z, "nr_vmscan_immediate_reclaim")
    if era == "4.11":
        if name == "nr_zone_write_pending":
            return _stat(z, "nr_dirty") + _stat(z, "nr_writeback") + _stat(z, "nr_unstable")
        if name.startswith("nr_zone_"):
            return _stat(z, "nr_" + name[len("nr_zone_"):])
    return _stat(z, name)


def _node_item(zones: Sequence[Mapping[str, Any]], name: str) -> int:
    if name == "nr_pages_scanned":
        return sum(int(z.get("pages_scanned", 0)) for z in zones)
    return sum(_stat(z, name) for z in zones)


def _protection(z: Mapping[str, Any], zts: Sequence[int]) -> str:
    reserve = list(z.get("lowmem_reserve") or [])
    return ", ".join(str(int(reserve[zt]) if zt < len(reserve) else 0) for zt in zts)


def _zone_title(z: Mapping[str, Any], sep: str = " ") -> str:
    return f"Node {z['node']}, zone{sep}{KERNEL_ZONE_NAME.get(z['zone'], z['zone']):>8}"



def _watermarks(z: Mapping[str, Any]) -> list[str]:
    """A 3.0/4.11 zoneinfo block's free pages and watermarks."""
    return [
        f"  pages free     {int(z['free'])}",
        f"        min      {int(z['min'])}",
        f"        low      {int(z['low'])}",
        f"        high     {int(z['high'])}",
    ]


def _pagesets(counts: Sequence[int], high: int, batch: int, threshold: int) -> list[str]:
    """A 3.0/4.11 zoneinfo block's per-cpu pagesets (one list per CPU since 2.6.25)."""
    lines = []
    for cpu, count in enumerate(counts):
        lines += [f"    cpu: {cpu}", f"              count: {count}", f"              high:  {high}",
                  f"              batch: {batch}", f"  vm stats threshold: {threshold}"]
    return lines

def zoneinfo_text(snap: Mapping[str, Any], machine: Machine, invalidate: bool = False) -> str:
    """/proc/zoneinfo of the snapshot, every populated zone in node and zone order."""
    era = machine.era
    zones = list(snap.get("zones") or [])
    zts = zone_types(era, (z["zone"] for z in zones))
    items = zone_stat_items(era, invalidate)
    first_of_node: set[int] = set()
    seen: set[int] = set()
    for i, z in enumerate(zones):
        if z["node"] not in seen:
            seen.add(z["node"])
            first_of_node.add(i)
    out: list[str] = []
    for i, z in enumerate(zones):
        batch, high = int(z["pcp_batch"]), int(z["pcp_high"])
        counts = [int(c) for c in z.get("pcp_count") or []]
        lines = [_zone_title(z)]
        if era == "2.6.18":
            active = _stat(z, "nr_active_anon") + _stat(z, "nr_active_file")
            inactive = _stat(z, "nr_inactive_anon") + _stat(z, "nr_inactive_file")
            lines += [
                f"  pages free     {int(z['free'])}",
                f"        min      {int(z['min'])}",
                f"        low      {int(z['low'])}",
                f"        high     {int(z['high'])}",
                f"        active   {active}",
                f"        inactive {inactive}",
                f"        scanned  {int(z['pages_scanned'])} (a: 0 i: 0)",
                f"        spanned  {int(z['spanned'])}",
                f"        present  {int(z['present'])}",
            ]
            lines += [f"    {name:<12} {_zone_item(era, z, name)}" for name in items]
            lines.append(f"        protection: ({_protection(z, zts)})")
            lines.append("  pagesets")
            threshold = stat_threshold(machine, int(z["present"]))
            for cpu, count in enumerate(counts):
                # The hot list is the engine's per-cpu list; the cold one is never used (count 0).
                # 2.6.18 leaves out a CPU whose lists are both empty.
                if count == 0:
                    continue
                for j, (c, h, b) in enumerate(((count, high, batch), (0, 2 * batch, max(1, batch // 2)))):
                    lines += [f"    cpu: {cpu} pcp: {j}", f"              count: {c}", f"              high:  {h}",
                              f"              batch: {b}"]
                lines.append(f"  vm stats threshold: {threshold}")
            lines += [
                f"  all_unreclaimable: {int(bool(z['all_unreclaimable']))}",
                f"  prev_priority:     {DEF_PRIORITY}",
                f"  temp_priority:     {DEF_PRIORITY}",
                f"  start_pfn:         {int(z['start_pfn'])}",
            ]
        elif era == "3.0":
            lines += [
                *_watermarks(z),
                f"        scanned  {int(z['pages_scanned'])}",
                f"        spanned  {int(z['spanned'])}",
                f"        present  {int(z['present'])}",
            ]
            lines += [f"    {name:<12} {_zone_item(era, z, name)}" for name in items]
            lines.append(f"        protection: ({_protection(z, zts)})")
            lines.append("  pagesets")
            threshold = stat_threshold(machine, int(z["present"]))
            lines += _pagesets(counts, high, batch, threshold)
            lines += [
                f"  all_unreclaimable: {int(bool(z['all_unreclaimable']))}",
                f"  start_pfn:         {int(z['start_pfn'])}",
                f"  inactive_ratio:    {int(z['inactive_ratio'])}",
            ]
        else:
            node_zones = [y for y in zones if y["node"] == z["node"]]
            if i in first_of_node:
                lines.append("  per-node stats")
                lines += [f"      {name:<12} {_node_item(node_zones, name)}" for name in _V411_NODE_ITEMS]
            lines += [
                *_watermarks(z),
                f"   node_scanned  {_node_item(node_zones, 'nr_pages_scanned')}",
                f"        spanned  {int(z['spanned'])}",
                f"        present  {int(z['present'])}",
                f"        managed  {int(z['managed'])}",
            ]
            lines += [f"      {name:<12} {_zone_item(era, z, name)}" for name in items]
            lines.append(f"        protection: ({_protection(z, zts)})")
            lines.append("  pagesets")
            threshold = stat_threshold(machine, int(z["managed"]))
            lines += _pagesets(counts, high, batch, threshold)
            unreclaimable = all(bool(y["all_unreclaimable"]) for y in node_zones)
            lines += [
                f"  node_unreclaimable:  {int(unreclaimable)}",
                f"  start_pfn:           {int(z['start_pfn'])}",
                "  node_inactive_ratio: 0",
            ]
        out.append("\n".join(lines) + "\n")
    return "".join(out)


# --------------------------------------------------------------------------- buddyinfo, pagetypeinfo


def buddyinfo_text(snap: Mapping[str, Any], machine: Machine) -> str:
    """/proc/buddyinfo: per populated zone, the free blocks of each order."""
    return "".join(
        _zone_title(z) + " " + "".join(f"{int(n):6d} " for n in z["nr_free"]) + "\n" for z in snap.get("zones") or []
    )


def pagetypeinfo_text(snap: Mapping[str, Any], machine: Machine) -> str:
    """/proc/pagetypeinfo (2.6.24 on): per node, free blocks per order and migrate type, then
    pageblocks per migrate type."""
    if machine.era == "2.6.18":
        raise MmtwinError("--proc: pagetypeinfo is not there in era 2.6.18 (no migrate types before 2.6.24); "
                          "vmstat, zoneinfo, buddyinfo or numastat")
    types = _MIGRATETYPES[machine.era]
    zones = list(snap.get("zones") or [])
    out: list[str] = []
    for node in sorted({int(z["node"]) for z in zones}):
        nz = [z for z in zones if int(z["node"]) == node]
        orders = len(nz[0]["nr_free"])
        out.append(f"Page block order: {machine.pageblock_order}\n")
        out.append(f"Pages per block:  {1 << machine.pageblock_order}\n\n")
        out.append(f"{'Free pages count per migrate type at order':<43} " + "".join(f"{o:6d} " for o in range(orders)) + "\n")
        for z in nz:
            by_type = z.get("free_by_type") or []
            for name, mt in types:
                counts = by_type[mt] if mt is not None and mt < len(by_type) else [0] * orders
                out.append(f"Node {node:4d}, zone {KERNEL_ZONE_NAME.get(z['zone'], z['zone']):>8}, type {name:>12} "
                           + "".join(f"{int(c):6d} " for c in counts) + "\n")
        out.append(f"\n{'Number of blocks type ':<23}" + "".join(f"{name:>12} " for name, _ in types) + "\n")
        for z in nz:
            blocks = z.get("pageblocks") or []
            out.append(_zone_title(z) + " " + "".join(
                f"{int(blocks[mt]) if mt is not None and mt < len(blocks) else 0:12d} " for _, mt in types) + "\n")
    return "".join(out)


# --------------------------------------------------------------------------- numastat


_NUMASTAT = (("numa_hit", "numa_hit"), ("numa_miss", "numa_miss"), ("numa_foreign", "numa_foreign"),
             ("interleave_hit", "numa_interleave"), ("local_node", "numa_local"), ("other_node", "numa_other"))


def numastat_node_text(snap: Mapping[str, Any], node: int) -> str:
    """/sys/devices/system/node/node<N>/numastat: the node's zones' NUMA counters summed."""
    zones = [z for z in snap.get("zones") or [] if int(z["node"]) == node]
    return "".join(f"{label} {sum(_stat(z, item) for z in zones)}\n" for label, item in _NUMASTAT)


def numastat_text(snap: Mapping[str, Any], machine: Machine) -> str:
    """Every node's numastat, each after ``node: <N>`` (as MMTests' numa-numastat monitor logs them)."""
    nodes = sorted({int(z["node"]) for z in snap.get("zones") or []})
    return "".join(f"node: {n}\n" + numastat_node_text(snap, n) for n in nodes)


# --------------------------------------------------------------------------- diskstats


def jiffies_to_msecs(j: int, hz: int) -> int:
    """kernel/time.c's jiffies_to_msecs (64-bit), printed as an unsigned int."""
    if 1000 % hz == 0:
        ms = (1000 // hz) * j
    elif hz % 1000 == 0:
        ms = -(-j // (hz // 1000))
    else:
        ms = j * 1000 // hz
    return ms % 2**32


def disk_names(devices: Sequence[tuple[str, int]]) -> list[list[str]]:
    """Per device, the names of its disks: a plain disk is the device; an md RAID-0's members take
    sd<letter> names in order, skipping the names the machine's devices use."""
    taken = {name for name, _ in devices}
    letters = (chr(c) for c in range(ord("a"), ord("z") + 1))
    free = (f"sd{c}" for c in letters if f"sd{c}" not in taken)
    return [[name] if n == 1 else [next(free, f"{name}-{i}") for i in range(n)] for name, n in devices]


def _devt(name: str, order: int) -> tuple[int, int]:
    """(major, minor): SCSI disks sd<letter> as the sd driver numbers them (sda-sdp major 8, sdq-sdz 65,
    16 minors a disk); md<N> 9, N; any other name 8, past the sd disks' minors."""
    m = re.fullmatch(r"sd([a-z])", name)
    if m:
        idx = ord(m.group(1)) - ord("a")
        return (8, 16 * idx) if idx < 16 else (65 + (idx - 16) // 16, 16 * ((idx - 16) % 16))
    m = re.fullmatch(r"md([0-9]+)", name)
    if m:
        return 9, int(m.group(1))
    return 8, 16 * (26 + order)


def diskstats_text(snap: Mapping[str, Any], machine: Machine) -> str:
    """/proc/diskstats: each disk's request accounting, then each md device's bios and sectors."""
    devs = snap.get("devices") or []
    names = disk_names(machine.devices)
    lines: list[tuple[tuple[int, int, int], str]] = []  # (md device after the disks, major, minor), text
    ms = lambda j: jiffies_to_msecs(int(j), machine.hz)  # noqa: E731
    mw = 4 if machine.era == "2.6.18" else 7  # the minor's width: "%4d %4d" in 2.6.18, "%4d %7d" from 2.6.28
    for i, (dev, disks) in enumerate(zip(devs, names)):
        for k, (io, name) in enumerate(zip(dev.get("disks") or [], disks)):
            devt = _devt(name, i * 32 + k)
            (r, w) = (0, 1)
            lines.append(((0, *devt), f"{devt[0]:4d} {devt[1]:{mw}d} {name} {io['ios'][r]} {io['merges'][r]} {io['sectors'][r]} "
                                f"{ms(io['ticks'][r])} {io['ios'][w]} {io['merges'][w]} {io['sectors'][w]} {ms(io['ticks'][w])} "
                                f"{io['in_flight']} {ms(io['io_ticks'])} {ms(io['time_in_queue'])}\n"))
        if len(disks) > 1:
            name = machine.devices[i][0]
            devt = _devt(name, i * 32 + 31)
            bios, sectors = dev.get("bios") or [0, 0], dev.get("sectors") or [0, 0]
            lines.append(((1, *devt),
                          f"{devt[0]:4d} {devt[1]:{mw}d} {name} {bios[0]} 0 {sectors[0]} 0 {bios[1]} 0 {sectors[1]} 0 0 0 0\n"))
    return "".join(text for _, text in sorted(lines, key=lambda x: x[0]))


# --------------------------------------------------------------------------- one file of one snapshot


def render(name: str, snap: Mapping[str, Any], machine: Machine) -> str:
    """The text of /proc file ``name`` (one of FILES) in the snapshot."""
    rows = snap.get("vmstat") or {}
    invalidate = "nr_vmscan_invalidate" in rows
    zones = snap.get("zones") or []
    if name == "vmstat":
        return vmstat_text(machine.era, rows, (z["zone"] for z in zones), zones)
    if name == "zoneinfo":
        return zoneinfo_text(snap, machine, invalidate)
    if name == "buddyinfo":
        return buddyinfo_text(snap, machine)
    if name == "pagetypeinfo":
        return pagetypeinfo_text(snap, machine)
    if name == "numastat":
        return numastat_text(snap, machine)
    if name == "diskstats":
        if machine.devices and "devices" not in snap:
            raise MmtwinError("--proc: diskstats is not in this run's snapshots (written by an mmtwin before "
                              "/proc/diskstats was recorded); run it again")
        return diskstats_text(snap, machine)
    raise MmtwinError(f"--proc: {name!r} is not allowed; one of {', '.join(FILES)}")


def files_of(era: str) -> tuple[str, ...]:
    """The /proc files a kernel of ``era`` has (no pagetypeinfo before 2.6.24)."""
    return tuple(f for f in FILES if not (f == "pagetypeinfo" and era_format(era) == "2.6.18"))


# --------------------------------------------------------------------------- snapshot times


_TIME = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s)?\s*$")


def parse_time_ms(text: str, option: str) -> int:
    """A simulated time: ``10s``, ``2.5s``, ``500ms`` or a bare number of seconds; whole milliseconds."""
    m = _TIME.match(str(text))
    if not m:
        raise MmtwinError(f"{option}: {text!r} is not a time; expected e.g. 10s, 2.5s or 500ms (simulated)")
    value, unit = float(m.group(1)), m.group(2) or "s"
    ms = value * 1000 if unit == "s" else value
    if abs(ms - round(ms)) > 1e-6:
        raise MmtwinError(f"{option}: {text!r} is not a whole number of milliseconds")
    ms = int(round(ms))
    if ms > MAX_SNAPSHOT_MS:
        raise MmtwinError(f"{option}: {text!r} is not allowed; 0 to {MAX_SNAPSHOT_MS // 1000}s (one simulated day)")
    return ms


def parse_times_ms(text: str, option: str) -> list[int]:
    """A comma-separated list of times, sorted, duplicates dropped."""
    parts = [p for p in str(text).split(",") if p.strip()]
    if not parts:
        raise MmtwinError(f"{option}: {text!r} is empty; expected times such as 10s,20s or 500ms")
    times = sorted({parse_time_ms(p, option) for p in parts})
    if len(times) > MAX_SNAPSHOTS_AT:
        raise MmtwinError(f"{option}: {len(times)} times is not allowed; at most {MAX_SNAPSHOTS_AT}")
    return times


def snapshot_label(snap: Mapping[str, Any]) -> str:
    """How a snapshot is named in a results tree and by ``--at``: start, end, or its time (``1500ms``)."""
    kind = snap.get("kind")
    if kind in ("start", "end"):
        return str(kind)
    return format_ms(int(snap["t_ns"]) // 1_000_000)


def format_ms(ms: int) -> str:
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def find_snapshot(snaps: Sequence[Mapping[str, Any]], at: str, option: str = "--at") -> Mapping[str, Any]:
    """The snapshot ``at`` names: ``start``, ``end`` or a simulated time at which one was taken."""
    if not snaps:
        raise MmtwinError(f"{option}: the run has no /proc snapshots (written by an mmtwin without them, or by a fake engine)")
    key = str(at).strip()
    if key in ("start", "end"):
        for s in snaps:
            if s.get("kind") == key:
                return s
    else:
        ms = parse_time_ms(key, option)
        for s in snaps:
            if s.get("kind") in ("at", "periodic") and int(s["t_ns"]) == ms * 1_000_000:
                return s
    have = ", ".join(dict.fromkeys(snapshot_label(s) for s in snaps))
    raise MmtwinError(f"{option}: no snapshot at {at!r}; the run has: {have}")


# --------------------------------------------------------------------------- the cap (mirrors the engine)

MAX_SNAPSHOTS_AT = 1024
MAX_PERIODIC = 4096
SNAPSHOT_BUDGET = 256 << 20
MAX_SNAPSHOT_MS = 86_400_000
DEFAULT_MAX_PERIODIC = 256
# NR_EV and NR_ZEV of the engine (vmstat.rs): event counters, and per-zone-type event counters.
_NR_EV = 27
_NR_ZEV = 7


def snapshot_bytes(spec: Mapping[str, Any]) -> int:
    """Upper bound of one snapshot's memory in the engine:
    8 x (NR_EV + 6 x NR_ZEV + 64 + zones x (4 x max_order + 64 + CPUs) + 4 x devices + 16 x disks) bytes."""
    m = spec["machine"]
    zones = sum(1 for n in m["nodes"] for z in n["zones"] if int(z["present_pages"]) > 0)
    cpus = sum(int(n["cpus"]) for n in m["nodes"])
    per_zone = 4 * int(m.get("max_order", 11)) + 64 + cpus
    devices = (m.get("storage") or {}).get("devices") or []
    disks = sum(int(d.get("disks", 1)) for d in devices)
    return 8 * (_NR_EV + 6 * _NR_ZEV + 64 + zones * per_zone + 4 * len(devices) + 16 * disks)


def max_periodic_allowed(spec: Mapping[str, Any], at_count: int) -> int:
    """The most periodic snapshots the budget leaves room for besides ``at_count`` and start and end."""
    return max(0, SNAPSHOT_BUDGET // snapshot_bytes(spec) - 2 - at_count)


def snapshots_spec(
    spec: Mapping[str, Any],
    at_ms: Sequence[int] = (),
    every_ms: Optional[int] = None,
    max_periodic: Optional[int] = None,
    *,
    option_at: str = "--proc-at",
    option_every: str = "--proc-every",
    option_max: str = "--proc-max",
) -> dict[str, Any]:
    """The spec's ``snapshots`` table, checked as the engine checks it (one line naming the option).
    ``max_periodic`` None: 256, lowered to what fits the budget on a large machine."""
    at = sorted(set(int(t) for t in at_ms))
    if len(at) > MAX_SNAPSHOTS_AT:
        raise MmtwinError(f"{option_at}: {len(at)} times is not allowed; at most {MAX_SNAPSHOTS_AT}")
    for t in at:
        if not 0 <= t <= MAX_SNAPSHOT_MS:
            raise MmtwinError(f"{option_at}: {format_ms(t)} is not allowed; 0 to {MAX_SNAPSHOT_MS // 1000}s")
    if every_ms is not None and not 1 <= int(every_ms) <= MAX_SNAPSHOT_MS:
        raise MmtwinError(f"{option_every}: {format_ms(int(every_ms))} is not allowed; 1ms to {MAX_SNAPSHOT_MS // 1000}s")
    each = snapshot_bytes(spec)
    room = max_periodic_allowed(spec, len(at))
    if (len(at) + 2) * each > SNAPSHOT_BUDGET:
        raise MmtwinError(f"{option_at}: {len(at)} times is too many on this machine; at most "
                          f"{max(0, SNAPSHOT_BUDGET // each - 2)} (a snapshot takes up to {each} bytes, "
                          f"{SNAPSHOT_BUDGET >> 20} MiB for all of a run's)")
    if max_periodic is None:
        cap = max(1, min(DEFAULT_MAX_PERIODIC, room))
        if every_ms is not None and room < 1:
            raise MmtwinError(f"{option_every}: no room for periodic snapshots on this machine (a snapshot takes up to "
                              f"{each} bytes, {SNAPSHOT_BUDGET >> 20} MiB for all of a run's); leave it out")
    else:
        cap = int(max_periodic)
        if not 1 <= cap <= MAX_PERIODIC:
            raise MmtwinError(f"{option_max}: {cap} is not allowed; 1 to {MAX_PERIODIC}")
        if every_ms is not None and cap > room:
            raise MmtwinError(f"{option_max}: {cap} is too many on this machine; at most {room} (a snapshot takes up to "
                              f"{each} bytes, {SNAPSHOT_BUDGET >> 20} MiB for all of a run's)")
    return {"at_ms": at, "every_ms": None if every_ms is None else int(every_ms), "max_periodic": cap}
