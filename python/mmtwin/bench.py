"""Engine throughput scenarios.

Each scenario is resolved here and then run in a fresh Python subprocess
(``python -m mmtwin.bench``, spec on stdin, one JSON line out), so the peak RSS
it reports (``ru_maxrss``) belongs to that scenario alone.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from mmtwin.config import WorkloadParams, load_kernel, load_machine
from mmtwin.errors import MmtwinError
from mmtwin.resolve import resolve_spec


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    machine: str
    kernel: str
    quick_scale: float  # --quick runs the scenario at this scale
    size_gb: int = 0  # memory hog scenarios
    threads: int = 0
    experiment: str | None = None  # or one run of an experiment file
    run: str | None = None


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "memhog-90g-altix28",
            "90 GB memory hog, 19 threads, 28-node Altix, 2.6.18-mm3 (seed 003's heaviest scan)",
            "sgi-altix-28node",
            "2.6.18-mm3",
            0.02,
            size_gb=90,
            threads=19,
        ),
        Scenario(
            "memhog-90g-altix28-zlc",
            "the same with the zonelist cache (2.6.18-mm3-zonelist-cache)",
            "sgi-altix-28node",
            "2.6.18-mm3-zonelist-cache",
            0.02,
            size_gb=90,
            threads=19,
        ),
        Scenario(
            "fsmark-seed000-vanilla",
            "seed 000's fs_mark (24 threads, 35 x 208 x 512 KiB files each) on the 2-node box, 3.0-rc6-vanilla: zone_reclaim, kswapd, flusher, slab shrinkers",
            "x86-64-2node-24cpu",
            "3.0-rc6-vanilla",
            0.03,
            experiment="zlcfirst",
            run="fsmark",
        ),
        Scenario(
            "largedd-seed000-zlcfirst",
            "seed 000's LARGE DD (14 copies of the tarfile) on the 2-node box, 3.0-rc6-zlcfirst: reads, buffered writes, reclaim",
            "x86-64-2node-24cpu",
            "3.0-rc6-zlcfirst",
            0.03,
            experiment="zlcfirst",
            run="largedd",
        ),
        Scenario(
            "fsmark-seed004-xfs-vanilla",
            "seed 004's fs_mark, one thread per CPU, on the 512M xfs box, 3.0-rc6-vanilla: kswapd writing dirty pages from the end of the LRU",
            "x86-64-4core-512m-xfs",
            "3.0-rc6-vanilla",
            0.1,
            experiment="reclaim-writeback-xfs",
            run="fsmark-512M",
        ),
    )
}


def scenario_spec(s: Scenario, quick: bool) -> dict[str, Any]:
    scale = s.quick_scale if quick else 1
    if s.experiment is not None:
        from mmtwin import experiment

        loaded = experiment.load(s.experiment)
        for planned in experiment.plan(loaded, scale=scale):
            if planned.kernel == s.kernel and planned.run == s.run:
                return planned.spec
        raise MmtwinError(f"bench scenario {s.name}: experiment {s.experiment} has no run {s.run!r} for {s.kernel}")
    machine = load_machine(s.machine)
    kernel = load_kernel(s.kernel)
    params = WorkloadParams(size_gb=s.size_gb, threads=s.threads)
    return resolve_spec(machine, kernel, params, seed=1, scale=scale)


def run_scenario(s: Scenario, quick: bool) -> dict[str, Any]:
    """Run one scenario in a fresh subprocess and return its measurements."""
    spec = scenario_spec(s, quick)
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "mmtwin.bench"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1].removeprefix("mmtwin: error: ")
        raise MmtwinError(f"bench scenario {s.name} failed: {last}")
    out = json.loads(proc.stdout)
    wall = out["wall_s"]
    return {
        "scenario": s.name,
        "page_ops": out["page_ops"],
        "faults": out["faults"],
        "wall_s": wall,
        "page_ops_per_s": out["page_ops"] / wall if wall > 0 else 0.0,
        "faults_per_s": out["faults"] / wall if wall > 0 else 0.0,
        "peak_rss_bytes": out["peak_rss_bytes"],
    }


def format_table(rows: list[dict[str, Any]]) -> str:
    """One row per scenario. A page operation is a page-level state change
    (allocate, free, LRU add/move/isolate/putback, a reclaim decision,
    dirtying, writeback start or end); one core runs each scenario."""
    w = max([len("scenario"), *(len(r["scenario"]) for r in rows)])
    lines = [
        f"{'scenario':<{w}} {'page_ops':>14} {'faults':>11} {'wall_s':>9} {'page_ops/s':>12} {'faults/s':>10} {'peak_rss_bytes':>15}"
    ]
    for r in rows:
        lines.append(
            f"{r['scenario']:<{w}} {r['page_ops']:>14} {r['faults']:>11} {r['wall_s']:>9.3f} "
            f"{r['page_ops_per_s']:>12.4g} {r['faults_per_s']:>10.4g} {r['peak_rss_bytes']:>15}"
        )
    return "\n".join(lines) + "\n"


def _child() -> int:
    """Subprocess side: spec JSON on stdin, one JSON line with the measurements on stdout."""
    from mmtwin.engine import run_spec

    spec = json.loads(sys.stdin.read())
    started = time.perf_counter()
    try:
        result = run_spec(spec)
    except MmtwinError as exc:
        print(f"mmtwin: error: {exc}", file=sys.stderr)
        return 2
    wall = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    sim = result.get("sim", {})
    print(
        json.dumps(
            {
                "page_ops": int(sim.get("page_ops", result.get("events", 0))),
                "faults": int(sim.get("faults", 0)),
                "wall_s": wall,
                "peak_rss_bytes": rss,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(_child())
