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
    size_gb: int
    threads: int
    quick_scale: float  # --quick runs the scenario at this scale


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "memhog-90g-altix28",
            "90 GB memory hog, 19 threads, 28-node Altix, 2.6.18-mm3 (seed 003's heaviest scan)",
            "sgi-altix-28node",
            "2.6.18-mm3",
            90,
            19,
            0.02,
        ),
        Scenario(
            "memhog-90g-altix28-zlc",
            "the same with the zonelist cache (2.6.18-mm3-zonelist-cache)",
            "sgi-altix-28node",
            "2.6.18-mm3-zonelist-cache",
            90,
            19,
            0.02,
        ),
    )
}


def scenario_spec(s: Scenario, quick: bool) -> dict[str, Any]:
    machine = load_machine(s.machine)
    kernel = load_kernel(s.kernel)
    params = WorkloadParams(size_gb=s.size_gb, threads=s.threads)
    return resolve_spec(machine, kernel, params, seed=1, scale=s.quick_scale if quick else 1)


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
    return {
        "scenario": s.name,
        "events": out["events"],
        "wall_s": out["wall_s"],
        "events_per_s": out["events"] / out["wall_s"] if out["wall_s"] > 0 else 0.0,
        "peak_rss_bytes": out["peak_rss_bytes"],
    }


def format_table(rows: list[dict[str, Any]]) -> str:
    w = max([len("scenario"), *(len(r["scenario"]) for r in rows)])
    lines = [f"{'scenario':<{w}} {'events':>14} {'wall_s':>10} {'events_per_s':>14} {'peak_rss_bytes':>16}"]
    for r in rows:
        lines.append(
            f"{r['scenario']:<{w}} {r['events']:>14} {r['wall_s']:>10.3f} {r['events_per_s']:>14.4g} {r['peak_rss_bytes']:>16}"
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
    print(json.dumps({"events": int(result.get("events", 0)), "wall_s": wall, "peak_rss_bytes": rss}))
    return 0


if __name__ == "__main__":
    sys.exit(_child())
