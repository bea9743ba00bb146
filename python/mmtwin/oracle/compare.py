"""`mmtwin oracle compare`: the same workload on the real kernel and on the twin, counters side by side.

The real kernel is booted as for `oracle run`, with one addition: before its
"before" snapshot the guest writes vm.min_free_kbytes and
vm.lowmem_reserve_ratio back with their own values. Both sysctls make the
kernel compute its watermarks and protection again (setup_per_zone_wmarks,
setup_per_zone_lowmem_reserve) from the pages it manages at that moment,
the pages the dump shows; at boot it computed them earlier, while the
initramfs and the boot allocations were still held, so from slightly
different managed counts.

The twin then gets the guest's own layout: per node, one zone for each zone
the guest manages pages in (present = managed), the pages not free in the
"before" snapshot held as reserved, the guest's CPUs and distances, the
guest's min_free_kbytes, lowmem_reserve_ratio and zone_reclaim_mode. Its
kernel profile, 6.1-boot, is the twin's 4.11 era (the newest it models) with
6.1's per-cpu list sizing: Linux 6.1 computes watermarks and protection with the same formulas (min in
proportion to managed pages, low and high spaced by max(min/4,
managed x watermark_scale_factor / 10000), protection = managed pages of the
higher zones / ratio), and at boot its watermark boost is 0. The profile
(6.1-boot) differs from 4.11 where 6.1 does, in the per-cpu list sizes
(pcp_sizing "zone-low"); the min_free_kbytes clamp (64 MiB in 4.11, 256 MiB in
6.1) does not enter because the guest's own value is passed.

Compared: every zone's min, low, high, protection and per-cpu list batch
and high (they must agree exactly), and the workload's change of the placement counters per node
(numa_hit, numa_miss, numa_foreign, local_node, other_node), of pgalloc per
zone and of pgfault (the real guest also allocates for its shell, page tables and the
snapshot itself, so these agree within a tolerance, 5% by default, or within a
noise floor of 1% of the hog's pages, at least 1000).

For a file workload (mmapstream, fsmark) the twin also gets a disk standing
in for the guest's virtio one (VIRTIO_DISK) and the guest's vm sysctls;
only what the workload decides is held (FILE_HELD: the mapped writer's
faults and dirtied pages, fs_mark's dirtied pages), and what reclaim and
writeback did, with the placement, is reported beside the twin's
(FILE_REPORTED).
"""

from __future__ import annotations

import copy
from typing import Any, Optional

from mmtwin.errors import MmtwinError
from mmtwin.oracle.run import describe_workload

TWIN_KERNEL = "6.1-boot"
ZONE_TYPES = ("DMA", "DMA32", "Normal")
# The twin's names for them (its specification and results).
TWIN_ZONE = {"DMA": "DMA", "DMA32": "DMA32", "Normal": "NORMAL"}
PLACEMENT = ("numa_hit", "numa_miss", "numa_foreign", "local_node", "other_node")
# The twin's per-zone counter behind each numastat field.
_TWIN_NUMA = {"numa_hit": "numa_hit", "numa_miss": "numa_miss", "numa_foreign": "numa_foreign",
              "local_node": "numa_local", "other_node": "numa_other"}
WMARK_RECOMPUTE = "WMARK_RECOMPUTE=1\n"
# The guest's sysctls the twin's kernel takes as they are (names as the twin's kernel specification has them).
_TWIN_SYSCTLS = ("dirty_ratio", "dirty_background_ratio", "dirty_expire_centisecs", "dirty_writeback_centisecs",
                 "swappiness", "vfs_cache_pressure", "min_unmapped_ratio", "min_slab_ratio", "watermark_boost_factor")
# The twin's stand-in for the guest's virtio disk: QEMU serves it from the host's page cache
# (cache=unsafe), so it has no seek; 6.1's virtio-blk has a queue of 256 and requests of up to
# 1280 KiB, with mq-deadline. Its rate and access time are set per run from the guest's own
# (twin_disk, below); these are what a run without the guest's calibration gets.
VIRTIO_DISK = {"name": "vda", "disks": 1, "chunk_kib": 64, "bandwidth_mib_s": 200, "access_us": 100, "rpm": 0,
               "track_seek_us": 0, "full_seek_us": 0, "nr_requests": 256, "max_sectors_kib": 1280,
               "elevator": "deadline"}
# File workloads: counters that follow from the workload alone (a dirtied page per page written, and for
# the mapped writer a fault per page), held within the tolerance; and what reclaim and writeback did, printed beside the twin's
# and not held: the twin reclaims with its own 4.11-era model (per-zone LRU, 3.0's decisions), not
# with 6.1's, and how much is written back before the files go depends on how long the run takes.
FILE_HELD = {"mmapstream": ("pgfault", "nr_dirtied"), "fsmark": ("nr_dirtied",), "largedd": ("nr_dirtied",)}
# The memory hog with --swap-mib is under reclaim: where its pages land, and how often they are swapped out
# and back in, follow from what reclaim did, so they are reported and not held; held is the one fault per
# page of a single pass (SWAP_HELD), the later passes' faults being as many as the pages swapped out.
SWAP_HELD = ("pgfault",)
SWAP_REPORTED = ("pgfault", "pgmajfault", "pswpout", "pswpin", "pgscan_kswapd", "pgsteal_kswapd", "pgscan_direct",
                 "pgsteal_direct", "allocstall", "pgactivate", "pgdeactivate", "pgrotated", "pgrefill",
                 "nr_vmscan_write", "pageoutrun", "zone_reclaim_failed")
FILE_REPORTED = ("pgfault", "pgmajfault", "pgpgin", "pgpgout", "nr_written", "pgscan_kswapd", "pgsteal_kswapd", "pgscan_direct",
                 "pgsteal_direct", "allocstall", "pgrotated", "pgactivate", "pgdeactivate", "nr_vmscan_write",
                 "nr_vmscan_immediate_reclaim", "slabs_scanned", "kswapd_inodesteal", "pginodesteal",
                 "zone_reclaim_failed")


def check_twin_sysctls(settings: list[tuple[str, str]]) -> None:
    """Before the boot: a sysctl the guest takes and the twin will copy must be one the twin allows
    (its bounds are 3.0's, narrower than 6.1's in places: swappiness up to 100, not 200)."""
    from mmtwin.config import SYSCTL_LIMITS

    for key, value in settings:
        name = key[len("vm."):] if key.startswith("vm.") else None
        if name not in _TWIN_SYSCTLS:
            continue
        _, lo, hi, what = SYSCTL_LIMITS[name]
        if not (value.isdigit() and lo <= int(value) <= (hi if hi is not None else 2**63 - 1)):
            allowed = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise MmtwinError(f"--sysctl: {key}={value} is not allowed with oracle compare; the twin takes {name} "
                              f"as an integer {allowed} ({what})")


def twin_spec(machine: Any, doc: dict[str, Any]) -> tuple[dict[str, Any], Optional[dict[str, Any]]]:
    """The twin's engine specification for the real run `doc` (from oracle_run), and how its disk was
    derived from the guest's (twin_disk; None without a disk)."""
    from mmtwin.config import WorkloadParams, load_kernel
    from mmtwin.resolve import resolve_spec

    before = doc["snapshots"]["before"]
    zones = [z for z in before["zoneinfo"] if z.get("managed")]
    unknown = sorted({z["zone"] for z in zones} - set(ZONE_TYPES))
    if unknown:
        raise MmtwinError(f"oracle compare: the guest manages pages in zone {unknown[0]}, which the twin's "
                          f"x86-64 layout does not have (it has {', '.join(ZONE_TYPES)})")
    g = doc["guest"]
    nodes = []
    for n in range(g["nodes"]):
        mine = [z for z in zones if z["node"] == n]
        mine.sort(key=lambda z: ZONE_TYPES.index(z["zone"]))
        managed = sum(z["managed"] for z in mine)
        free = sum(z["free"] for z in mine)
        nodes.append({"cpus": g["cpus_per_node"][n],
                      "zones": [{"name": TWIN_ZONE[z["zone"]], "present_pages": z["managed"]} for z in mine],
                      "reserved_pages": max(0, managed - free)})
    values = doc["kernel"]["sysctl"]
    try:
        mfk = int(values["vm.min_free_kbytes"])
        ratio = [int(x) for x in values["vm.lowmem_reserve_ratio"].split()]
        zrm = int(values.get("vm.zone_reclaim_mode", "0"))
    except (KeyError, ValueError) as exc:
        raise MmtwinError(f"oracle compare: the guest did not report its sysctls ({exc})") from None
    wl = doc["workload"]
    work: Any
    kind = wl.get("kind", "memhog")
    if kind == "memhog":
        work = WorkloadParams(size_gb=wl["size_mib"] / 1024, threads=wl["threads"], cpus=wl["cpus"],
                              passes=wl.get("passes", 1))
    elif kind == "fsmark":
        from mmtwin.config import FsmarkParams

        work = FsmarkParams(kind="fsmark", **wl["fsmark"], cpus=wl["cpus"])
    elif kind == "largedd":
        from mmtwin.config import LargeddParams

        ld = wl["largedd"]
        work = LargeddParams(kind="largedd", tar_mib=ld["tar_mib"], copies=ld["copies"], dd_kib=ld["dd_kib"],
                             download_mib_s=ld["download_mib_s"], cpus=wl["cpus"])
    else:
        from mmtwin.config import MmapstreamParams

        work = MmapstreamParams(kind="mmapstream", size_mib=wl["size_mib"], threads=wl["threads"], cpus=wl["cpus"])
    spec = resolve_spec(machine, load_kernel(TWIN_KERNEL), work)
    spec["machine"]["nodes"] = nodes
    spec["machine"]["distance"] = [list(row) for row in g["distance"]]
    spec["machine"]["storage"] = None
    k = spec["kernel"]
    k["min_free_kbytes"] = mfk
    # The twin's zone types DMA, DMA32, Normal, HighMem: the guest's first three ratios, and
    # Normal's for HighMem (x86-64 has none).
    k["lowmem_reserve_ratio"] = (ratio[:3] + [ratio[2] if len(ratio) > 2 else 32])[:4]
    k["zone_reclaim_mode"] = zrm
    for name in _TWIN_SYSCTLS:
        text = values.get(f"vm.{name}")
        if text is not None and text.strip().isdigit():
            k[name] = int(text)
    if kind in ("memhog", "mmapstream"):
        spec["workload"]["bytes"] = wl["size_mib"] << 20
    from mmtwin.oracle.run import uses_disk

    if uses_disk(wl):
        disk = twin_disk(spec, doc)
        spec["machine"]["storage"] = twin_storage(wl, disk)
        return spec, {"bandwidth_mib_s": disk["bandwidth_mib_s"], "access_us": disk["access_us"],
                      "calibration": disk["calibration"]}
    return spec, None


CALIB_HOG_MIB = 64         # the guest's calibration memory hog (initramfs.py), one thread on CPU 0


def twin_disk(spec: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """The twin's disk, as fast against the twin's CPUs as the guest's virtio disk was against the
    guest's: the guest's O_DIRECT write rate (1 MiB writes) times F and its time a 4 KiB write over F,
    where F is how much longer the guest took for its 64 MiB calibration hog than the twin takes for the
    same hog on the same layout (an emulated guest's CPUs are many times slower than the twin's costs
    say, while QEMU writes its disk at the host's speed). `spec`: the twin's specification for the run."""
    cal = doc.get("calibration")
    if not cal:
        return {**VIRTIO_DISK, "calibration": None}
    from mmtwin.engine import run_spec

    probe = copy.deepcopy(spec)
    probe["machine"]["storage"] = None
    probe["workload"] = {"kind": "memhog", "bytes": CALIB_HOG_MIB << 20, "threads": 1, "stride": 4096, "passes": 1,
                         "cpus": [0], "mems_allowed": None}
    probe["trace"] = None
    th = run_spec(probe)["threads"][0]
    twin_s = th["end_s"] - th["start_s"]
    guest_s = cal["memhog"]["seconds"]
    if twin_s <= 0:
        raise MmtwinError("oracle compare: the twin's calibration hog took no time; the machine preset's fault costs "
                          "are 0")
    factor = guest_s / twin_s
    w1, w4 = cal["write_1m"], cal["write_4k"]
    guest_mib_s = w1["bytes"] / w1["seconds"] / (1 << 20)
    guest_us = w4["seconds"] * 1e6 / w4["writes"]
    bandwidth = min(1_000_000, max(1, round(guest_mib_s * factor)))
    access = min(1_000_000_000, max(0, round(guest_us / factor)))
    return {**VIRTIO_DISK, "bandwidth_mib_s": bandwidth, "access_us": access,
            "calibration": {"guest_mib_s": guest_mib_s, "guest_write_4k_us": guest_us, "guest_hog_s": guest_s,
                            "twin_hog_s": twin_s, "factor": factor}}


def twin_storage(wl: dict[str, Any], disk: Optional[dict[str, Any]] = None) -> Optional[dict[str, Any]]:
    """The twin's stand-ins for the guest's virtio disks: a file workload's (vda, with its filesystem), and
    the swap disk (the next one, or vda alone), each a `disk` (default VIRTIO_DISK). The twin's storage
    always names a filesystem: with the swap disk alone, a 1 MiB one ahead of the swap area, which the
    memory hog never touches."""
    base = {k: v for k, v in (disk or VIRTIO_DISK).items() if k != "calibration"}
    devices: list[dict[str, Any]] = []
    fs = None
    # A disk the guest has only for its trace is not the workload's: the twin does without it.
    if "disk_mib" in wl and wl.get("disk_for") != "trace":
        devices.append({**base, "size_mib": wl["disk_mib"]})
        fs = {"kind": wl["fs"], "device": 0, "size_mib": wl["disk_mib"]}
    swap = None
    if wl.get("swap_mib"):
        extra = 0 if fs is not None else 1
        devices.append({**base, "name": f"vd{'ab'[len(devices)]}", "size_mib": wl["swap_mib"] + extra})
        swap = {"device": len(devices) - 1, "size_mib": wl["swap_mib"]}
        if fs is None:
            fs = {"kind": "ext4", "device": 0, "size_mib": extra}
    if fs is None:
        return None
    return {"devices": devices, "fs": fs, "swap": swap}


def _ratio(real: float, twin: float) -> Optional[float]:
    return None if real == 0 else twin / real


def compare(doc: dict[str, Any], twin: dict[str, Any], tolerance: float = 0.05) -> dict[str, Any]:
    """Rows of real vs twin figures and the two verdicts."""
    tz = {(z["node"], z["zone"]): z for z in twin["zones"]}
    zones = []
    exact = True
    for z in doc["snapshots"]["before"]["zoneinfo"]:
        if not z.get("managed"):
            continue
        t = tz.get((z["node"], TWIN_ZONE.get(z["zone"], z["zone"])))
        if t is None:
            exact = False
            zones.append({"node": z["node"], "zone": z["zone"], "missing_in_twin": True})
            continue
        row = {"node": z["node"], "zone": z["zone"], "managed": z["managed"]}
        # 6.1 prints each watermark with the zone's watermark boost added (min_wmark_pages() and the
        # rest: _watermark[] + watermark_boost); a fragmenting fallback before the snapshot may have set
        # one. The twin's zones report _watermark[] (its boost apart): compare the watermarks under it.
        boost = z.get("boost") or 0
        if boost:
            row["boost"] = boost
        for key, tkey in (("min", "min"), ("low", "low"), ("high", "high")):
            row[key] = {"real": z[key] - boost, "twin": t[tkey]}
            exact &= z[key] - boost == t[tkey]
        # Protection against allocations for each zone type the twin and the guest both have.
        n = len(ZONE_TYPES)
        real_p, twin_p = list(z["protection"][:n]), list(t["lowmem_reserve"][:n])
        row["protection"] = {"real": real_p, "twin": twin_p}
        exact &= real_p == twin_p
        # Per-cpu lists: every CPU's high and batch are the same here (one value per zone).
        sets = z.get("pagesets") or []
        if sets:
            for key, tkey in (("batch", "pcp_batch"), ("high", "pcp_high")):
                values = sorted({ps[key] for ps in sets if key in ps})
                real_v = values[0] if len(values) == 1 else values
                row[f"pcp_{key}"] = {"real": real_v, "twin": t[tkey]}
                exact &= real_v == t[tkey]
        zones.append(row)
    # Placement: the change over the workload. The guest allocates for itself too (its shell, the
    # snapshots, kernel threads on every node's CPUs): a noise floor of the larger of 1000 pages and 1%
    # of the hog's pages, within which counts are shown but agree by definition.
    real_numa = doc["summary"]["numastat"]
    noise = max(1000, (doc["workload"]["size_mib"] << 8) // 100)
    kind = doc["workload"].get("kind", "memhog")
    swapping = kind == "memhog" and bool(doc["workload"].get("swap_mib"))
    # Where the twin's own reclaim decides the outcome: the placement is reported, not held.
    reclaim_decides = kind != "memhog" or swapping
    if kind != "memhog":
        held_keys, reported_keys = FILE_HELD[kind], FILE_REPORTED
    else:
        held_keys = SWAP_HELD if doc["workload"].get("passes", 1) == 1 else ()
        reported_keys = SWAP_REPORTED
    rows = []
    reported: list[dict[str, Any]] = []
    within = True

    def agrees(real: int, tw: int) -> bool:
        return abs(tw - real) <= max(noise, tolerance * max(real, tw))

    tv, tv0 = twin.get("vmstat", {}), twin.get("vmstat_start", {})

    def twin_delta(key: str) -> int:
        if key == "allocstall":
            return sum(tv[k] - tv0.get(k, 0) for k in tv if k.startswith("allocstall"))
        return tv.get(key, 0) - tv0.get(key, 0)

    real_delta = doc["summary"]["vmstat_delta"]
    if reclaim_decides:
        # Held: what the workload decides. The placement rows below go to `reported`: where a page
        # lands depends on what reclaim freed where.
        for key in held_keys:
            real, tw = real_delta.get(key, 0), twin_delta(key)
            ok = agrees(real, tw)
            within &= ok
            rows.append({"what": key, "real": real, "twin": tw, "ratio": _ratio(real, tw), "ok": ok})
        for key in reported_keys:
            if key in held_keys:
                continue
            if key == "allocstall":
                real = sum(v for k, v in real_delta.items() if k.startswith("allocstall"))
            else:
                real = real_delta.get(key, 0)
            tw = twin_delta(key)
            reported.append({"what": key, "real": real, "twin": tw, "ratio": _ratio(real, tw)})

    for node in sorted(real_numa, key=int):
        for key in PLACEMENT:
            real = real_numa[node][key]["delta"]
            tw = sum(z[_TWIN_NUMA[key]] for z in twin["zones"] if z["node"] == int(node))
            if reclaim_decides:
                reported.append({"what": f"node {node} {key}", "real": real, "twin": tw, "ratio": _ratio(real, tw)})
                continue
            ok = agrees(real, tw)
            within &= ok
            rows.append({"what": f"node {node} {key}", "real": real, "twin": tw, "ratio": _ratio(real, tw), "ok": ok})
    real_pgalloc = doc["summary"]["pgalloc"]
    for ztype in ZONE_TYPES:
        key = ztype.lower()
        if key not in real_pgalloc:
            continue
        real = real_pgalloc[key]
        tw = sum(z["pgalloc"] for z in twin["zones"] if z["zone"] == TWIN_ZONE[ztype])
        if reclaim_decides:
            reported.append({"what": f"pgalloc_{key}", "real": real, "twin": tw, "ratio": _ratio(real, tw)})
            continue
        ok = agrees(real, tw)
        within &= ok
        rows.append({"what": f"pgalloc_{key}", "real": real, "twin": tw, "ratio": _ratio(real, tw), "ok": ok})
    # Page faults: the hog's one per page, and the guest's own.
    real_faults = real_delta.get("pgfault")
    if real_faults is not None and not reclaim_decides:
        tw = twin_delta("pgfault")
        ok = agrees(real_faults, tw)
        within &= ok
        rows.append({"what": "pgfault", "real": real_faults, "twin": tw, "ratio": _ratio(real_faults, tw), "ok": ok})
    return {"zones": zones, "placement": rows, "reported": reported, "watermarks_exact": exact,
            "placement_within": within, "tolerance": tolerance, "noise_pages": noise}


# The tracepoints of 6.1's vmscan group that have another name in the twin's 4.11-era trace.
_TRACE_ALIASES = {"mm_vmscan_write_folio": "mm_vmscan_writepage"}


def compare_traces(real: dict[str, Any], twin: dict[str, Any], twin_path: str) -> dict[str, Any]:
    """Events per vmscan tracepoint, the guest's against the twin's (its own era's names; writeback_*
    and the twin's other groups are not in the guest's trace and are left out)."""
    as_61 = {old: new for new, old in _TRACE_ALIASES.items()}
    tw: dict[str, int] = {}
    for name, n in twin["events"].items():
        if name.startswith(("mm_vmscan_", "mm_shrink_slab")):
            tw[as_61.get(name, name)] = tw.get(as_61.get(name, name), 0) + n
    rows = []
    for name in sorted(set(real["events"]) | set(tw)):
        r, t = real["events"].get(name, 0), tw.get(name, 0)
        rows.append({"event": name, "real": r, "twin": t, "ratio": _ratio(r, t)})
    return {"rows": rows, "real_path": real["path"], "twin_path": twin_path, "overruns": real["overruns"]}


def format_compare(doc: dict[str, Any], cmp: dict[str, Any]) -> str:
    g, k = doc["guest"], doc["kernel"]
    wl = doc["workload"]
    lines = [
        f"oracle compare: {doc['machine']}: Linux {k['release']} ({doc['accel']}) beside the twin ({TWIN_KERNEL} profile, "
        f"the guest's layout and sysctls); {g['nodes']} nodes, CPUs {'+'.join(map(str, g['cpus_per_node']))}, "
        f"memory {'+'.join(map(str, g['memory_mib']))} MiB",
        f"workload: {describe_workload(wl)}",
        "",
        "zones (pages)           managed   min real/twin    low real/twin   high real/twin  pcp batch,high real/twin  protection real | twin",
    ]
    for z in cmp["zones"]:
        if z.get("missing_in_twin"):
            lines.append(f"  node {z['node']} {z['zone']:<8} missing in the twin")
            continue
        def pair(key: str) -> str:
            return f"{z[key]['real']}/{z[key]['twin']}"
        pcp = (f"{z['pcp_batch']['real']},{z['pcp_high']['real']}/{z['pcp_batch']['twin']},{z['pcp_high']['twin']}"
               if "pcp_batch" in z else "-")
        lines.append(f"  node {z['node']} {z['zone']:<8} {z['managed']:>10} {pair('min'):>15} {pair('low'):>15} "
                     f"{pair('high'):>15} {pcp:>25}  ({', '.join(map(str, z['protection']['real']))}) | "
                     f"({', '.join(map(str, z['protection']['twin']))})")
    disk = cmp.get("twin_disk")
    if disk:
        cal = disk["calibration"]
        lines.append("")
        if cal:
            lines.append(f"twin's disk: {disk['bandwidth_mib_s']} MiB/s, {disk['access_us']} us a request = the guest's "
                         f"virtio disk ({cal['guest_mib_s']:.0f} MiB/s in 1 MiB O_DIRECT writes, {cal['guest_write_4k_us']:.0f} us "
                         f"a 4 KiB one) with its times divided by {cal['factor']:.2f}, the guest's time for a 64 MiB hog "
                         f"({cal['guest_hog_s']:.3f} s) over the twin's ({cal['twin_hog_s']:.3f} s)")
        else:
            lines.append(f"twin's disk: {disk['bandwidth_mib_s']} MiB/s, {disk['access_us']} us a request (the guest "
                         "measured nothing: a run without calibration)")
    lines.append("")
    held = "held (change over the workload)" if cmp.get("reported") else "placement (change over the workload)"
    lines.append(f"{held:<44}real         twin   twin/real")
    if not cmp["placement"]:
        lines.append("  (none: with several passes under swap, every count follows from what reclaim did)")
    for r in cmp["placement"]:
        if r["real"] == 0 and r["twin"] == 0:
            continue
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        mark = "" if r["ok"] else f"  outside {cmp['tolerance']:.0%}"
        lines.append(f"  {r['what']:<36} {r['real']:>12} {r['twin']:>12} {ratio:>11}{mark}")
    if cmp.get("reported"):
        lines.append("")
        lines.append("reported, not held (the twin's own reclaim)   real         twin   twin/real")
        for r in cmp["reported"]:
            if r["real"] == 0 and r["twin"] == 0:
                continue
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
            lines.append(f"  {r['what']:<36} {r['real']:>12} {r['twin']:>12} {ratio:>11}")
    tr = cmp.get("trace")
    if tr:
        lines.append("")
        lines.append(f"trace events (real {tr['real_path']}, twin {tr['twin_path']}; real buffer overruns "
                     f"{tr['overruns']})")
        for r in tr["rows"]:
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
            lines.append(f"  {r['event']:<36} {r['real']:>12} {r['twin']:>12} {ratio:>11}")
    lines.append("")
    what = "held counters" if cmp.get("reported") else "placement"
    lines.append(f"watermarks, protection and per-cpu lists: {'exact' if cmp['watermarks_exact'] else 'DIFFERENT'}; "
                 f"{what}: {'within' if cmp['placement_within'] else 'NOT within'} {cmp['tolerance']:.0%} "
                 f"(or within the guest's own {cmp['noise_pages']} pages: 1% of the hog, at least 1000; "
                 "counters 0 on both sides left out)")
    return "\n".join(lines) + "\n"
