"""A stand-in for ``mmtwin._core.run`` with the result shape of docs/engine-api.md (Result v2).

Deterministic in the spec; the numbers are made up. Memory hog: sys time
grows with the pages touched and shrinks 10% with a zonelist cache when
several threads run. File workloads (fsmark, largedd, mmapstream): the work
grows with the bytes written; a kernel with zlc = "first-eligible" (zlcfirst)
makes fs_mark faster, scans a third less directly, wakes kswapd, copies with
dd faster and reads less back; zlc_reconsider helps a little more. So with
the fake, every claim of seed 000 holds.
"""

from __future__ import annotations

from typing import Any

KIB = 1024
MIB = 2**20


def _zones(m: dict[str, Any]) -> list[dict[str, Any]]:
    zones = []
    for node, n in enumerate(m["nodes"]):
        for z in n["zones"]:
            zones.append(
                {
                    "node": node,
                    "zone": z["name"],
                    "present": z["present_pages"],
                    "min": z["present_pages"] // 256,
                    "low": z["present_pages"] * 5 // 1024,
                    "high": z["present_pages"] * 6 // 1024,
                    "lowmem_reserve": [0] * len(n["zones"]),
                    "free_end": z["present_pages"] // 2,
                    "pgalloc": z["present_pages"] // 2,
                }
            )
    return zones


def fake_run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    if spec["workload"]["kind"] == "memhog":
        return _memhog(spec)
    return _file_workload(spec)


def _memhog(spec: dict[str, Any]) -> dict[str, Any]:
    m, k, w = spec["machine"], spec["kernel"], spec["workload"]
    pages = w["bytes"] // m["page_size"]
    threads = w["threads"]
    factor = 0.9 if k["zlc"] != "none" and threads > 1 else 1.0
    sys_s = round(pages * 1e-4 * factor, 6)
    user_s = round(pages * 2e-5, 6)
    elapsed = round((sys_s + user_s) / threads, 6)
    zones = _zones(m)
    free0 = [z["present"] for z in zones]
    free1 = [z["free_end"] for z in zones]
    return {
        "kernel": k["name"],
        "machine": m["name"],
        "times": {"user_s": user_s, "sys_s": sys_s, "elapsed_s": elapsed},
        "vmstat": {
            "nr_free_pages": sum(free1),
            "pgalloc_dma": pages,
            "pgfree": pages // 3,
            "numa_hit": pages - threads,
            "numa_miss": threads,
        },
        "threads": [
            {"cpu": i, "node": 0, "pages": pages // threads, "user_s": user_s / threads,
             "sys_s": sys_s / threads, "end_s": elapsed}
            for i in range(threads)
        ],
        "zones": zones,
        "timeline": {"t_s": [0.0, 0.1, 0.2], "free_pages": [free0, free0, free1]},
        "sim": {"zone_checks": pages * 2, "zlc_skips": 0, "zlc_zaps": 0, "zlc_marked_full": 0, "zlc_clears": 0, "swap_slots_used": 0,
                "second_passes": 0, "lines_touched": pages, "remote_lines": 0, "lock_spin_ns": 0,
                "rmqueue_bulk": pages // 16, "oom": False},
        "events": pages * 5,
        "perf": {"wall_s": 0.001, "events_per_s": pages * 5000.0},
    }


def _file_workload(spec: dict[str, Any]) -> dict[str, Any]:
    m, k, w = spec["machine"], spec["kernel"], spec["workload"]
    kind = w["kind"]
    ps = m["page_size"]
    first = k["zlc"] == "first-eligible"
    better = (1.35 if first else 1.0) * (1.05 if k["zlc_reconsider"] else 1.0)
    written = 0  # bytes written to files
    read_back = 0  # bytes read from the disk
    benchmark: dict[str, Any]
    if kind == "fsmark":
        per_iter = w["threads"] * w["files"]
        written = per_iter * w["iterations"] * w["file_bytes"]
        iterations = []
        elapsed = 0.0
        for i in range(w["iterations"]):
            rate = 100.0 * better * (0.5 + ((i * 7) % 10) / 10)
            iterations.append({"files_per_sec": round(rate, 3), "overhead_us": int(1_000_000 * (1 + (i * 3) % 5) / better)})
            elapsed += per_iter / rate
        benchmark = {"iterations": iterations}
        direct = int(written // ps * 0.15 * (0.68 if first else 1.0))
    elif kind == "largedd":
        tar = w["tar_bytes"]
        written = tar * (w["copies"] + 1)
        read_back = int(tar * w["copies"] * (0.02 if first else 0.16))
        download = tar / MIB / w["download_mib_s"]
        dd = tar * w["copies"] / MIB / (40.0 * better)
        delete = w["copies"] * tar / 2**30 * (1.7 / better)
        benchmark = {"phases": [{"name": "download tar", "seconds": int(download)},
                                {"name": "dd source files", "seconds": int(dd)},
                                {"name": "delete source", "seconds": int(delete)}]}
        elapsed = download + dd + delete + 1.0
        direct = int(written // ps * (0.8 if first else 0.7))
    else:
        written = w["bytes"]
        elapsed = written / MIB / (55.0 * better ** 0.5)
        benchmark = {"elapsed_s": round(elapsed, 3)}
        direct = int(written // ps * (0.85 if first else 1.0))
    pages = written // ps
    kswapd = int(direct * 0.2) if first else 0
    start = {"nr_free_pages": 100000, "nr_dirty": 10, "nr_writeback": 0, "pgpgin": 4000, "pgpgout": 2000,
             "pswpin": 0, "pswpout": 0, "pgalloc_dma32": 5000, "pgalloc_normal": 9000,
             "pgsteal_dma32": 0, "pgsteal_normal": 0, "pgscan_kswapd_dma32": 0, "pgscan_kswapd_normal": 0,
             "pgscan_direct_dma32": 0, "pgscan_direct_normal": 0, "kswapd_steal": 0, "kswapd_inodesteal": 0,
             "pginodesteal": 0, "slabs_scanned": 0, "nr_vmscan_write": 0}
    delta = {"nr_free_pages": -90000, "nr_dirty": 5, "nr_writeback": 2,
             "pgpgin": read_back // KIB, "pgpgout": written // KIB, "pgalloc_dma32": pages // 3, "pgalloc_normal": pages - pages // 3,
             "pgsteal_dma32": direct // 10 + kswapd // 2, "pgsteal_normal": direct - direct // 10 - direct // 100 + kswapd - kswapd // 2,
             "pgscan_kswapd_dma32": kswapd // 2, "pgscan_kswapd_normal": kswapd - kswapd // 2,
             "pgscan_direct_dma32": direct // 10, "pgscan_direct_normal": direct - direct // 10,
             "kswapd_steal": kswapd, "kswapd_inodesteal": kswapd // 7, "pginodesteal": direct // 9,
             "slabs_scanned": (direct + kswapd) // 16 * 128 // 128, "nr_vmscan_write": 3 if first else 0}
    vmstat = {name: start[name] + delta.get(name, 0) for name in start}
    sys_s = round(pages * 2e-5 / better + elapsed * 0.01, 6)
    user_s = round(pages * 1e-6, 6)
    zones = _zones(m)
    free0 = [z["present"] for z in zones]
    free1 = [z["free_end"] for z in zones]
    page_ops = pages * 6 + direct + kswapd
    return {
        "kernel": k["name"],
        "machine": m["name"],
        "times": {"user_s": user_s, "sys_s": sys_s, "elapsed_s": round(elapsed, 6)},
        "vmstat_start": start,
        "vmstat": vmstat,
        "tasks": [
            {"pid": 100, "comm": kind, "kind": "user", "user_s": user_s, "sys_s": sys_s, "iowait_s": 1.0, "wakeups": 0},
            {"pid": 2, "comm": "kswapd0", "kind": "kswapd", "user_s": 0.0, "sys_s": kswapd * 1e-7, "iowait_s": 0.0,
             "wakeups": 17 if first else 0},
            {"pid": 3, "comm": "flush-8:0", "kind": "flusher", "user_s": 0.0, "sys_s": 0.5, "iowait_s": 0.0, "wakeups": 40},
        ],
        "benchmark": {kind: benchmark},
        "threads": [],
        "zones": zones,
        "timeline": {"t_s": [0.0, 0.1, 0.2], "free_pages": [free0, free0, free1],
                     "nr_dirty": [0, 10, 5], "nr_writeback": [0, 2, 0]},
        "sim": {"zone_checks": pages * 2, "zlc_skips": 0, "zlc_zaps": 0, "zlc_marked_full": 0, "zlc_clears": 0, "swap_slots_used": 0, "second_passes": 0,
                "lines_touched": pages, "remote_lines": 0, "lock_spin_ns": 0, "rmqueue_bulk": pages // 16,
                "oom": False, "page_ops": page_ops, "faults": pages if kind == "mmapstream" else 0},
        "events": page_ops,
        "perf": {"wall_s": 0.001, "events_per_s": page_ops * 1000.0},
    }
