"""/proc/vmstat text, zone tables, timelines and plots."""

from __future__ import annotations

from pathlib import Path

from fakeengine import fake_run_spec

from mmtwin import config
from mmtwin.config import WorkloadParams
from mmtwin.reports import plots
from mmtwin.reports import vmstat as vm
from mmtwin.reports.seedtable import Cell, Times
from mmtwin.resolve import resolve_spec


def fake_result(fixture_presets: Path) -> dict:
    spec = resolve_spec(config.load_machine("tiny-x86"), config.load_kernel("test-base"), WorkloadParams(size_gb=1, threads=2))
    return fake_run_spec(spec)


def test_proc_vmstat_keeps_the_engine_order() -> None:
    result = {"vmstat": {"nr_anon_pages": 5, "numa_hit": 7, "pgalloc_dma": 0}}
    assert vm.proc_vmstat(result) == "nr_anon_pages 5\nnuma_hit 7\npgalloc_dma 0\n"


def test_sample_indices() -> None:
    assert vm.sample_indices(0, 8) == []
    assert vm.sample_indices(3, 8) == [0, 1, 2]
    assert vm.sample_indices(100, 5) == [0, 25, 50, 74, 99]  # round half to even: 24.75 -> 25, 74.25 -> 74
    idx = vm.sample_indices(1771, 8)
    assert idx[0] == 0 and idx[-1] == 1770 and len(idx) == 8


def test_zone_table_and_timeline(fixture_presets: Path) -> None:
    result = fake_result(fixture_presets)
    table = vm.zone_table(result).splitlines()
    assert table[0].split() == ["zone", "present", "min", "low", "high", "free_end", "pgalloc"]
    # N0/NORMAL has no pages on tiny-x86 and is left out
    assert [row.split()[0] for row in table[1:]] == ["N0/DMA", "N0/DMA32", "N1/DMA32", "N1/NORMAL"]
    assert table[2].split()[1] == str(2984 * 256)
    timeline = vm.timeline_table(result).splitlines()
    assert timeline[1].split() == ["zone", "0.00", "0.10", "0.20"]
    assert timeline[3].split() == ["N0/DMA32", str(2984 * 256), str(2984 * 256), str(2984 * 128)]
    assert vm.timeline_table({"timeline": {}}) == "free pages timeline: no samples\n"


def test_plots_write_png(tmp_path: Path, fixture_presets: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n"
    path = plots.plot_zone_timeline(fake_result(fixture_presets), tmp_path / "zones.png")
    assert path.read_bytes()[:8] == png
    # The 28-node box: a heat map with a labelled row per zone instead of 28 unlabelled lines.
    import matplotlib.image as mpimg

    many = {"zones": [{"node": n, "zone": "DMA", "present": 1000} for n in range(28)],
            "timeline": {"t_s": [0.0, 0.1, 0.2], "free_pages": [[1000] * 28, [500 + n for n in range(28)], [10 * n for n in range(28)]]}}
    heat = plots.plot_zone_timeline(many, tmp_path / "many.png")
    lines = plots.plot_zone_timeline({**many, "zones": many["zones"][:16]}, tmp_path / "few.png")
    assert heat.read_bytes()[:8] == png and lines.read_bytes()[:8] == png
    # Taller by a row per zone; mostly coloured (the heat map), where the line plot is mostly white.
    h, l = mpimg.imread(heat), mpimg.imread(lines)
    assert h.shape[0] > l.shape[0] * 1.05
    assert (h[..., :3].mean(axis=2) < 0.9).mean() > 0.3 > (l[..., :3].mean(axis=2) < 0.9).mean()
    cells = [Cell(12, 1, Times(3, 1, 4), Times(2, 1, 3)), Cell(38, 19, Times(9, 2, 1), Times(8, 2, 1))]
    path = plots.plot_seed_table(cells, tmp_path / "table.png", "base", "base-new")
    assert path.read_bytes()[:8] == png
    path = plots.plot_seed_table(cells, tmp_path / "both.png", "base", "base-new", published=cells)
    assert path.stat().st_size > (tmp_path / "table.png").stat().st_size // 2
    # At published scale the published times go beside the simulated ones on the absolute axis too.
    same = plots.plot_seed_table(cells, tmp_path / "same.png", "base", "base-new", published=cells, same_scale=True)
    assert same.read_bytes()[:8] == png and same.read_bytes() != path.read_bytes()
