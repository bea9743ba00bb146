"""PNG plots (matplotlib, Agg backend): per-zone free pages over time, and the seed table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmtwin.reports.seedtable import Cell, short_name


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_zone_timeline(result: Mapping[str, Any], path: Path, *, title: str | None = None) -> Path:
    """Free pages of every populated zone against simulated time."""
    plt = _pyplot()
    timeline = result.get("timeline", {})
    t_s = list(timeline.get("t_s", []))
    free = timeline.get("free_pages", [])
    zones = result.get("zones", [])
    fig, ax = plt.subplots(figsize=(10, 5.5))
    for i, zone in enumerate(zones):
        if zone.get("present", 0) <= 0:
            continue
        ax.plot(t_s, [row[i] for row in free], linewidth=0.8, label=f"N{zone['node']}/{zone['zone']}")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("free pages")
    ax.set_title(title or f"{result.get('kernel', '?')} on {result.get('machine', '?')}: free pages per zone")
    if 0 < len(zones) <= 16:
        ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


def plot_seed_table(
    cells: Sequence[Cell],
    path: Path,
    base_name: str,
    new_name: str,
    *,
    published: Sequence[Cell] | None = None,
) -> Path:
    """System time per (GB, threads) cell for both kernels; published values as outlines if given."""
    plt = _pyplot()
    labels = [f"{c.size_gb:g}/{c.threads}" if isinstance(c.size_gb, float) else f"{c.size_gb}/{c.threads}" for c in cells]
    x = list(range(len(cells)))
    fig, axes = plt.subplots(2 if published else 1, 1, figsize=(11, 7 if published else 4), squeeze=False)
    ax = axes[0][0]
    w = 0.4
    ax.bar([i - w / 2 for i in x], [c.base.sys for c in cells], w, label=base_name)
    ax.bar([i + w / 2 for i in x], [c.new.sys for c in cells], w, label=short_name(new_name, base_name))
    ax.set_ylabel("sys (s), simulated")
    ax.set_xticks(x, labels, rotation=45, fontsize="small")
    ax.legend(fontsize="small")
    if published:
        by_key = {(c.size_gb, c.threads): c for c in published}
        pub = [by_key.get((c.size_gb, c.threads)) for c in cells]
        ax2 = axes[1][0]
        ax2.bar([i - w / 2 for i in x], [p.base.sys if p else 0 for p in pub], w, label=base_name)
        ax2.bar([i + w / 2 for i in x], [p.new.sys if p else 0 for p in pub], w, label=short_name(new_name, base_name))
        ax2.set_ylabel("sys (s), published")
        ax2.set_xticks(x, labels, rotation=45, fontsize="small")
        ax2.set_xlabel("GB / threads")
    else:
        ax.set_xlabel("GB / threads")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path
