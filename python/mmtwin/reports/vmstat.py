"""/proc/vmstat text, per-zone summaries and the per-zone free-pages timeline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def proc_vmstat(result: Mapping[str, Any]) -> str:
    """``/proc/vmstat`` as the kernel prints it: ``name value`` per line, the engine's (era's) order."""
    return "".join(f"{name} {value}\n" for name, value in result.get("vmstat", {}).items())


def zone_label(zone: Mapping[str, Any]) -> str:
    return f"N{zone['node']}/{zone['zone']}"


def zone_table(result: Mapping[str, Any], *, populated_only: bool = True) -> str:
    """One row per zone: present pages, watermarks, free pages at the end, pages allocated."""
    zones = [z for z in result.get("zones", []) if not populated_only or z.get("present", 0) > 0]
    cols = ("present", "min", "low", "high", "free_end", "pgalloc")
    label_w = max([10, *(len(zone_label(z)) for z in zones)])
    widths = [max(len(c), *(len(str(z.get(c, ""))) for z in zones)) + 2 if zones else len(c) + 2 for c in cols]
    lines = [f"{'zone':<{label_w}}" + "".join(f"{c:>{w}}" for c, w in zip(cols, widths))]
    for z in zones:
        lines.append(f"{zone_label(z):<{label_w}}" + "".join(f"{z.get(c, ''):>{w}}" for c, w in zip(cols, widths)))
    return "\n".join(lines) + "\n"


def sample_indices(n: int, k: int) -> list[int]:
    """``k`` evenly spaced indices of ``range(n)``, always including the first and the last."""
    if n <= 0:
        return []
    if n <= k:
        return list(range(n))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def timeline_table(result: Mapping[str, Any], *, points: int = 8, populated_only: bool = True) -> str:
    """Free pages per zone (rows) at ``points`` evenly spaced sample times (columns)."""
    timeline = result.get("timeline", {})
    t_s: Sequence[float] = timeline.get("t_s", [])
    free: Sequence[Sequence[int]] = timeline.get("free_pages", [])
    zones = result.get("zones", [])
    idx = sample_indices(min(len(t_s), len(free)), points)
    if not idx:
        return "free pages timeline: no samples\n"
    keep = [i for i, z in enumerate(zones) if not populated_only or z.get("present", 0) > 0]
    cells = [[str(free[t][z]) for t in idx] for z in keep]
    w = max([9, *(len(c) for row in cells for c in row)]) + 1
    label_w = max([10, *(len(zone_label(zones[z])) for z in keep)])
    lines = [
        "free pages per zone over simulated time (s)",
        f"{'zone':<{label_w}}" + "".join(f"{t_s[t]:>{w}.2f}" for t in idx),
    ]
    for z, row in zip(keep, cells):
        lines.append(f"{zone_label(zones[z]):<{label_w}}" + "".join(f"{c:>{w}}" for c in row))
    return "\n".join(lines) + "\n"
