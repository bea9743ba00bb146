"""Where presets and experiments are found: user directories first, then the package data (docs/cli.md)."""

from __future__ import annotations

import importlib.resources
import importlib.resources.abc
import re
import tomllib
from pathlib import Path

import pytest
from conftest import DATA, FIXTURES, cli_env, run_cli

from mmtwin import config
from mmtwin.errors import MmtwinError

SHIPPED_MACHINES = sorted(p.stem for p in (DATA / "presets" / "machines").glob("*.toml"))
SHIPPED_KERNELS = sorted(p.stem for p in (DATA / "presets" / "kernels").glob("*.toml"))
SHIPPED_EXPERIMENTS = sorted(p.stem for p in (DATA / "experiments").glob("*.toml"))


def user_dir(xdg: Path) -> Path:
    return xdg / "mmtwin"


def add_machine(presets: Path, name: str, description: str, like: str = "uma-x86-64") -> Path:
    """A copy of a shipped machine under another name and description."""
    text = (DATA / "presets" / "machines" / f"{like}.toml").read_text()
    data = tomllib.loads(text)
    text = text.replace(f'name = "{like}"', f'name = "{name}"', 1).replace(data["description"], description, 1)
    path = presets / "machines" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- the package data


def test_shipped_data_is_package_data() -> None:
    data = importlib.resources.files("mmtwin.data")

    def names(d: importlib.resources.abc.Traversable) -> list[str]:
        return sorted(p.name.removesuffix(".toml") for p in d.iterdir() if p.name.endswith(".toml"))

    assert names(data / "presets" / "machines") == SHIPPED_MACHINES and "sgi-altix-28node" in SHIPPED_MACHINES
    assert names(data / "presets" / "kernels") == SHIPPED_KERNELS and "3.0-rc6-vanilla" in SHIPPED_KERNELS
    assert names(data / "experiments") == SHIPPED_EXPERIMENTS
    assert {"zlcfirst", "zonelist-cache", "reclaim-writeback-xfs", "reclaim-writeback-ext4"} <= set(SHIPPED_EXPERIMENTS)
    text = (data / "experiments" / "zlcfirst.toml").read_text()
    assert tomllib.loads(text)["machine"] == "x86-64-2node-24cpu"
    assert config.shipped_data() == data


def test_without_user_files_the_shipped_ones_are_found(no_user_presets: Path) -> None:
    assert config.presets_dirs() == [user_dir(no_user_presets) / "presets", config.shipped_data() / "presets"]
    assert config.machine_names() == SHIPPED_MACHINES
    assert config.kernel_names() == SHIPPED_KERNELS
    assert config.experiment_names() == SHIPPED_EXPERIMENTS


def test_shipped_files_are_shown_relative_to_the_checkout() -> None:
    path = config.shipped_data() / "presets" / "machines" / "uma-x86-64.toml"
    assert config.display_path(path) == "python/mmtwin/data/presets/machines/uma-x86-64.toml"
    listing = config.describe_dirs(config.machine_dirs())
    assert listing.endswith(" or python/mmtwin/data/presets/machines"), listing


# --------------------------------------------------------------------------- user directories before the shipped ones


def test_user_presets_come_before_the_shipped_ones(no_user_presets: Path) -> None:
    presets = user_dir(no_user_presets) / "presets"
    add_machine(presets, "uma-x86-64", "my own UMA box")  # shadows the shipped one
    add_machine(presets, "my-box", "a machine only the user has")
    assert config.load_machine("uma-x86-64").description == "my own UMA box"
    assert config.load_machine("my-box").topology.nodes == 1
    assert config.load_machine("sgi-altix-28node").topology.nodes == 28  # shipped, not shadowed
    assert config.load_kernel("3.0-rc6-vanilla").era == "3.0"  # no user kernels/: the shipped ones
    assert config.machine_names() == sorted({*SHIPPED_MACHINES, "my-box"})
    with pytest.raises(MmtwinError, match="unknown machine preset 'nope'; available: my-box, sgi-altix-28node, "):
        config.load_machine("nope")


def test_user_files_are_shown_with_their_path(no_user_presets: Path) -> None:
    presets = user_dir(no_user_presets) / "presets"
    path = add_machine(presets, "bad", "x")
    path.write_text(path.read_text().replace("hz = ", "hz = true\nhz_was = "))
    with pytest.raises(MmtwinError) as info:
        config.load_machine("bad")
    assert info.value.message.startswith(f"{path}: "), info.value.message


def test_user_experiments_come_before_the_shipped_ones(no_user_presets: Path) -> None:
    experiments = user_dir(no_user_presets) / "experiments"
    experiments.mkdir(parents=True)
    text = (DATA / "experiments" / "zonelist-cache.toml").read_text()
    (experiments / "zonelist-cache.toml").write_text(text.replace("threads = [1, 19, 37, 55]", "threads = [1, 19]"))
    # a user experiment on a user machine with a shipped kernel
    add_machine(user_dir(no_user_presets) / "presets", "my-box", "mine")
    mine = text.replace('name = "zonelist-cache"', 'name = "mine"').replace('"sgi-altix-28node"', '"my-box"')
    (experiments / "mine.toml").write_text(mine.replace("[12, 38, 64, 90]", "[1, 2]"))
    assert config.load_experiment("zonelist-cache").matrix.threads == [1, 19]
    assert config.load_experiment("zlcfirst").machine == "x86-64-2node-24cpu"  # shipped
    assert config.experiment_names() == sorted({*SHIPPED_EXPERIMENTS, "mine"})
    from mmtwin import experiment

    loaded = experiment.load("mine")
    assert loaded.machine.name == "my-box" and [k.name for k in loaded.kernels] == ["2.6.18-mm3", "2.6.18-mm3-zonelist-cache"]
    assert loaded.where == str(experiments / "mine.toml")


def test_home_config_when_xdg_config_home_is_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    add_machine(tmp_path / ".config" / "mmtwin" / "presets", "my-box", "in ~/.config")
    assert config.presets_dirs()[0] == tmp_path / ".config" / "mmtwin" / "presets"
    assert config.load_machine("my-box").description == "in ~/.config"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")  # not absolute: ignored, as the XDG spec says
    assert config.load_machine("my-box").description == "in ~/.config"


def test_environment_directories_replace_the_search_path(no_user_presets: Path, fixture_presets: Path) -> None:
    add_machine(user_dir(no_user_presets) / "presets", "my-box", "mine")
    assert config.presets_dirs() == [FIXTURES / "presets"]
    assert config.experiments_dirs() == [FIXTURES / "experiments"]
    assert config.machine_names() == ["tiny-numa", "tiny-x86"]
    assert config.experiment_names() == ["tiny-zlc"]
    with pytest.raises(MmtwinError, match="unknown machine preset 'uma-x86-64'; available: tiny-numa, tiny-x86$"):
        config.load_machine("uma-x86-64")


def test_cli_finds_user_presets(no_user_presets: Path) -> None:
    add_machine(user_dir(no_user_presets) / "presets", "my-box", "a machine only the user has")
    proc = run_cli("presets", env=cli_env(), cwd=no_user_presets)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^  my-box +a machine only the user has$", proc.stdout, re.M), proc.stdout
    for name in SHIPPED_MACHINES + SHIPPED_KERNELS + SHIPPED_EXPERIMENTS:
        assert f"  {name} " in proc.stdout, name


# --------------------------------------------------------------------------- `mmtwin presets` with nothing to run


def test_presets_fails_when_no_machine_and_no_kernel_is_found(tmp_path: Path) -> None:
    proc = run_cli("presets", env=cli_env(MMTWIN_PRESETS=str(tmp_path)))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == [
        f"mmtwin: error: no machine presets or kernel profiles found: no machines/*.toml or kernels/*.toml in {tmp_path}"
    ]
    assert "machines:\n  (none)\nkernels:\n  (none)\n" in proc.stdout


def test_presets_fails_when_no_kernel_is_found(tmp_path: Path) -> None:
    add_machine(tmp_path, "my-box", "mine")
    proc = run_cli("presets", env=cli_env(MMTWIN_PRESETS=str(tmp_path)))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == [f"mmtwin: error: no kernel profiles found: no kernels/*.toml in {tmp_path}"]


def test_presets_fails_when_no_machine_is_found(tmp_path: Path) -> None:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "test-base.toml").write_text((FIXTURES / "presets" / "kernels" / "test-base.toml").read_text())
    proc = run_cli("presets", env=cli_env(MMTWIN_PRESETS=str(tmp_path)))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == [f"mmtwin: error: no machine presets found: no machines/*.toml in {tmp_path}"]
