"""Fit a machine's cost model to the *baseline* kernel's measured figures.

Used once per machine preset; the fitted figures are written into the
preset by hand, with this script's output quoted in docs/calibration.md.

Only cells whose page placement does not depend on the costs are used (a
single thread, or every thread allocating on its own node): there, system
time is exactly linear in the per-operation costs, so each cost's
coefficient is measured by running the engine with that cost alone set to
1000 ns, and the costs are found by least squares on relative error. The
patched kernel's figures are never read: they are what the model predicts.

    python tools/calibrate.py
"""

from __future__ import annotations

import numpy as np

from mmtwin.config import WorkloadParams, load_kernel, load_machine
from mmtwin.engine import run_many
from mmtwin.reproduce.zonelist_cache import PUBLISHED

MACHINE = "sgi-altix-28node"
BASELINE = "2.6.18-mm3"
# (GB, threads) cells with no contention-dependent placement.
CELLS = [(12, 1), (38, 1), (64, 1), (90, 1), (12, 19), (12, 37), (12, 55)]
FITTED = ["fault_ns", "clear_remote_ns_per_kib", "line_miss_ns"]
# Fixed from hardware, not fitted: fault_ns and clear_ns_per_kib are both
# charged once per page, so the figures cannot tell them apart. Local
# clear: ~2.5 GB/s of stores for one Itanium 2 CPU -> ~400 ns per KiB.
# line_miss_ns: SGI's local memory latency of the Altix 3700, about 145 ns
# (docs/presets.md). Fitted until 2026-11-23; with the coherent cache model
# the seven cells no longer separate it from the per-page costs (the fit
# made clear_remote_ns_per_kib negative), so the hardware figure is used.
FIXED = {"clear_ns_per_kib": 400, "line_hit_ns": 3, "buddy_page_ns": 200}
UNIT = 1000


def spec_for(machine, kernel, gb, n, cost):
    from mmtwin.resolve import resolve_spec

    spec = resolve_spec(machine, kernel, WorkloadParams(size_gb=gb, threads=n))
    spec["machine"]["cost"] = dict(cost)
    # The node ports bind only when many CPUs clear pages on one node at
    # once, which none of the cells does; with every other cost at zero a
    # remote clear would take the port's time instead, so the measuring
    # runs leave the ports out and system time stays linear in the costs.
    spec["machine"]["link_mb_s"] = 0
    return spec


def main() -> None:
    machine = load_machine(MACHINE)
    kernel = load_kernel(BASELINE)
    zero = {k: 0 for k in FITTED + list(FIXED) + ["user_store_ns"]}
    specs = []
    for gb, n in CELLS:
        for name in FITTED + list(FIXED) + ["user_store_ns"]:
            cost = dict(zero)
            cost[name] = UNIT
            specs.append(spec_for(machine, kernel, gb, n, cost))
    results = run_many(specs)
    ncomp = len(FITTED) + len(FIXED) + 1
    published = {(c.size_gb, c.threads): c.base for c in PUBLISHED}
    rows, target, user_coef, user_target = [], [], [], []
    for i, (gb, n) in enumerate(CELLS):
        rs = results[i * ncomp:(i + 1) * ncomp]
        coef = [r["times"]["sys_s"] / UNIT for r in rs]  # seconds per ns of each cost
        fixed_part = sum(coef[len(FITTED) + j] * v for j, v in enumerate(FIXED.values()))
        sys_pub = published[(gb, n)].sys
        rows.append([c / sys_pub for c in coef[:len(FITTED)]])
        target.append((sys_pub - fixed_part) / sys_pub)
        user_coef.append(rs[-1]["times"]["user_s"] / UNIT)
        user_target.append(published[(gb, n)].user)
    x, *_ = np.linalg.lstsq(np.array(rows), np.array(target), rcond=None)
    if (x < 0).any():
        # A cost is one physical operation: a negative one means the cells
        # cannot separate the costs fitted, not a figure to adopt.
        raise SystemExit(f"calibrate: a fitted cost is negative ({dict(zip(FITTED, x.round()))}); fix fewer costs from hardware")
    user_ns = float(np.dot(user_coef, user_target) / np.dot(user_coef, user_coef))
    print("fitted on", BASELINE, "cells", CELLS)
    for name, v in zip(FITTED, x):
        print(f"  {name} = {round(v)}")
    for name, v in FIXED.items():
        print(f"  {name} = {v} (fixed)")
    print(f"  user_store_ns = {round(user_ns)}")
    fit = np.array(rows) @ x
    for (gb, n), f, t in zip(CELLS, fit, target):
        print(f"  cell {gb:>2} GB {n:>2} threads: fitted/published sys = {f / t if t else 0:.3f}")


if __name__ == "__main__":
    main()
