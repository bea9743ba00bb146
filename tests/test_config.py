"""Validation of presets and experiments: one-line errors naming file, field, value and what is allowed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from conftest import DATA, FIXTURES, cli_env, fixture_env, run_cli

from mmtwin import config
from mmtwin.errors import MmtwinError

TINY_X86 = (FIXTURES / "presets" / "machines" / "tiny-x86.toml").read_text()
TEST_BASE = (FIXTURES / "presets" / "kernels" / "test-base.toml").read_text()


def write_presets(tmp_path: Path, machine_text: str = TINY_X86, kernel_text: str = TEST_BASE) -> Path:
    """A presets dir with machines/bad.toml and kernels/bad.toml."""
    (tmp_path / "machines").mkdir(parents=True, exist_ok=True)
    (tmp_path / "kernels").mkdir(parents=True, exist_ok=True)
    (tmp_path / "machines" / "bad.toml").write_text(machine_text.replace('name = "tiny-x86"', 'name = "bad"'))
    (tmp_path / "kernels" / "bad.toml").write_text(kernel_text.replace('name = "test-base"', 'name = "bad"'))
    return tmp_path


def machine_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str) -> str:
    assert old in TINY_X86, old
    write_presets(tmp_path, TINY_X86.replace(old, new))
    monkeypatch.setenv("MMTWIN_PRESETS", str(tmp_path))
    with pytest.raises(MmtwinError) as info:
        config.load_machine("bad")
    msg = info.value.message
    assert "\n" not in msg
    assert msg.startswith(str(tmp_path / "machines" / "bad.toml") + ": ") or msg.startswith("machines/bad.toml")
    return msg


def kernel_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> str:
    write_presets(tmp_path, kernel_text=text)
    monkeypatch.setenv("MMTWIN_PRESETS", str(tmp_path))
    with pytest.raises(MmtwinError) as info:
        config.load_kernel("bad")
    assert "\n" not in info.value.message
    return info.value.message


# --------------------------------------------------------------------------- the shipped presets


def test_repository_presets_all_validate() -> None:
    names = config.machine_names()
    assert names, "python/mmtwin/data/presets/machines is empty"
    for name in names:
        m = config.load_machine(name)
        assert m.name == name
    for name in config.kernel_names():
        assert config.load_kernel(name).name == name
    for name in config.experiment_names():
        assert config.load_experiment(name).name == name


def test_fixture_presets_load(fixture_presets: Path) -> None:
    m = config.load_machine("tiny-x86")
    assert m.topology.cpus() == [2, 2]
    assert m.topology.memory() == [3000, 2000]
    assert m.total_cpus() == 4
    k = config.load_kernel("test-zlc")
    assert k.policy.zlc == "after-first-zone"
    assert k.sysctl.min_free_kbytes == 1024
    base = config.load_kernel("test-base")
    assert base.sysctl.zone_reclaim_mode == "auto"  # defaults fill the optional tables


def test_load_by_path() -> None:
    m = config.load_machine(str(FIXTURES / "presets" / "machines" / "tiny-numa.toml"))
    assert m.topology.nodes == 4


# --------------------------------------------------------------------------- unknown presets


def test_unknown_machine_lists_available(fixture_presets: Path) -> None:
    with pytest.raises(MmtwinError) as info:
        config.load_machine("foo")
    assert info.value.message == "unknown machine preset 'foo'; available: tiny-numa, tiny-x86"


def test_unknown_kernel_lists_available(fixture_presets: Path) -> None:
    with pytest.raises(MmtwinError) as info:
        config.load_kernel("2.6.99")
    assert info.value.message == "unknown kernel profile '2.6.99'; available: test-base, test-zlc"


# --------------------------------------------------------------------------- machine errors


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "distance = [[10, 21], [21, 10]]",
            "distance = [[10, 21]]",
            "topology.distance: 1 row, expected 2 (one per node)",
        ),
        (
            "distance = [[10, 21], [21, 10]]",
            "distance = [[10, 21], [21]]",
            "topology.distance[1]: row has 1 entry, expected 2 (one per node)",
        ),
        (
            "distance = [[10, 21], [21, 10]]",
            "distance = [[10, 21], [21, 12]]",
            "topology.distance[1][1]: 12 is not allowed on the diagonal; a node's distance to itself is 10",
        ),
        (
            "distance = [[10, 21], [21, 10]]",
            "distance = [[10, 300], [21, 10]]",
            "topology.distance[0][1]: 300 is not allowed; distances are 10..255",
        ),
        ("cpus_per_node = 2", "cpus_per_node = 0", "topology.cpus_per_node: 0 gives no CPU at all; at least one node needs a CPU"),
        ("cpus_per_node = 2", "cpus_per_node = [0, 0]", "topology.cpus_per_node: [0, 0] gives no CPU at all"),
        ("cpus_per_node = 2", "cpus_per_node = -1", "topology.cpus_per_node: -1 is not allowed; must be >= 0"),
        ("cpus_per_node = 2", "cpus_per_node = [2, 2, 2]", "topology.cpus_per_node: 3 entries, expected 2 (one per node)"),
        ("cpus_per_node = 2", 'cpus_per_node = "2"', "topology.cpus_per_node: '2' is not allowed; expected an integer or a list of integers"),
        ("memory_mib = [3000, 2000]", "memory_mib = [3000, 0]", "topology.memory_mib[1]: 0 is not allowed; must be > 0"),
        ("memory_mib = [3000, 2000]", "memory_mib = -5", "topology.memory_mib: -5 is not allowed; must be > 0"),
        ("reserved_mib = [40, 8]", "reserved_mib = [40, 2000]", "topology.reserved_mib[1]: 2000 MiB reserved on node 1"),
        ("reserved_mib = [40, 8]", "reserved_mib = [40, 8]\npci_hole_mib = [3000, 2000]", "topology.pci_hole_mib: [3000, 2000] is not allowed; expected 0 < start < end (MiB)"),
        ("reserved_mib = [40, 8]", "reserved_mib = [40, 8]\npci_hole_mib = [1, 2, 3]", "topology.pci_hole_mib: [1, 2, 3] is not allowed; expected [start, end] in MiB"),
        ("reserved_mib = [40, 8]", "reserved_mib = [40, 8]\npci_hole_mib = 3072", "topology.pci_hole_mib: 3072 is not allowed"),
        ("reserved_mib = [40, 8]", "reserved_mib = [40, 8]\nzone_pages = [[1, 2, 3]]", "topology.zone_pages: 1 list, expected 2 (one per node)"),
        ("reserved_mib = [40, 8]", "reserved_mib = [40, 8]\nzone_pages = [[1, 2], [1, 2, 3]]", "topology.zone_pages[0]: 2 entries, expected 3 (one per [[zones]] band)"),
        ("reserved_mib = [40, 8]", "reserved_mib = [40, 8]\nzone_pages = [[-1, 2, 3], [0, 9000, 0]]", "topology.zone_pages[0][0]: -1 is not allowed; expected pages >= 0"),
        ("reserved_mib = [40, 8]", "reserved_mib = [40, 8]\nzone_pages = [[4096, 700000, 100000], [0, 9000, 0]]", "topology.zone_pages[0]: 804096 pages is more than node 0's memory_mib 3000 (768000 pages)"),
        ("reserved_mib = [40, 8]", "reserved_mib = [40, 8]\nzone_pages = [[4096, 5000, 0], [0, 9000, 0]]", "topology.reserved_mib: 40 MiB reserved on node 0, which has 9096 pages in its zones; must be less"),
        ("page_size = 4096", "page_size = 4096\ncache_kib = -5", "cache_kib: -5 is not allowed; expected 0 (unbounded) to 1073741824 KiB"),
        ("nodes = 2", "nodes = 2\nlink_mb_s = 20000000", "topology.link_mb_s: 20000000 is not allowed; expected 0 (unlimited) to 10000000 MB/s"),
        ("page_size = 4096", "page_size = 5000", "page_size: 5000 is not allowed; expected a power of two from 4096 to 65536"),
        ("page_size = 4096", "page_size = 131072", "page_size: 131072 is not allowed; expected a power of two from 4096 to 65536"),
        ("page_size = 4096", "page_size = 4096.0", "page_size: 4096.0 is not allowed; expected an integer"),
        ('arch = "x86_64"', 'arch = "arm64"', "arch: 'arm64' is not allowed; expected 'ia64' or 'x86_64'"),
        ("nodes = 2", "nodes = 0", "topology.nodes: 0 is not allowed; expected 1 to 256"),
        ("nodes = 2", "nodez = 2", "topology.nodez: unknown key; allowed keys here: nodes, cpus_per_node, memory_mib, reserved_mib, distance"),
        ("hz = 1000", "HZ = 1000", "HZ: unknown key; allowed keys here: name, description, source, arch, page_size,"),
        ('name = "DMA32"', 'name = "DMA31"', "zones[1].name: 'DMA31' is not allowed; expected 'DMA', 'DMA32', 'NORMAL', 'HIGHMEM' or 'MOVABLE'"),
        ('name = "DMA"\nend_mib = 16', 'name = "NORMAL"\nend_mib = 16', "zones[1].name: 'DMA32' after 'NORMAL'; bands go low to high"),
        ("end_mib = 4096", "end_mib = 8", "zones[1].end_mib: 8 is not above the previous band's end 16; end_mib must increase"),
        ('name = "NORMAL"', 'name = "NORMAL"\nend_mib = 9000', "zones[2].end_mib: 9000 is not allowed; the last band has no end_mib"),
        ("end_mib = 4096\n", "\n", "zones[1].end_mib: missing; every band but the last needs end_mib"),
        ("fault_ns = 1000", "fault_ns = -1", "cost.fault_ns: -1 is not allowed; costs are nanoseconds from 0 to 1000000000 (the engine's limit)"),
        ("fault_ns = 1000\n", "", "cost.fault_ns: missing; this key is required"),
        ("hz = 1000", "hz = true", "hz: true is not allowed; expected an integer"),
        ("hz = 1000", "hz = 1000\nmax_order = 30", "max_order: 30 is not allowed; expected 2 to 20"),
    ],
)
def test_machine_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, expected: str) -> None:
    msg = machine_error(tmp_path, monkeypatch, old, new)
    assert expected in msg, msg


def test_name_must_match_file_stem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "machines").mkdir()
    (tmp_path / "machines" / "other.toml").write_text(TINY_X86)
    monkeypatch.setenv("MMTWIN_PRESETS", str(tmp_path))
    with pytest.raises(MmtwinError, match=r"other.toml: name: 'tiny-x86' is not allowed; it must equal the file stem 'other'"):
        config.load_machine("other")


def test_invalid_toml_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    msg = machine_error(tmp_path, monkeypatch, "hz = 1000", "hz = = 1000")
    assert "invalid TOML" in msg


# --------------------------------------------------------------------------- kernel errors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TEST_BASE.replace('zlc = "none"', 'zlc = "after_first_zone"'),
         "policy.zlc: 'after_first_zone' is not allowed; expected 'none', 'after-first-zone' or 'first-eligible'"),
        (TEST_BASE.replace('era = "2.6.18"', 'era = "2.6.19"'),
         "era: '2.6.19' is not allowed; expected '2.6.18', '3.0', '3.1' or '4.11'"),
        (TEST_BASE + '\n[sysctl]\nmin_free_kbytes = "autox"\n',
         "sysctl.min_free_kbytes: 'autox' is not allowed; expected \"auto\" or an integer number of KiB"),
        (TEST_BASE + "\n[sysctl]\nzone_reclaim_mode = 9\n",
         "sysctl.zone_reclaim_mode: 9 is not allowed; expected \"auto\" or an integer 0..7"),
        (TEST_BASE + "\n[sysctl]\nlowmem_reserve_ratio = [256, 0, 32, 32]\n",
         "sysctl.lowmem_reserve_ratio: [256, 0, 32, 32] is not allowed; expected \"auto\" or a list of 4 integers 1..2147483647"),
        (TEST_BASE + "\n[sysctl]\nlowmem_reserve_ratio = [256, 9223372036854775807, 32, 32]\n",
         "sysctl.lowmem_reserve_ratio: [256, 9223372036854775807, 32, 32] is not allowed; expected \"auto\" or a list of 4 integers 1..2147483647"),
        (TEST_BASE + "\n[sysctl]\nswapiness = 60\n",
         "sysctl.swapiness: unknown key; allowed keys here: min_free_kbytes, zone_reclaim_mode, lowmem_reserve_ratio, "
         "dirty_ratio, dirty_background_ratio, dirty_bytes, dirty_background_bytes, dirty_expire_centisecs, "
         "dirty_writeback_centisecs, swappiness, min_unmapped_ratio, min_slab_ratio, vfs_cache_pressure, "
         "watermark_boost_factor"),
        (TEST_BASE + "\n[sysctl]\ndirty_ratio = 140\n",
         "sysctl.dirty_ratio: 140 is not allowed; expected an integer 0..100 (percent of dirtyable memory)"),
        (TEST_BASE + "\n[sysctl]\ndirty_background_ratio = -1\n",
         "sysctl.dirty_background_ratio: -1 is not allowed; expected an integer 0..100 (percent of dirtyable memory)"),
        (TEST_BASE + "\n[sysctl]\nswappiness = 101\n",
         "sysctl.swappiness: 101 is not allowed; expected an integer 0..100"),
        (TEST_BASE + "\n[sysctl]\nmin_unmapped_ratio = 1.5\n",
         "sysctl.min_unmapped_ratio: 1.5 is not allowed; expected an integer 0..100 (percent of each zone)"),
        (TEST_BASE + "\n[sysctl]\nvfs_cache_pressure = -5\n",
         "sysctl.vfs_cache_pressure: -5 is not allowed; expected an integer 0..100000"),
        (TEST_BASE + '\n[sysctl]\ndirty_expire_centisecs = "3000"\n',
         "sysctl.dirty_expire_centisecs: '3000' is not allowed; expected an integer 0..360000000 (centiseconds)"),
        (TEST_BASE.replace('zlc = "none"', 'zlc = "none"\nzlc_reconsider = true'),
         "policy.zlc_reconsider: true is not allowed with zlc = 'none'"),
        (TEST_BASE.replace('era = "2.6.18"', 'era = "4.11"').replace('zlc = "none"', 'zlc = "first-eligible"'),
         "policy.zlc: 'first-eligible' is not allowed with era '4.11'"),
        (TEST_BASE.replace('zlc = "none"', "zlc = 1"), "policy.zlc: 1 is not allowed; expected 'none', 'after-first-zone' or 'first-eligible'"),
        (TEST_BASE.replace('zlc = "none"', 'zlc = "none"\nslab_allocator = "slob"'),
         "policy.slab_allocator: 'slob' is not allowed; expected 'slab' or 'slub'"),
        (TEST_BASE.replace('zlc = "none"', 'zlc = "none"\nnew_anon_lru = "both"'),
         "policy.new_anon_lru: 'both' is not allowed; expected 'active' or 'inactive'"),
        (TEST_BASE.replace('zlc = "none"', 'zlc = "none"\nmin_free_kbytes_max = 131072'),
         "policy.min_free_kbytes_max: 131072 is not allowed; expected 65536 or 262144"),
        (TEST_BASE.replace('zlc = "none"', 'zlc = "none"\nkswapd_balance = "node"'),
         "policy.kswapd_balance: 'node' is not allowed; expected 'per-zone' or 'node-any-zone'"),
        (TEST_BASE + "\n[sysctl]\nwatermark_boost_factor = -1\n",
         "sysctl.watermark_boost_factor: -1 is not allowed; expected an integer 0..2147483647"),
        # The boost (5.0) on a 3.x kswapd: refused (it came with 4.12's node balance).
        (TEST_BASE.replace('era = "2.6.18"', 'era = "3.0"') + "\n[sysctl]\nwatermark_boost_factor = 15000\n",
         "sysctl.watermark_boost_factor: 15000 is not allowed with era '3.0' and kswapd_balance 'per-zone'"),
        (TEST_BASE.replace('zlc = "none"', 'zlc = "none"\nkswapd_balance = "node-any-zone"')
         + "\n[sysctl]\nwatermark_boost_factor = 15000\n",
         "sysctl.watermark_boost_factor: 15000 is not allowed with era '2.6.18' and kswapd_balance 'node-any-zone'"),
    ],
)
def test_kernel_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str) -> None:
    msg = kernel_error(tmp_path, monkeypatch, text)
    assert msg.endswith(expected) or expected in msg, msg
    assert "kernels/bad.toml: " in msg


def test_kernel_sysctl_values_parse(fixture_presets: Path) -> None:
    k = config.load_kernel("test-zlc")
    assert k.sysctl.lowmem_reserve_ratio == [256, 256, 32, 32]


# --------------------------------------------------------------------------- experiments


def test_experiment_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixture_presets: Path) -> None:
    text = (FIXTURES / "experiments" / "tiny-zlc.toml").read_text()
    cases = [
        ("size_gb = [0.25, 0.5]", "size_gb = [-1, 0.5]", "matrix.size_gb: -1 is not allowed; sizes are numbers of GB > 0"),
        ("threads = [1, 4]", "threads = [1, 0]", "matrix.threads: [1, 0] is not allowed; expected a non-empty list of integers >= 1"),
        ('kind = "memhog"', 'kind = "fsmark"', "workload.kind: 'fsmark' is not allowed; expected 'memhog'"),
        ("seed = 1", "sead = 1", "sead: unknown key; allowed keys here: name, description, seed_document, machine, kernels, seed"),
        ('kernels = ["test-base", "test-zlc"]', "kernels = []", "kernels: [] is not allowed; list at least one kernel"),
        ("seed = 1", "seed = 1\n[sysctl]\ndirty_ratio = 140", "sysctl.dirty_ratio: 140 is not allowed; expected an integer 0..100"),
        ("seed = 1", "seed = 1\n[sysctl]\ndirty_ration = 40", "sysctl.dirty_ration: unknown key"),
    ]
    monkeypatch.setenv("MMTWIN_EXPERIMENTS", str(tmp_path))
    for old, new, expected in cases:
        assert old in text
        (tmp_path / "tiny-zlc.toml").write_text(text.replace(old, new))
        with pytest.raises(MmtwinError) as info:
            config.load_experiment("tiny-zlc")
        assert expected in info.value.message, info.value.message
        assert info.value.message.startswith(str(tmp_path / "tiny-zlc.toml") + ": ") or "tiny-zlc.toml: " in info.value.message


def test_experiment_sysctl_overrides_only_the_keys_it_gives() -> None:
    """Seed 004's experiments set dirty_ratio 40 for every kernel; the other sysctls stay the profiles'."""
    from mmtwin import experiment

    loaded = experiment.load("reclaim-writeback-xfs")
    assert [k.sysctl.dirty_ratio for k in loaded.kernels] == [40, 40, 40]
    assert [k.sysctl.dirty_background_ratio for k in loaded.kernels] == [10, 10, 10]
    assert config.load_kernel("3.0-rc6-vanilla").sysctl.dirty_ratio == 20  # the profile itself is unchanged
    specs = [p.spec["kernel"] for p in experiment.plan(loaded, scale=0.1) if p.run == "fsmark-1P"]
    assert [(s["dirty_ratio"], s["kswapd_fs_writeback"]) for s in specs] == [
        (40, "always"), (40, "high-priority"), (40, "never"),
    ]


def test_experiment_unknown_machine_names_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixture_presets: Path) -> None:
    from mmtwin import experiment

    text = (FIXTURES / "experiments" / "tiny-zlc.toml").read_text().replace('machine = "tiny-numa"', 'machine = "nope"')
    (tmp_path / "tiny-zlc.toml").write_text(text)
    monkeypatch.setenv("MMTWIN_EXPERIMENTS", str(tmp_path))
    with pytest.raises(MmtwinError) as info:
        experiment.load("tiny-zlc")
    assert info.value.message.endswith(
        "tiny-zlc.toml: machine: unknown machine preset 'nope'; available: tiny-numa, tiny-x86"
    )


def test_shipped_zonelist_cache_experiment_matches_seed() -> None:
    data = tomllib.loads((DATA / "experiments" / "zonelist-cache.toml").read_text())
    assert data["matrix"]["size_gb"] == [12, 38, 64, 90]
    assert data["matrix"]["threads"] == [1, 19, 37, 55]
    assert data["kernels"][0] == "2.6.18-mm3"


# --------------------------------------------------------------------------- through the CLI: exit 2, one line, no traceback


def assert_one_line_error(proc, *needles: str) -> None:  # type: ignore[no-untyped-def]
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mmtwin: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]


RUN_TINY = ["run", "--machine", "tiny-x86", "--kernel", "test-base", "--size-gb", "1", "--threads", "2"]


def test_cli_unknown_preset() -> None:
    proc = run_cli(*RUN_TINY, env=fixture_env())
    # tiny-x86 exists in the fixtures; now an unknown one:
    proc = run_cli("run", "--machine", "foo", "--kernel", "test-base", "--size-gb", "1", "--threads", "1", env=fixture_env())
    assert_one_line_error(proc, "unknown machine preset 'foo'; available: tiny-numa, tiny-x86")


def test_cli_negative_size() -> None:
    proc = run_cli("run", "--machine", "tiny-x86", "--kernel", "test-base", "--size-gb", "-5", "--threads", "1", env=fixture_env())
    assert_one_line_error(proc, "size_gb: -5.0 is not allowed; the size must be a number of GB (2^30 bytes) > 0")


def test_cli_zero_cpus(tmp_path: Path) -> None:
    presets = write_presets(tmp_path, TINY_X86.replace("cpus_per_node = 2", "cpus_per_node = 0"))
    proc = run_cli(
        "run", "--machine", "bad", "--kernel", "bad", "--size-gb", "1", "--threads", "1",
        env=cli_env(MMTWIN_PRESETS=str(presets)),
    )
    assert_one_line_error(proc, "machines/bad.toml: topology.cpus_per_node: 0 gives no CPU at all")


def test_cli_non_square_distance(tmp_path: Path) -> None:
    presets = write_presets(tmp_path, TINY_X86.replace("distance = [[10, 21], [21, 10]]", "distance = [[10, 21, 21], [21, 10, 21]]"))
    proc = run_cli(
        "run", "--machine", "bad", "--kernel", "bad", "--size-gb", "1", "--threads", "1",
        env=cli_env(MMTWIN_PRESETS=str(presets)),
    )
    assert_one_line_error(proc, "topology.distance[0]: row has 3 entries, expected 2 (one per node)")


def test_cli_unknown_policy_value(tmp_path: Path) -> None:
    presets = write_presets(tmp_path, kernel_text=TEST_BASE.replace('zlc = "none"', 'zlc = "always"'))
    proc = run_cli(
        "run", "--machine", "bad", "--kernel", "bad", "--size-gb", "1", "--threads", "1",
        env=cli_env(MMTWIN_PRESETS=str(presets)),
    )
    assert_one_line_error(proc, "kernels/bad.toml: policy.zlc: 'always' is not allowed; expected 'none', 'after-first-zone' or 'first-eligible'")


def test_cli_typo_in_toml_key(tmp_path: Path) -> None:
    presets = write_presets(tmp_path, TINY_X86.replace("reserved_mib =", "reserved_mb ="))
    proc = run_cli(
        "run", "--machine", str(presets / "machines" / "bad.toml"), "--kernel", "test-base", "--size-gb", "1", "--threads", "1",
        env=fixture_env(),
    )
    assert_one_line_error(proc, "bad.toml: topology.reserved_mb: unknown key; allowed keys here: nodes, cpus_per_node, memory_mib, reserved_mib, distance")


def test_cli_too_many_threads() -> None:
    proc = run_cli("run", "--machine", "tiny-x86", "--kernel", "test-base", "--size-gb", "1", "--threads", "5", env=fixture_env())
    assert_one_line_error(proc, "workload.threads: 5 is not allowed; machine tiny-x86 has 4 CPUs")


def test_cli_bad_scale() -> None:
    proc = run_cli(*RUN_TINY, "--scale", "1.5", env=fixture_env())
    assert_one_line_error(proc, "--scale: 1.5 is not allowed; expected a number S with 0 < S <= 1")


def test_cli_unknown_flag_is_usage_error() -> None:
    proc = run_cli(*RUN_TINY, "--frobnicate", env=fixture_env())
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert re.search(r"No such option: --frobnicate", proc.stderr)


def test_cli_bad_number_is_usage_error() -> None:
    proc = run_cli("run", "--machine", "tiny-x86", "--kernel", "test-base", "--size-gb", "lots", "--threads", "1", env=fixture_env())
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "--size-gb" in proc.stderr


# --------------------------------------------------------------------------- storage (Specification v2)

STORAGE = """
[storage]
[[storage.devices]]
name = "sda"
disks = 1
bandwidth_mib_s = 100
access_us = 8000
nr_requests = 128
max_sectors_kib = 512
size_mib = 10000

[storage.fs]
kind = "ext4"
device = "sda"
size_mib = 8000
"""


def test_machine_with_storage_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_presets(tmp_path, TINY_X86 + STORAGE)
    monkeypatch.setenv("MMTWIN_PRESETS", str(tmp_path))
    m = config.load_machine("bad")
    assert m.storage is not None and m.storage.devices[0].chunk_kib == 64  # md's default, unused for one disk
    assert m.storage.devices[0].elevator == "noop"  # arrival order unless the preset says deadline
    assert m.storage.devices[0].queue_depth == 1  # one command at a time unless the preset says otherwise
    assert m.storage.fs.kind == "ext4" and m.storage.swap is None
    assert m.cost.syscall_ns == 300 and m.cost.writepage_ns == 1500  # v2 costs default to the engine's


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("disks = 1", "disks = 0",
         "storage.devices[0].disks: 0 is not allowed; a RAID of zero disks stores nothing: expected 1 (a plain disk) or more (md RAID-0)"),
        ("size_mib = 8000", "size_mib = 10001",
         "storage.fs.size_mib: 10001 MiB is a filesystem larger than its device sda (10000 MiB = 1 x 10000 MiB)"),
        ('device = "sda"', 'device = "sdb"', "storage.fs.device: 'sdb' is not a device; devices: sda"),
        ('kind = "ext4"', 'kind = "btrfs"', "storage.fs.kind: 'btrfs' is not allowed; expected 'ext3', 'ext4' or 'xfs'"),
        ('kind = "ext4"', 'kind = "xfs"\njournal = true',
         "storage.fs.journal: true is not allowed with kind 'xfs'; the engine models ext4's jbd2 journal only (false, or leave it out)"),
        ('kind = "ext4"', 'kind = "ext4"\ncommit_s = 0', "storage.fs.commit_s: 0 is not allowed; expected 1 to 300 seconds"),
        ('kind = "ext4"', 'kind = "ext4"\ncommit_s = 301', "storage.fs.commit_s: 301 is not allowed; expected 1 to 300 seconds"),
        ("nr_requests = 128", "nr_requests = 2", "storage.devices[0].nr_requests: 2 is not allowed; expected 4 to 100000 (from BLKDEV_MIN_RQ"),
        # The engine's limits, checked here so that no JSON parser's text ("expected u32") reaches the user.
        ("nr_requests = 128", "nr_requests = 9223372036854775807",
         "storage.devices[0].nr_requests: 9223372036854775807 is not allowed; expected 4 to 100000"),
        ("disks = 1", "disks = 65", "storage.devices[0].disks: 65 is not allowed; expected 1 to 64 disks (the engine's largest md RAID-0)"),
        ("max_sectors_kib = 512", "max_sectors_kib = 65537", "storage.devices[0].max_sectors_kib: 65537 is not allowed; expected 4 to 65536 KiB"),
        # Request slots are preallocated: 100000 requests of 64 MiB would take 56 GiB (the engine aborted).
        ("nr_requests = 128\nmax_sectors_kib = 512", "nr_requests = 100000\nmax_sectors_kib = 65536",
         "storage.devices: their request queues take 56282 MiB (3 x nr_requests slots a disk of max_sectors_kib each); "
         "at most 1024 MiB (smaller nr_requests or max_sectors_kib)"),
        ("size_mib = 10000", "size_mib = 4294967297",
         "storage.devices[0].size_mib: 4294967297 is not allowed; expected 1 to 4294967296 MiB (per disk; the engine's limit, 4 PiB)"),
        ("bandwidth_mib_s = 100", "bandwidth_mib_s = 0", "storage.devices[0].bandwidth_mib_s: 0 is not allowed; expected a whole number of MiB/s, 1 to 1000000 (per disk)"),
        ("access_us = 8000", "access_us = -1", "storage.devices[0].access_us: -1 is not allowed; expected a whole number of microseconds, 0 to 1000000000 (seek + rotation)"),
        ("max_sectors_kib = 512", "max_sectors_kib = 2", "storage.devices[0].max_sectors_kib: 2 is not allowed; expected 4 to 65536 KiB"),
        ("disks = 1", "disks = 2\nchunk_kib = 48", "storage.devices[0].chunk_kib: 48 is not allowed; expected a power of two"),
        ("disks = 1", "disks = 1\nspindle = 7200",
         "storage.devices[0].spindle: unknown key; allowed keys here: name, disks, chunk_kib, bandwidth_mib_s, access_us, rpm, "
         "track_seek_us, full_seek_us, nr_requests, max_sectors_kib, size_mib, elevator, queue_depth"),
        ("disks = 1", "disks = 1\nrpm = 7200",
         "storage.devices[0].access_us: 8000 is not allowed with rpm; the seek curve replaces the flat access time: give one or the other"),
        ("access_us = 8000", "rpm = 7200",
         "storage.devices[0].track_seek_us: missing; a seek curve needs rpm, track_seek_us and full_seek_us (rpm is given)"),
        ("access_us = 8000", "rpm = 7200\ntrack_seek_us = 2000\nfull_seek_us = 1000",
         "storage.devices[0].full_seek_us: 1000 is not allowed; at least track_seek_us (2000): a full stroke is the longest seek"),
        ("access_us = 8000", "rpm = 500\ntrack_seek_us = 1000\nfull_seek_us = 15000",
         "storage.devices[0].rpm: 500 is not allowed; expected a spindle speed of 1000 to 30000 revolutions a minute"),
        ("access_us = 8000", "track_seek_us = 1000",
         "storage.devices[0].rpm: missing; a seek curve needs rpm, track_seek_us and full_seek_us (track_seek_us is given)"),
        ("access_us = 8000", "",
         "storage.devices[0].access_us: missing; give access_us (a flat access time) or rpm, track_seek_us and full_seek_us (a seek curve)"),
        ("disks = 1", "disks = 1\nqueue_depth = 0",
         "storage.devices[0].queue_depth: 0 is not allowed; expected 1 to 256 commands (1: none queued; a SATA drive under libata takes 31)"),
        ("disks = 1", "disks = 1\nqueue_depth = 257", "storage.devices[0].queue_depth: 257 is not allowed; expected 1 to 256"),
        ("disks = 1", 'disks = 1\nelevator = "bfq"', "storage.devices[0].elevator: 'bfq' is not allowed; expected 'noop', 'deadline' or 'cfq'"),
        ('name = "sda"', 'name = "sd a"', "storage.devices[0].name: 'sd a' is not allowed"),
        ("size_mib = 8000", "size_mib = 8000\n\n[storage.swap]\ndevice = \"sda\"\nsize_mib = 20000",
         "storage.swap.size_mib: 20000 MiB is a swap area larger than its device sda (10000 MiB = 1 x 10000 MiB)"),
        ("size_mib = 8000", "size_mib = 8000\n\n[storage.swap]\ndevice = \"sda\"\nsize_mib = 3000",
         "storage.swap.size_mib: 3000 MiB of swap plus the 8000 MiB filesystem do not fit on sda (10000 MiB)"),
        ("size_mib = 8000", "size_mib = 8000\n\n[storage.swap]\ndevice = \"sdz\"\nsize_mib = 3000",
         "storage.swap.device: 'sdz' is not a device; devices: sda"),
    ],
)
def test_storage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, expected: str) -> None:
    text = TINY_X86 + STORAGE
    assert old in STORAGE, old
    write_presets(tmp_path, text.replace(old, new, 1) if old != "size_mib = 8000" else text.replace(old, new))
    monkeypatch.setenv("MMTWIN_PRESETS", str(tmp_path))
    with pytest.raises(MmtwinError) as info:
        config.load_machine("bad")
    msg = info.value.message
    assert "\n" not in msg and "machines/bad.toml: " in msg
    assert expected in msg, msg


def test_storage_limits_that_depend_on_the_page_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 64 KiB pages a request and a RAID-0 chunk hold at least one page; swap is at most 2^27 slots (the engine's)."""
    big_pages = (TINY_X86 + STORAGE).replace("page_size = 4096", "page_size = 65536")
    monkeypatch.setenv("MMTWIN_PRESETS", str(tmp_path))
    for text, expected in [
        (big_pages.replace("max_sectors_kib = 512", "max_sectors_kib = 32"),
         "storage.devices[0].max_sectors_kib: 32 is not allowed; at least the page size, 64 KiB"),
        (big_pages.replace("disks = 1", "disks = 2\nchunk_kib = 16"),
         "storage.devices[0].chunk_kib: 16 is not allowed; a RAID-0 chunk is at least the page size, 64 KiB"),
        ((TINY_X86 + STORAGE).replace("size_mib = 10000", "size_mib = 4000000").replace(
            "size_mib = 8000", "size_mib = 8000\n\n[storage.swap]\ndevice = \"sda\"\nsize_mib = 524289"),
         "storage.swap.size_mib: 524289 is not allowed; at most 524288 MiB (134217728 slots of a 4096-byte page, the engine's limit)"),
    ]:
        write_presets(tmp_path, text)
        with pytest.raises(MmtwinError) as info:
            config.load_machine("bad")
        assert info.value.message.endswith("machines/bad.toml: " + expected), info.value.message


def test_raid0_capacity_is_disks_times_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (TINY_X86 + STORAGE).replace("disks = 1", "disks = 4").replace("size_mib = 8000", "size_mib = 40000")
    write_presets(tmp_path, text)
    monkeypatch.setenv("MMTWIN_PRESETS", str(tmp_path))
    assert config.load_machine("bad").storage.fs.size_mib == 40000  # 4 x 10000 MiB


# --------------------------------------------------------------------------- workloads


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"kind": "fsmark", "subdirs": 100, "files_per_subdir": 5000, "files": 0},
         "files: 0 is not allowed; fs_mark with zero files does nothing: expected 1 to 1000000"),
        ({"kind": "fsmark", "subdirs": 1, "files_per_subdir": 5000}, "subdirs: 1 is not allowed; expected 2 to 4294967295 (-D"),
        # The engine's 32-bit counts and its -L limit: checked here, so no JSON parser's text reaches the user.
        ({"kind": "fsmark", "subdirs": 2**32, "files_per_subdir": 5000}, "subdirs: 4294967296 is not allowed; expected 2 to 4294967295 (-D"),
        ({"kind": "fsmark", "subdirs": 2, "files_per_subdir": 2**63 - 1},
         "files_per_subdir: 9223372036854775807 is not allowed; expected 1 to 4294967295 (-N"),
        ({"kind": "fsmark", "subdirs": 2, "files_per_subdir": 1, "iterations": 100_001},
         "iterations: 100001 is not allowed; expected 1 to 100000 (-L, iterations)"),
        ({"kind": "largedd", "tar_mib": 10, "copies": 2**32, "download_mib_s": 1},
         "copies: 4294967296 is not allowed; expected 1 to 4294967295 (dd copies of the tarfile)"),
        # An id range is bounded by the largest machine, not expanded into billions of ids.
        ({"kind": "memhog", "size_gb": 1, "threads": 1, "cpus": "0-4000000000"},
         "cpus: '0-4000000000' is not allowed; '0-4000000000' goes past 4095, the largest CPU or node id a machine can have"),
        ({"kind": "memhog", "size_gb": 1, "threads": 1, "mems_allowed": "4096"},
         "mems_allowed: '4096' is not allowed; '4096' goes past 4095"),
        ({"kind": "fsmark", "subdirs": 100}, "files_per_subdir: missing; this key is required"),
        ({"kind": "fsmark", "subdirs": 100, "files_per_subdir": 5, "sync_method": 1},
         "sync_method: 1 is not simulated yet; only 0 (-S0, no fsync or sync, as MMTests runs it) is"),
        ({"kind": "fsmark", "subdirs": 100, "files_per_subdir": 5, "sync_method": 7}, "sync_method: 7 is not allowed; fs_mark's sync methods are 0..6"),
        ({"kind": "fsmark", "subdirs": 100, "files_per_subdir": 5, "threads": 65}, "threads: 65 is not allowed; expected 1 to 64"),
        ({"kind": "fsmark", "subdirs": 100, "files_per_subdir": 5, "threads": 24, "dirs": 5},
         "threads: 24 is not a multiple of dirs = 5"),
        ({"kind": "fsmark", "subdirs": 100, "files_per_subdir": 5, "write_bytes": 2**21}, "write_bytes: 2097152 is not allowed; expected 1 to 1048576"),
        ({"kind": "fsmark", "subdirs": 100, "files_per_subdir": 5, "file_bytes": -1}, "file_bytes: -1 is not allowed"),
        ({"kind": "largedd", "tar_mib": 0, "copies": 1, "download_mib_s": 1}, "tar_mib: 0 is not allowed; expected the tarfile's size in MiB > 0"),
        ({"kind": "largedd", "tar_mib": 10, "copies": 0, "download_mib_s": 1}, "copies: 0 is not allowed; expected 1 to 4294967295 (dd copies"),
        ({"kind": "largedd", "tar_mib": 10, "copies": 1, "download_mib_s": 1, "dd_kib": 0.3},
         "dd_kib: 0.3 is not allowed; dd's block size must be a whole number of bytes"),
        ({"kind": "largedd", "tar_mib": 10, "copies": 1}, "download_mib_s: missing; this key is required"),
        ({"kind": "mmapstream", "size_mib": -1}, "size_mib: -1 is not allowed; expected the mapping's total size in MiB > 0"),
        ({"kind": "mmapstream", "size_mib": 1, "mixed_size_mib": -3}, "mixed_size_mib: -3 is not allowed; expected stage 2's total size in MiB, 0 for no stage 2"),
        ({"kind": "mmapstream", "size_mib": 1, "mixed_anon_percent": 101}, "mixed_anon_percent: 101 is not allowed; expected a percentage, 0 to 100"),
        ({"kind": "mmapstream", "size_mib": 1, "mixed_iter": 0}, "mixed_iter: 0 is not allowed; expected 1 to 1000 passes"),
        ({"kind": "mmapstream", "size_mib": 1, "mixed_threads": 0}, "mixed_threads: 0 is not allowed; expected 1 to 1024 processes"),
        ({"kind": "mmapstream", "size_mib": 1, "cpus": "0-x"}, "cpus: '0-x' is not allowed; '0-x' is neither an id nor a range a-b"),
        ({"kind": "mmapstream", "size_mib": 1, "cpus": 3}, "cpus: 3 is not allowed; expected a list of CPU ids or a string like \"0-11\""),
        ({"kind": "dd"}, "kind: 'dd' is not allowed; expected 'memhog', 'fsmark', 'largedd' or 'mmapstream'"),
        ({"kind": "memhog", "size_gb": 1, "threads": 1, "files": 3}, "files: unknown key; allowed keys here: kind, size_gb, threads, stride, passes, cpus, mems_allowed"),
        ({"kind": "memhog", "size_gb": 1, "threads": 1, "passes": 0}, "passes: 0 is not allowed; expected 1 to 1000 passes over the memory"),
    ],
)
def test_workload_errors(data: dict, expected: str) -> None:
    with pytest.raises(MmtwinError) as info:
        config.validate_workload(data, "command line")
    assert info.value.message.startswith("command line: " + expected.split(":")[0]), info.value.message
    assert expected in info.value.message, info.value.message


def test_workload_defaults_and_id_lists() -> None:
    w = config.validate_workload({"kind": "fsmark", "subdirs": 100, "files_per_subdir": 5000, "cpus": "0-2,5"}, "x")
    # fs_mark.h defaults, except -S (MMTests passes -S0; only 0 is simulated)
    assert (w.threads, w.dirs, w.files, w.iterations, w.file_bytes, w.write_bytes, w.sync_method) == (1, 1, 1000, 1, 51200, 16384, 0)
    assert w.cpus == [0, 1, 2, 5] and w.mems_allowed is None
    dd = config.validate_workload({"kind": "largedd", "tar_mib": 10, "copies": 2, "download_mib_s": 5}, "x")
    assert (dd.dd_kib, dd.threads) == (1024, 1)
    assert config.validate_workload({"kind": "mmapstream", "size_mib": 5}, "x").threads == 1


def test_fsmark_command_line_parses_like_fs_mark() -> None:
    seed = "./fs_mark  -d  /tmp/fsmark-10813  -D  100  -N  5000  -n  208  -L  35  -t  24  -S0  -s  524288"
    assert config.parse_fsmark_command(seed) == {
        "subdirs": 100, "files_per_subdir": 5000, "files": 208, "iterations": 35, "threads": 24,
        "sync_method": 0, "file_bytes": 524288, "dirs": 1,
    }
    # at least one thread per -d directory, as fs_mark
    assert config.parse_fsmark_command("-d a -d b -D 2 -N 1 -k")["threads"] == 2
    for text, expected in (
        ("-D 100 -N 5 -L 1", "no -d"),
        ("-d a -D 100 -L 1", "-D without -N"),
        ("-d a -D 100 -N 5 -L 1 -F", "-F (run until the filesystem is full) is not simulated"),
        ("-d a -D 100 -N 5 -L x", "-L 'x' is not allowed; expected an integer"),
        ("-d a -D 100 -N 5 -L 1 extra", "'extra' is not an fs_mark option"),
        ("-d 'a", "is not a command line"),
    ):
        with pytest.raises(MmtwinError, match=re.escape(expected)):
            config.parse_fsmark_command(text)


# --------------------------------------------------------------------------- experiments of named runs


RUNS_EXPERIMENT = """name = "runs"
description = "d"
machine = "tiny-x86"
kernels = ["test-base", "test-zlc"]

[[runs]]
name = "stream"
[runs.workload]
kind = "mmapstream"
size_mib = 64
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (RUNS_EXPERIMENT.replace('kind = "mmapstream"', 'kind = "mmapstreem"'),
         "runs[0].workload.kind: 'mmapstreem' is not allowed; expected 'memhog', 'fsmark', 'largedd' or 'mmapstream'"),
        (RUNS_EXPERIMENT.replace('kind = "mmapstream"\n', ""),
         "runs[0].workload.kind: missing; this key is required: 'memhog', 'fsmark', 'largedd' or 'mmapstream'"),
        (RUNS_EXPERIMENT.replace("size_mib = 64", "size_mib = 64\nsizee = 1"),
         "runs[0].workload.sizee: unknown key; allowed keys here: kind, size_mib, threads, mixed_size_mib, mixed_threads, mixed_anon_percent, mixed_iter, cpus, mems_allowed"),
        (RUNS_EXPERIMENT.replace("size_mib = 64", "size_mib = 0"), "runs[0].workload.size_mib: 0 is not allowed"),
        (RUNS_EXPERIMENT.replace('kind = "mmapstream"\nsize_mib = 64', 'kind = "fsmark"\nsubdirs = 10\nfiles_per_subdir = 5\nfiles = 0'),
         "runs[0].workload.files: 0 is not allowed; fs_mark with zero files does nothing"),
        (RUNS_EXPERIMENT + '\n[[runs]]\nname = "stream"\n[runs.workload]\nkind = "mmapstream"\nsize_mib = 1\n',
         "runs[1].name: 'stream' is used twice; run names must be unique"),
        (RUNS_EXPERIMENT + "\n[matrix]\nsize_gb = [1]\nthreads = [1]\n",
         "runs: not allowed together with [matrix]; an experiment has one or the other"),
        (RUNS_EXPERIMENT.replace("[[runs]]", '[workload]\nkind = "memhog"\n\n[[runs]]'),
         "workload: not allowed with [[runs]]; each run has its own [runs.workload] table"),
        (RUNS_EXPERIMENT.split("[[runs]]")[0],
         "matrix: missing; an experiment has either a [matrix] (memory-hog sizes x threads) or [[runs]] (named workloads)"),
        (RUNS_EXPERIMENT.replace('name = "stream"', 'name = "a stream"'), "runs[0].name: 'a stream' is not allowed"),
    ],
)
def test_runs_experiment_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str) -> None:
    (tmp_path / "runs.toml").write_text(text)
    monkeypatch.setenv("MMTWIN_EXPERIMENTS", str(tmp_path))
    with pytest.raises(MmtwinError) as info:
        config.load_experiment("runs")
    msg = info.value.message
    assert "\n" not in msg and "runs.toml: " in msg
    assert expected in msg, msg


def test_runs_experiment_plans_every_kernel_on_every_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixture_presets: Path) -> None:
    from mmtwin import experiment

    text = (TINY_X86 + STORAGE).replace('name = "tiny-x86"', 'name = "tiny-disk"')
    (tmp_path / "machines").mkdir()
    (tmp_path / "machines" / "tiny-disk.toml").write_text(text)
    (tmp_path / "kernels").mkdir()
    for k in ("test-base", "test-zlc"):
        (tmp_path / "kernels" / f"{k}.toml").write_text((FIXTURES / "presets" / "kernels" / f"{k}.toml").read_text())
    monkeypatch.setenv("MMTWIN_PRESETS", str(tmp_path))
    exp_text = RUNS_EXPERIMENT.replace("tiny-x86", "tiny-disk") + (
        '\n[[runs]]\nname = "hog"\n[runs.workload]\nkind = "memhog"\nsize_gb = 0.5\nthreads = 2\n'
    )
    (tmp_path / "runs.toml").write_text(exp_text)
    monkeypatch.setenv("MMTWIN_EXPERIMENTS", str(tmp_path))
    planned = experiment.plan(experiment.load("runs"))
    assert [(p.kernel, p.run) for p in planned] == [
        ("test-base", "stream"), ("test-base", "hog"), ("test-zlc", "stream"), ("test-zlc", "hog"),
    ]
    assert planned[0].spec["workload"] == {"kind": "mmapstream", "cpus": None, "mems_allowed": None, "bytes": 64 * 2**20, "threads": 1}
    assert planned[1].spec["workload"]["bytes"] == 2**29
    # a run that does not fit names the file and the run
    (tmp_path / "runs.toml").write_text(exp_text.replace("size_mib = 64", "size_mib = 9000"))
    with pytest.raises(MmtwinError) as info:
        experiment.plan(experiment.load("runs"))
    assert info.value.message.endswith(
        "runs.toml: runs[0] (stream): workload.size_mib: the 9000 MiB mapped file (8.8 GiB) is larger than "
        "the ext4 filesystem on sda (8000 MiB)"
    )


def test_shipped_zlcfirst_experiment_is_the_seeds() -> None:
    """Seed 000's fs_mark command line, three kernels, every run bound to node 0's CPUs."""
    exp = config.load_experiment("zlcfirst")
    assert exp.seed_document == "000_aa33612caaf20dab.txt"
    assert exp.kernels == ["3.0-rc6-vanilla", "3.0-rc6-zlcfirst", "3.0-rc6-zlcreconsider"]
    runs = {r.name: r.workload for r in exp.runs or []}
    assert list(runs) == ["fsmark", "largedd", "mmapstream"]
    seed = "./fs_mark  -d  /tmp/fsmark-10813  -D  100  -N  5000  -n  208  -L  35  -t  24  -S0  -s  524288"
    fsmark = runs["fsmark"].model_dump()
    assert {k: fsmark[k] for k in config.parse_fsmark_command(seed)} == config.parse_fsmark_command(seed)
    assert fsmark["write_bytes"] == 16384  # no -w
    assert all(w.cpus == list(range(12)) and w.mems_allowed is None for w in runs.values())
    # the seed's Page Outs: 22.3 GiB written by LARGE DD, 115 GiB by the mapped writer
    dd = runs["largedd"]
    assert 21 <= dd.tar_mib * dd.copies / 1024 <= 23 and dd.dd_kib == 0.5
    assert runs["mmapstream"].size_mib == 10 * (12288 - 280) and runs["mmapstream"].threads == 24


def test_kernel_profiles_of_seed_000_write_the_sysctls_out() -> None:
    for name in ("3.0-rc6-vanilla", "3.0-rc6-zlcfirst", "3.0-rc6-zlcreconsider"):
        text = tomllib.loads((DATA / "presets" / "kernels" / f"{name}.toml").read_text())
        assert {k: text["sysctl"][k] for k in config.SYSCTL_LIMITS} == {k: v[0] for k, v in config.SYSCTL_LIMITS.items()}
    assert config.load_kernel("2.6.18-mm3").sysctl.dirty_ratio == 40  # 2.6.18's vm_dirty_ratio
    # The seeds' 2011 kernels were built with CONFIG_SLAB (seed 001); the others keep SLUB.
    for name in ("vanilla", "zlcfirst", "zlcreconsider", "kswapwb", "nokswapwb"):
        assert config.load_kernel(f"3.0-rc6-{name}").policy.slab_allocator == "slab"
    assert config.load_kernel("2.6.18-mm3").policy.slab_allocator == "slub"


def test_cli_config_errors_are_one_line(tmp_path: Path) -> None:
    presets = write_presets(tmp_path, TINY_X86 + STORAGE.replace("disks = 1", "disks = 0"), TEST_BASE + "\n[sysctl]\ndirty_ratio = 140\n")
    env = cli_env(MMTWIN_PRESETS=str(presets))
    proc = run_cli("run", "-m", "bad", "-k", "test-base", "--size-gb", "1", "-t", "1", env=env)
    assert_one_line_error(proc, "machines/bad.toml: storage.devices[0].disks: 0 is not allowed; a RAID of zero disks")
    (presets / "kernels" / "test-base.toml").write_text(TEST_BASE)
    (presets / "machines" / "tiny-x86.toml").write_text(TINY_X86)
    proc = run_cli("run", "-m", "tiny-x86", "-k", "bad", "--size-gb", "1", "-t", "1", env=env)
    assert_one_line_error(proc, "kernels/bad.toml: sysctl.dirty_ratio: 140 is not allowed; expected an integer 0..100")
    proc = run_cli("run", "-m", "tiny-x86", "-k", "test-base", "--size-gb", "6", "-t", "1", env=env)
    assert_one_line_error(proc, "workload.size_gb: a 6 GB memory hog needs 6144 MiB of memory, more than machine tiny-x86 has")
    proc = run_cli("run", "-m", "tiny-x86", "-k", "test-base", "-w", "fsmark", "--fsmark", "-d /x -D 10 -N 5 -n 0 -L 2", env=env)
    assert_one_line_error(proc, "command line: files: 0 is not allowed; fs_mark with zero files does nothing")


def test_only_regular_utf8_files_are_read(tmp_path: Path) -> None:
    """A FIFO would block and /dev/zero never end; bytes that are not UTF-8 name the file and the byte."""
    import os

    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    with pytest.raises(MmtwinError) as info:
        config.read_toml(fifo)
    assert info.value.message.endswith("pipe.toml: not a regular file; a preset or experiment is a .toml file")
    with pytest.raises(MmtwinError) as info:
        config.load_machine(str(fifo))
    assert "pipe.toml: not a regular file" in info.value.message
    with pytest.raises(MmtwinError) as info:
        config.read_toml(Path("/dev/zero"))
    assert "not a regular file" in info.value.message
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'name = "x\xff"\n')
    with pytest.raises(MmtwinError) as info:
        config.read_toml(bad)
    assert info.value.message.endswith("bad.toml: not UTF-8 text: byte 0xff at offset 9; TOML files are UTF-8")
    big = tmp_path / "big.toml"
    with big.open("wb") as fh:
        fh.truncate(config.MAX_TOML_BYTES + 1)
    with pytest.raises(MmtwinError) as info:
        config.read_toml(big)
    assert "is not allowed; a preset or experiment file is at most" in info.value.message


def test_unparsable_files_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nesting too deep for the parser, a byte-order mark and a symlink loop: one line naming the file, exit 2."""
    import os

    from mmtwin import cli

    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(MmtwinError) as info:
        config.read_toml(deep)
    assert info.value.message.endswith("deep.toml: invalid TOML: arrays or tables nested too deeply to parse")
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbfname = 'bom'\n")
    with pytest.raises(MmtwinError) as info:
        config.read_toml(bom)
    assert info.value.message.endswith("bom.toml: starts with a byte-order mark (EF BB BF); save it as UTF-8 without one")
    loop = tmp_path / "loop.toml"
    os.symlink(loop, loop)
    for args in (["presets", "show", str(loop)], ["presets", "show", str(deep)]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(args)
        out, err = capsys.readouterr()
        assert exit_info.value.code == 2, err
        assert len(err.splitlines()) == 1 and out == "", err
    assert err.startswith("mmtwin: error: ") and err.endswith("deep.toml: invalid TOML: arrays or tables nested too deeply to parse\n")
    with pytest.raises(MmtwinError) as info:
        config.read_toml(loop)
    assert info.value.message.endswith("loop.toml: cannot read: Too many levels of symbolic links")
