"""Fit seed 004's unpublished RAID-0 chunk size on the *baseline* kernel.

Seed 004 says only "4 disks configured as RAID-0". The chunk size decides
how a write is cut into requests on the member disks, and so how many
requests a member's queue holds for a given amount of writeback, whether
it reaches its congestion threshold, and whether direct reclaim sleeps in
wait_iff_congested. mdadm's default chunk was 64 KiB until mdadm 3.1
(2009) and 512 KiB since, and any power of two can be asked for.

This runs 3.0-rc6 vanilla only, every configuration of both experiment
files (fs_mark and the micro benchmark, xfs and ext4), once per candidate
chunk, and scores each candidate by the mean |ln((simulated + 1) /
(published + 1))|, each term capped at ln 10 as in tools/fit_seed000.py (a
figure the model does not produce at all counts as ten times off and no
more), over every vanilla figure the seed publishes for them: the summary
tables' Files/s mean and both elapsed times (30 figures), the 512M-xfs
detailed run's reclaim figures, and the micro benchmark's 512M-xfs vmstat
block.
The patched kernels' figures are never read: they are what the model
predicts with the chunk chosen here.

    python tools/fit_storage.py [--scale S] [--jobs N]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from fractions import Fraction

from mmtwin import experiment as experiments
from mmtwin.config import Machine, validate
from mmtwin.engine import run_many
from mmtwin.reproduce import reclaim_writeback as rw

CANDIDATES = (64, 128, 256, 512)
VANILLA = rw.KERNELS[0]
# Seed 004, micro benchmark on 512M-xfs, "MMTests Statistics: vmstat",
# vanilla column (pgpgin/pgpgout in KiB, the rest in pages).
MICRO_VMSTAT = {
    "Page Ins": 11018260,
    "Page Outs": 16632838,
    "Swap Ins": 296167,
    "Swap Outs": 221626,
    "Direct pages scanned": 4129424,
    "Kswapd pages scanned": 9152837,
    "Kswapd pages reclaimed": 3388122,
    "Direct pages reclaimed": 735425,
}


def micro_vmstat(result: dict) -> dict[str, float]:
    v, v0 = result["vmstat"], result["vmstat_start"]

    def d(prefix: str) -> int:
        return sum(x - v0.get(k, 0) for k, x in v.items() if k.startswith(prefix))

    kswapd_steal = d("kswapd_steal")
    return {
        "Page Ins": d("pgpgin"),
        "Page Outs": d("pgpgout"),
        "Swap Ins": d("pswpin"),
        "Swap Outs": d("pswpout"),
        "Direct pages scanned": d("pgscan_direct"),
        "Kswapd pages scanned": d("pgscan_kswapd"),
        "Kswapd pages reclaimed": kswapd_steal,
        "Direct pages reclaimed": d("pgsteal") - kswapd_steal,
    }


def with_chunk(machine: Machine, chunk_kib: int) -> Machine:
    data = machine.model_dump(exclude_unset=True)
    for dev in data["storage"]["devices"]:
        if dev.get("disks", 1) > 1:
            dev["chunk_kib"] = chunk_kib
    return validate(Machine, data, f"machine {machine.name}")


def score_chunk(chunk_kib: int, scale: Fraction, jobs: int | None) -> tuple[float, list[tuple[str, float, float]]]:
    wanted = {f"{b}-{c}" for b in ("fsmark", "micro") for c in rw.CONFIGS}
    planned = []
    for fs in rw.FILESYSTEMS:
        loaded = experiments.load(f"{rw.NAME}-{fs}")
        vanilla = [k for k in loaded.kernels if k.name == VANILLA]
        loaded = dataclasses.replace(loaded, machine=with_chunk(loaded.machine, chunk_kib), kernels=vanilla)
        planned += [(fs, p) for p in experiments.plan(loaded, scale=scale) if p.run in wanted]
    results = run_many([p.spec for _, p in planned], jobs, label=f"chunk {chunk_kib} KiB")
    sim: dict[tuple[str, str], dict[str, float]] = {}
    rows: list[tuple[str, float, float]] = []
    for (fs, p), r in zip(planned, results):
        bench, cfg = p.run.split("-", 1)
        sim.setdefault((fs, cfg), {}).update(rw._figures(r) if bench == "fsmark" else rw._micro_figures(r))
        if (fs, p.run) == ("xfs", "micro-512M"):
            got = micro_vmstat(r)
            rows += [(f"xfs micro-512M {k}", pub, got[k]) for k, pub in MICRO_VMSTAT.items()]
    published = rw._published_figures()
    for (fs, cfg), figs in sorted(sim.items()):
        for name, pub in published[(fs, cfg)][VANILLA].items():
            rows.append((f"{fs} {cfg} {name}", pub, figs[name]))
    errs = [min(abs(math.log((s + 1) / (p + 1))), math.log(10)) for _, p, s in rows if p > 0]
    return sum(errs) / len(errs), rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=Fraction, default=Fraction(1))
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args()
    scores = {}
    for chunk in CANDIDATES:
        score, rows = score_chunk(chunk, args.scale, args.jobs)
        scores[chunk] = score
        print(f"chunk {chunk} KiB: mean capped |ln(simulated/published)| = {score:.3f} over {len(rows)} vanilla figures")
        for name, pub, got in rows:
            print(f"  {name:<48} published {pub:>12.6g}  simulated {got:>12.6g}")
    best = min(scores, key=lambda c: scores[c])
    print("scores: " + ", ".join(f"{c} KiB {s:.3f}" for c, s in scores.items()) + f"; best {best} KiB")


if __name__ == "__main__":
    main()
