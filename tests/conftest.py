from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHON_DIR = ROOT / "python"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
DATA = PYTHON_DIR / "mmtwin" / "data"  # the shipped presets/ and experiments/ (package data)
sys.path.insert(0, str(PYTHON_DIR))
sys.path.insert(0, str(Path(__file__).resolve().parent))
# The environment pytest started with, before any fixture changed it (tests/test_wheel.py's pip runs).
ORIGINAL_ENV = dict(os.environ)

# An engine built before the abi3 switch (_core.cpython-3XX-*.so) is imported in
# preference to the current _core.abi3.so, so a stale one would shadow every rebuild.
_ENGINES = sorted(p.name for p in (PYTHON_DIR / "mmtwin").glob("_core*.so"))
if len(_ENGINES) > 1:
    raise RuntimeError(
        f"python/mmtwin holds {len(_ENGINES)} engine builds ({', '.join(_ENGINES)}); the first found shadows "
        "the others: delete the stale ones (rm python/mmtwin/_core.cpython-*) and run pip install -e . again"
    )

from mmtwin.engine import engine_available  # noqa: E402


# In CI the engine is always built (.ci/run installs it): a missing or stale
# engine there is a failure, never a skip.
if os.environ.get("CI") and not engine_available():
    raise RuntimeError("CI: mmtwin._core is not built; .ci/run must install it")
requires_engine = pytest.mark.skipif(not engine_available(), reason="mmtwin._core is not built (pip install -e .)")


@pytest.fixture(autouse=True)
def no_user_presets(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty $XDG_CONFIG_HOME of its own for each test: the developer's ~/.config/mmtwin never reaches a test."""
    empty = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(empty))
    return empty


@pytest.fixture
def fixture_presets(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the preset and experiment lookups at tests/fixtures."""
    monkeypatch.setenv("MMTWIN_PRESETS", str(FIXTURES / "presets"))
    monkeypatch.setenv("MMTWIN_EXPERIMENTS", str(FIXTURES / "experiments"))
    return FIXTURES


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    import mmtwin.engine
    from fakeengine import fake_run_spec

    monkeypatch.setattr(mmtwin.engine, "run_spec", fake_run_spec)


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PYTHON_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("MMTWIN_DEBUG", None)
    env.update(extra)
    return env


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``mmtwin ARGS`` in a fresh interpreter (``python -m mmtwin``)."""
    return subprocess.run(
        [sys.executable, "-m", "mmtwin", *args],
        capture_output=True,
        text=True,
        env=env or cli_env(),
        cwd=cwd or ROOT,
        timeout=timeout,
        check=False,
    )


def fixture_env() -> dict[str, str]:
    return cli_env(MMTWIN_PRESETS=str(FIXTURES / "presets"), MMTWIN_EXPERIMENTS=str(FIXTURES / "experiments"))
