"""A stand-in for ``mmtwin._core.run`` with the result shape of docs/engine-api.md.

Deterministic in the spec; the numbers are made up (sys time grows with the
pages touched and shrinks 10% with a zonelist cache when several threads run).
"""

from __future__ import annotations

from typing import Any


def fake_run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    m, k, w = spec["machine"], spec["kernel"], spec["workload"]
    pages = w["bytes"] // m["page_size"]
    threads = w["threads"]
    factor = 0.9 if k["zlc"] != "none" and threads > 1 else 1.0
    sys_s = round(pages * 1e-4 * factor, 6)
    user_s = round(pages * 2e-5, 6)
    elapsed = round((sys_s + user_s) / threads, 6)
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
        "sim": {"zone_checks": pages * 2, "zlc_skips": 0, "zlc_zaps": 0, "zlc_marked_full": 0,
                "second_passes": 0, "lines_touched": pages, "remote_lines": 0, "lock_spin_ns": 0,
                "rmqueue_bulk": pages // 16, "oom": False},
        "events": pages * 5,
        "perf": {"wall_s": 0.001, "events_per_s": pages * 5000.0},
    }
