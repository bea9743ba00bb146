"""The wheel as a user gets it: built from this tree, installed with pip into a fresh
virtual environment outside the tree, run from a directory outside the tree.

The build reuses the release artefacts of ``pip install -e .`` in ``target/`` (about
a second when they are current); the venv installs the dependencies from PyPI (or
pip's cache). Deselect with ``-m "not wheel"``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import DATA, ORIGINAL_ENV, ROOT, engine_available, run_cli

pytestmark = pytest.mark.wheel

SHIPPED_MACHINES = sorted(p.stem for p in (DATA / "presets" / "machines").glob("*.toml"))
SHIPPED_KERNELS = sorted(p.stem for p in (DATA / "presets" / "kernels").glob("*.toml"))
SHIPPED_EXPERIMENTS = sorted(p.stem for p in (DATA / "experiments").glob("*.toml"))
REPRODUCTIONS = [("zonelist-cache", "0.02"), ("zlcfirst", "0.01")]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    work: Path  # an empty working directory outside the tree
    env: dict[str, str]  # for running mmtwin: no PYTHONPATH, no MMTWIN_*, an empty XDG_CONFIG_HOME

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            capture_output=True, text=True, env=self.env, cwd=self.work, timeout=timeout, check=False,
        )


def _check(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in ORIGINAL_ENV.items() if not k.startswith("MMTWIN_")}
    for key in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"):
        env.pop(key, None)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    assert not base.resolve().is_relative_to(ROOT), f"{base} is inside the source tree"
    dist, venv, work, xdg = base / "dist", base / "venv", base / "work", base / "xdg-config"
    work.mkdir()
    xdg.mkdir()
    env = _clean_env()
    # 1. the wheel (maturin from the test extra; otherwise pip wheel, which fetches maturin itself)
    if importlib.util.find_spec("maturin") is not None:
        build = [sys.executable, "-m", "maturin", "build", "--release", "--quiet", "-o", str(dist)]
    else:
        build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)]
    _check(build, ROOT, env, timeout=1800)
    wheels = sorted(dist.glob("mmtwin-*.whl"))
    assert len(wheels) == 1, wheels
    # 2. a fresh venv outside the tree, the wheel and its dependencies installed with pip
    _check([sys.executable, "-m", "venv", str(venv)], work, env, timeout=300)
    _check([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile", str(wheels[0])],
           work, env, timeout=900)
    run_env = {**env, "XDG_CONFIG_HOME": str(xdg)}
    run_env.pop("MMTWIN_DEBUG", None)
    return Installed(wheels[0], venv, work, run_env)


def test_wheel_is_abi3_and_ships_the_data(installed: Installed) -> None:
    # one wheel for every CPython >= 3.11 (pyo3's abi3-py311)
    assert "-cp311-abi3-" in installed.wheel.name, installed.wheel.name
    names = zipfile.ZipFile(installed.wheel).namelist()
    for sub, shipped in (("presets/machines", SHIPPED_MACHINES), ("presets/kernels", SHIPPED_KERNELS), ("experiments", SHIPPED_EXPERIMENTS)):
        for name in shipped:
            assert f"mmtwin/data/{sub}/{name}.toml" in names, (sub, name)
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]
    metadata = zipfile.ZipFile(installed.wheel).read("mmtwin-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Python: >=3.11" in metadata


def test_installed_package_is_the_venv_copy(installed: Installed) -> None:
    code = (
        "import json, mmtwin, mmtwin._core; from mmtwin import config\n"
        "print(json.dumps({'package': mmtwin.__file__, 'core': mmtwin._core.__file__, 'checkout': str(config.REPO_ROOT),\n"
        "  'shown': config.display_path(config.shipped_data() / 'presets' / 'machines' / 'uma-x86-64.toml')}))"
    )
    proc = installed.run("python", "-c", code)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert Path(info["package"]).resolve().is_relative_to(installed.venv.resolve()), info
    assert info["core"].endswith("_core.abi3.so"), info
    assert info["checkout"] == "None", info
    # a shipped preset in a message: relative to the installed package's directory
    assert info["shown"] == "mmtwin/data/presets/machines/uma-x86-64.toml", info


def test_installed_presets_lists_the_shipped_presets(installed: Installed) -> None:
    proc = installed.run("mmtwin", "presets")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    sections = {title: out.split(f"{title}:\n", 1)[1] for title in ("machines", "kernels", "experiments")}
    listed = {t: [line.split()[0] for line in text.split("\n") if line.startswith("  ")] for t, text in sections.items()}
    assert listed["machines"][: len(SHIPPED_MACHINES)] == SHIPPED_MACHINES, out
    assert listed["kernels"][: len(SHIPPED_KERNELS)] == SHIPPED_KERNELS, out
    assert listed["experiments"] == SHIPPED_EXPERIMENTS, out


@pytest.mark.parametrize(("name", "scale"), REPRODUCTIONS)
def test_installed_reproduce_runs_outside_the_tree(installed: Installed, name: str, scale: str) -> None:
    args = ("reproduce", name, "--scale", scale, "--json")
    proc = installed.run("mmtwin", *args)
    # 1: a claim does not hold in the simulation (a result); 2 or 3 or a traceback: broken
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["reproduction"] == name and report["claims"], sorted(report)
    assert all(isinstance(c["held"], bool) for c in report["claims"])
    if engine_available():
        # the same bytes as the source tree gives (a difference after editing crates/ without
        # `pip install -e .` means the tree's engine is stale, not the wheel)
        tree = run_cli(*args)
        assert tree.returncode == proc.returncode, tree.stderr[-3000:]
        assert tree.stdout == proc.stdout, "the installed wheel and the source tree print different results"
