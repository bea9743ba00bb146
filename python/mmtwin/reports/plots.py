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


ZONE_LINES_MAX = 16  # more populated zones than this: a heat map instead of a line per zone


def plot_zone_timeline(result: Mapping[str, Any], path: Path, *, title: str | None = None) -> Path:
    """Free pages of every populated zone against simulated time: a labelled line per zone, or,
    with more than ZONE_LINES_MAX zones (the 28-node box), a heat map (zones down, time across)."""
    plt = _pyplot()
    timeline = result.get("timeline", {})
    t_s = list(timeline.get("t_s", []))
    free = timeline.get("free_pages", [])
    zones = result.get("zones", [])
    populated = [(i, f"N{z['node']}/{z['zone']}") for i, z in enumerate(zones) if z.get("present", 0) > 0]
    title = title or f"{result.get('kernel', '?')} on {result.get('machine', '?')}: free pages per zone"
    if len(populated) > ZONE_LINES_MAX and t_s:
        fig, ax = plt.subplots(figsize=(10, 1.5 + 0.22 * len(populated)))
        grid = [[row[i] for row in free] for i, _ in populated]
        im = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis",
                       extent=(float(t_s[0]), float(t_s[-1]), len(populated) - 0.5, -0.5))
        ax.set_yticks(range(len(populated)), [name for _, name in populated], fontsize="x-small")
        fig.colorbar(im, ax=ax, label="free pages")
        ax.set_xlabel("simulated time (s)")
        ax.set_title(title)
    else:
        fig, ax = plt.subplots(figsize=(10, 5.5))
        for i, name in populated:
            ax.plot(t_s, [row[i] for row in free], linewidth=0.8, label=name)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("free pages")
        ax.set_title(title)
        if populated:
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
    same_scale: bool = False,
) -> Path:
    """System time per (GB, threads) cell for both kernels. With ``published`` cells, a first
    panel puts the published and simulated change of the new kernel's sys time against the
    baseline (%) side by side on one axis; with ``same_scale`` (a run at published scale) the
    published times are also drawn beside the simulated ones (hatched) on the absolute axis."""
    plt = _pyplot()
    labels = [f"{c.size_gb:g}/{c.threads}" if isinstance(c.size_gb, float) else f"{c.size_gb}/{c.threads}" for c in cells]
    x = list(range(len(cells)))
    by_key = {(c.size_gb, c.threads): c for c in published or []}
    pub = [by_key.get((c.size_gb, c.threads)) for c in cells]
    fig, axes = plt.subplots(2 if published else 1, 1, figsize=(11, 7.5 if published else 4), squeeze=False)
    new_label = short_name(new_name, base_name)
    if published:
        ax = axes[0][0]

        def change(c: Cell | None) -> float:
            return 100.0 * (c.new.sys - c.base.sys) / c.base.sys if c is not None and c.base.sys else 0.0

        ax.bar([i - 0.2 for i in x], [change(p) for p in pub], 0.4, label="published", color="#999999")
        ax.bar([i + 0.2 for i in x], [change(c) for c in cells], 0.4, label="simulated", color="#1f77b4")
        ax.axhline(0, color="black", linewidth=0.5)
        ax.set_ylabel(f"sys, {new_label} vs {base_name} (%)", fontsize="small")
        ax.set_xticks(x, labels, rotation=45, fontsize="small")
        ax.set_title("change of system time: published and simulated on one axis", fontsize="small")
        ax.legend(fontsize="small")
    ax = axes[-1][0]
    both = bool(published) and same_scale
    w = 0.2 if both else 0.4
    offsets = (-1.5 * w, -0.5 * w, 0.5 * w, 1.5 * w) if both else (-w / 2, w / 2)
    ax.bar([i + offsets[0] for i in x], [c.base.sys for c in cells], w, label=f"{base_name}, simulated", color="#1f77b4")
    ax.bar([i + offsets[1] for i in x], [c.new.sys for c in cells], w, label=f"{new_label}, simulated", color="#ff7f0e")
    if both:
        ax.bar([i + offsets[2] for i in x], [p.base.sys if p else 0 for p in pub], w, label=f"{base_name}, published",
               color="white", edgecolor="#1f77b4", hatch="//")
        ax.bar([i + offsets[3] for i in x], [p.new.sys if p else 0 for p in pub], w, label=f"{new_label}, published",
               color="white", edgecolor="#ff7f0e", hatch="//")
    ax.set_ylabel("sys (s)" + ("" if both else ", simulated"), fontsize="small")
    ax.set_xticks(x, labels, rotation=45, fontsize="small")
    ax.set_xlabel("GB / threads")
    ax.legend(fontsize="small")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- the HTML report's figures
#
# Each takes plain series (label, x, y) and returns the PNG's bytes (and writes
# it to ``path`` if given). One line, bar or panel per run: a comparison
# draws every kernel on the same axes.

Series = tuple[str, Sequence[float], Sequence[float]]
SMALL_MULTIPLES_MAX = 8  # more nodes than this: a heat map per run instead of a panel per node
GROUPED_BARS_MAX = 8  # more runs than this: markers along the runs instead of a bar per run
HEATMAP_RUNS_PER_FIGURE = 12


def _png(fig: Any, path: Path | None) -> bytes:
    import io
    import warnings

    plt = _pyplot()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # A crowded figure still draws; the layout engine's complaint is not the user's business.
        warnings.simplefilter("ignore", UserWarning)
        fig.savefig(buf, format="png", dpi=80, metadata={"Software": None})
    plt.close(fig)
    data = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def plot_free_per_node(runs: Sequence[tuple[str, Sequence[float], Mapping[int, Sequence[int]]]], title: str,
                       path: Path | None = None) -> list[bytes]:
    """Free pages per node over simulated time, for each run ``(label, t_s, {node: free pages})``.

    Up to SMALL_MULTIPLES_MAX nodes: one panel per node, one line per run.
    More: a heat map per run (nodes down, time across), HEATMAP_RUNS_PER_FIGURE
    runs to a figure. Returns one PNG per figure.
    """
    plt = _pyplot()
    nodes = sorted({n for _, _, per in runs for n in per})
    if not nodes:
        return []
    if len(nodes) <= SMALL_MULTIPLES_MAX:
        cols = min(4, len(nodes))
        rows = (len(nodes) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols + 2, 2.4 * rows + 0.8), squeeze=False, sharex=True,
                                 layout="constrained")
        for i, node in enumerate(nodes):
            ax = axes[i // cols][i % cols]
            for label, t, per in runs:
                if node in per:
                    ax.plot(t, per[node], linewidth=1.0, label=label)
            ax.set_title(f"node {node}", fontsize="small")
            ax.tick_params(labelsize="x-small")
            if i % cols == 0:
                ax.set_ylabel("free pages", fontsize="small")
            if i // cols == rows - 1:
                ax.set_xlabel("simulated time (s)", fontsize="small")
        for j in range(len(nodes), rows * cols):
            axes[j // cols][j % cols].set_visible(False)
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right upper", fontsize="x-small", ncol=_legend_cols(len(labels)))
        fig.suptitle(title, fontsize="medium")
        return [_png(fig, path)]
    out = []
    for start in range(0, len(runs), HEATMAP_RUNS_PER_FIGURE):
        chunk = runs[start : start + HEATMAP_RUNS_PER_FIGURE]
        fig, axes = plt.subplots(len(chunk), 1, figsize=(10, 1.0 + 1.9 * len(chunk)), squeeze=False, layout="constrained")
        vmax = max([max(per[n]) for _, _, per in chunk for n in per if len(per[n])] or [1])
        for ax, (label, t, per) in zip(axes[:, 0], chunk):
            grid = [list(per.get(n, [0] * len(t))) for n in nodes]
            extent = (float(t[0]) if len(t) else 0.0, float(t[-1]) if len(t) else 1.0, nodes[-1] + 0.5, nodes[0] - 0.5)
            im = ax.imshow(grid, aspect="auto", interpolation="nearest", extent=extent, vmin=0, vmax=vmax, cmap="viridis")
            ax.set_ylabel("node", fontsize="small")
            ax.set_title(label, fontsize="small")
            ax.tick_params(labelsize="x-small")
        axes[-1][0].set_xlabel("simulated time (s)", fontsize="small")
        fig.colorbar(im, ax=axes[:, 0].tolist(), label="free pages", shrink=0.6)
        fig.suptitle(title + (f" ({start // HEATMAP_RUNS_PER_FIGURE + 1})" if len(runs) > HEATMAP_RUNS_PER_FIGURE else ""),
                     fontsize="medium")
        p = None if path is None else Path(path).with_name(f"{Path(path).stem}-{start // HEATMAP_RUNS_PER_FIGURE + 1}.png")
        out.append(_png(fig, p))
    return out


def plot_panels(panels: Sequence[tuple[str, str, Sequence[Series]]], title: str, path: Path | None = None) -> bytes:
    """Line panels stacked vertically, each ``(panel title, y label, [(run label, x, y)])``."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.6 * len(panels) + 0.6), squeeze=False, sharex=True,
                             layout="constrained")
    for ax, (name, ylabel, series) in zip(axes[:, 0], panels):
        for label, x, y in series:
            ax.plot(x, y, linewidth=1.0, label=label)
        ax.set_title(name, fontsize="small")
        ax.set_ylabel(ylabel, fontsize="small")
        ax.tick_params(labelsize="x-small")
        if series:
            ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.01, 0.5), ncol=_legend_cols(len(series)))
    axes[-1][0].set_xlabel("simulated time (s)", fontsize="small")
    fig.suptitle(title, fontsize="medium")
    return _png(fig, path)


def plot_grouped_bars(panels: Sequence[tuple[str, Sequence[str], Mapping[str, Sequence[float]]]], title: str,
                      path: Path | None = None) -> bytes:
    """Bar panels, each ``(panel title, category names, {run label: one value per category})``:
    a group of bars per category, one bar per run (the same colour in every panel); with more
    than GROUPED_BARS_MAX runs, the runs along x and a line of markers per category."""
    plt = _pyplot()
    many = any(len(values) > GROUPED_BARS_MAX for _, _, values in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, (4.8 if many else 2.8) * len(panels) + 0.6), squeeze=False,
                             layout="constrained")
    for ax, (name, categories, values) in zip(axes[:, 0], panels):
        if len(values) > GROUPED_BARS_MAX:
            # Too many runs for bars: a run per x position, a line of markers per category.
            runs = list(values)
            for j, category in enumerate(categories):
                ax.plot(range(len(runs)), [values[r][j] for r in runs], marker="o", markersize=3, linewidth=0.8,
                        label=category)
            ax.set_xticks(range(len(runs)), runs, rotation=90, fontsize="xx-small")
            ax.set_title(name, fontsize="small")
            ax.tick_params(axis="y", labelsize="x-small")
            ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.01, 0.5))
            continue
        n = max(1, len(values))
        width = 0.8 / n
        x = list(range(len(categories)))
        for i, (label, ys) in enumerate(values.items()):
            ax.bar([c - 0.4 + width * (i + 0.5) for c in x], list(ys), width, label=label)
        ax.set_xticks(x, list(categories), fontsize="x-small")
        ax.set_title(name, fontsize="small")
        ax.tick_params(axis="y", labelsize="x-small")
        ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.01, 0.5), ncol=_legend_cols(len(values)))
    fig.suptitle(title, fontsize="medium")
    return _png(fig, path)


def plot_cdfs(panels: Sequence[tuple[str, Sequence[Series]]], title: str, path: Path | None = None) -> bytes:
    """CDF panels side by side, each ``(panel title, [(run label, durations in ms, fraction below)])``,
    on a log x axis; a panel with no series says so."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels) + 1.5, 3.6), squeeze=False, layout="constrained")
    for ax, (name, series) in zip(axes[0], panels):
        for label, x, y in series:
            # A distribution held in one bin is one point: drawn large enough to see.
            ax.plot(x, y, linewidth=1.0, marker="o" if len(x) == 1 else ".", markersize=6 if len(x) == 1 else 3,
                    label=label)
        ax.set_title(name, fontsize="x-small")
        ax.set_xscale("log")
        xs = [float(v) for _, x, _ in series for v in x if v > 0]
        if xs:
            # At least two decades, so a distribution held in one or two bins still reads as one.
            lo, hi = min(xs) / 4, max(xs) * 4
            if hi / lo < 100:
                mid = (lo * hi) ** 0.5
                lo, hi = mid / 10, mid * 10
            ax.set_xlim(lo, hi)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("duration (ms)", fontsize="small")
        ax.tick_params(labelsize="x-small")
        ax.grid(True, which="major", linewidth=0.3)
        if series:
            ax.legend(fontsize="xx-small", loc="lower right", ncol=_legend_cols(len(series)))
        else:
            ax.text(0.5, 0.5, "none in any run", ha="center", va="center", transform=ax.transAxes, fontsize="small")
    axes[0][0].set_ylabel("fraction shorter", fontsize="small")
    fig.suptitle(title, fontsize="medium")
    return _png(fig, path)


def plot_published_simulated(claims: Sequence[Mapping[str, Any]], title: str, path: Path | None = None) -> bytes:
    """A reproduction's claims: per claim, published and simulated figures of each kernel side by side
    on one axis (``claims`` as in ``mmtwin reproduce --json``: id, published and simulated lists of
    {kernel, figure, value})."""
    plt = _pyplot()
    cols = min(3, max(1, len(claims)))
    rows = (len(claims) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows + 0.6), squeeze=False, layout="constrained")
    for i, claim in enumerate(claims):
        ax = axes[i // cols][i % cols]
        pub = list(claim.get("published", []))
        sim = list(claim.get("simulated", []))
        keys = []
        for r in pub + sim:
            key = (str(r.get("kernel", "")), str(r.get("figure", "")))
            if key not in keys:
                keys.append(key)
        by = {lab: {(str(r.get("kernel", "")), str(r.get("figure", ""))): float(r["value"]) for r in rs}
              for lab, rs in (("published", pub), ("simulated", sim))}
        x = list(range(len(keys)))
        for j, lab in enumerate(("published", "simulated")):
            ax.bar([c - 0.2 + 0.4 * j for c in x], [by[lab].get(k, 0.0) for k in keys], 0.4, label=lab)
        ax.axhline(0, color="black", linewidth=0.5)
        several = len({k[1] for k in keys}) > 1
        ax.set_xticks(x, [k[0].split("-")[-1] + (f"\n{k[1][:22]}" if several else "") for k in keys], fontsize="x-small")
        ax.set_title(f"{claim.get('id', '')} {'held' if claim.get('held') else 'not held'}", fontsize="small")
        ax.set_ylabel(keys[0][1] if len({k[1] for k in keys}) == 1 and keys else "value", fontsize="x-small")
        ax.tick_params(axis="y", labelsize="x-small")
        if i == 0:
            ax.legend(fontsize="x-small")
    for j in range(len(claims), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    fig.suptitle(title, fontsize="medium")
    return _png(fig, path)


def _legend_cols(n: int) -> int:
    """Legend columns: one per 12 entries, so a sweep of runs stays inside the figure's height."""
    return max(1, (n + 11) // 12)
