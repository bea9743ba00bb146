"""Validation of presets and experiments: one-line errors naming file, field, value and what is allowed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, cli_env, fixture_env, run_cli

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
    assert names, "presets/machines is empty"
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
        ("fault_ns = 1000", "fault_ns = -1", "cost.fault_ns: -1 is not allowed; costs are nanoseconds >= 0"),
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
         "sysctl.lowmem_reserve_ratio: [256, 0, 32, 32] is not allowed; expected \"auto\" or a list of 4 integers >= 1"),
        (TEST_BASE + "\n[sysctl]\nswappiness = 60\n",
         "sysctl.swappiness: unknown key; allowed keys here: min_free_kbytes, zone_reclaim_mode, lowmem_reserve_ratio"),
        (TEST_BASE.replace('zlc = "none"', 'zlc = "none"\nzlc_reconsider = true'),
         "policy.zlc_reconsider: true is not allowed with zlc = 'none'"),
        (TEST_BASE.replace('era = "2.6.18"', 'era = "4.11"').replace('zlc = "none"', 'zlc = "first-eligible"'),
         "policy.zlc: 'first-eligible' is not allowed with era '4.11'"),
        (TEST_BASE.replace('zlc = "none"', "zlc = 1"), "policy.zlc: 1 is not allowed; expected 'none', 'after-first-zone' or 'first-eligible'"),
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
    ]
    monkeypatch.setenv("MMTWIN_EXPERIMENTS", str(tmp_path))
    for old, new, expected in cases:
        assert old in text
        (tmp_path / "tiny-zlc.toml").write_text(text.replace(old, new))
        with pytest.raises(MmtwinError) as info:
            config.load_experiment("tiny-zlc")
        assert expected in info.value.message, info.value.message
        assert info.value.message.startswith(str(tmp_path / "tiny-zlc.toml") + ": ") or "tiny-zlc.toml: " in info.value.message


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
    data = tomllib.loads((ROOT / "experiments" / "zonelist-cache.toml").read_text())
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
