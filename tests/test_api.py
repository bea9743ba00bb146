"""The Python API (mmtwin.run, mmtwin.compare) with the real engine at small scale."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import DATA, requires_engine

import mmtwin
from mmtwin.errors import MmtwinError


def test_import_stays_light() -> None:
    """`import mmtwin` loads neither the engine, pandas nor matplotlib; the API loads on first use."""
    code = "import sys, mmtwin; print(sorted(m for m in ('mmtwin._core', 'pandas', 'matplotlib', 'mmtwin.api') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert callable(mmtwin.run) and callable(mmtwin.compare)
    with pytest.raises(AttributeError):
        mmtwin.nothing_here  # noqa: B018


@requires_engine
def test_run_gives_pandas_views_of_one_result() -> None:
    r = mmtwin.run(experiment="reclaim-writeback-xfs", run="fsmark-512M", scale=0.05)
    assert r.kernel == "3.0-rc6-vanilla"  # the experiment's baseline
    assert r.spec["kernel"]["dirty_ratio"] == 40  # the experiment's [sysctl]
    delta = r.vmstat_delta
    assert delta["pgpgout"] > 0 and delta["nr_vmscan_write"] == r.vmstat["nr_vmscan_write"] - r.raw["vmstat_start"]["nr_vmscan_write"]
    assert list(r.zones.index.names) == ["node", "zone"] and r.zones["present"].sum() > 0
    tl = r.timeline
    assert tl.index.name == "t_s" and {"free N0/DMA32", "nr_dirty", "nr_writeback"} <= set(tl.columns)
    assert tl.index.is_monotonic_increasing and len(tl) > 10
    from mmtwin.results import TIMELINE_COUNTERS

    assert list(tl.columns[-len(TIMELINE_COUNTERS):]) == list(TIMELINE_COUNTERS)
    assert tl["pgpgout"].iloc[0] == 0 and tl["pgpgout"].iloc[-1] == delta["pgpgout"] > 0
    assert tl["pgpgout"].is_monotonic_increasing
    assert tl["nr_vmscan_write"].iloc[-1] == delta["nr_vmscan_write"]
    assert set(r.tasks["kind"]) == {"kswapd", "flusher", "user"}
    text = r.mmtests()
    assert text.startswith("FS-Mark\n./fs_mark ") and "MMTests Statistics: vmstat" in text


@requires_engine
def test_compare_is_a_frame_of_mmtests_rows_one_column_per_kernel() -> None:
    df = mmtwin.compare(experiment="reclaim-writeback-xfs", run="fsmark-512M", scale=0.05, jobs=2)
    assert list(df.columns) == ["3.0-rc6-vanilla", "3.0-rc6-kswapwb", "3.0-rc6-nokswapwb"]
    assert df.loc["Page reclaim invalidate", "3.0-rc6-vanilla"] == 0
    assert df.loc["Page reclaim invalidate", "3.0-rc6-kswapwb"] > 0
    assert df.loc["Page writes by reclaim", "3.0-rc6-nokswapwb"] == 0
    assert [r.kernel for r in df.attrs["results"]] == list(df.columns)
    # the same runs through run() give the same figures (deterministic)
    again = mmtwin.run(experiment="reclaim-writeback-xfs", run="fsmark-512M", kernel="3.0-rc6-kswapwb", scale=0.05)
    assert again.raw == df.attrs["results"][1].raw


HOG = {"machine": "x86-64-4core-512m-xfs", "kernel": "3.0-rc6-vanilla", "workload": {"kind": "memhog", "size_gb": 0.1, "threads": 1}}


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"machine": "nope", "kernel": "3.0-rc6-vanilla", "workload": {"kind": "memhog", "size_gb": 1, "threads": 1}},
         "unknown machine preset 'nope'"),
        ({"experiment": "reclaim-writeback-xfs"}, "run: missing; experiment reclaim-writeback-xfs has runs fsmark-1P"),
        ({"experiment": "reclaim-writeback-xfs", "run": "fsmark-512M", "scale": 2}, "scale: 2 is not allowed"),
        ({"experiment": "reclaim-writeback-xfs", "run": "fsmark-512M", "sysctl": {"dirty_ratio": 140}},
         "dirty_ratio: 140 is not allowed; expected an integer 0..100"),
        ({"machine": "x86-64-4core-512m-xfs", "kernel": "3.0-rc6-vanilla", "workload": {"kind": "memhog", "size_gb": -1, "threads": 1}},
         "size_gb: -1 is not allowed"),
        ({"machine": "x86-64-4core-512m-xfs", "kernel": ["a"], "workload": {"kind": "memhog"}}, "kernel: ['a'] is not allowed"),
        ({"machine": "x86-64-4core-512m-xfs", "kernel": "3.0-rc6-vanilla"}, "workload: missing"),
        ({"kernel": "3.0-rc6-vanilla", "workload": {"kind": "memhog", "size_gb": 1, "threads": 1}}, "machine: missing"),
        ({"experiment": "reclaim-writeback-xfs", "run": "fsmark-512M", "workload": {"kind": "memhog"}}, "workload: not allowed together with run"),
        ({"machine": "x86-64-4core-512m-xfs", "kernel": "3.0-rc6-vanilla", "workload": "memhog"}, "workload: 'memhog' is not allowed"),
        # Wrong types: one line naming the argument, not AttributeError/TypeError out of the loaders, nor the
        # engine's JSON parser ("invalid type: floating point `1.5`, expected u64"), nor a silent default.
        ({**HOG, "machine": 5}, "machine: 5 is not allowed; expected a machine preset name or file path"),
        ({**HOG, "kernel": ""}, "kernel: '' is not allowed; expected a kernel profile name or file path"),
        ({**HOG, "scale": None}, "scale: None is not allowed; expected a number S with 0 < S <= 1"),
        ({**HOG, "scale": True}, "scale: True is not allowed; expected a number S with 0 < S <= 1"),
        ({**HOG, "seed": "x"}, "seed: 'x' is not allowed; expected an integer 0 <= seed < 2^64, or None for the default"),
        ({**HOG, "seed": 1.5}, "seed: 1.5 is not allowed; expected an integer 0 <= seed < 2^64"),
        ({**HOG, "seed": True}, "seed: True is not allowed; expected an integer 0 <= seed < 2^64"),
        ({**HOG, "check": "yes"}, "check: 'yes' is not allowed; expected True or False"),
        ({**HOG, "workload": {"kind": "memhog", "size_gb": 1, "threads": 1, "cpus": "0-4000000000"}},
         "cpus: '0-4000000000' is not allowed; '0-4000000000' goes past 4095"),
        ({"experiment": 5, "run": "x"}, "experiment: 5 is not allowed; expected an experiment name or file path"),
        ({"experiment": "reclaim-writeback-xfs", "run": 5}, "run: 5 is not allowed; expected the name of one of the experiment's runs"),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs: dict, expected: str) -> None:
    with pytest.raises(MmtwinError) as info:
        mmtwin.run(**kwargs)
    assert expected in info.value.message and "\n" not in info.value.message, info.value.message


def test_compare_needs_two_kernels() -> None:
    with pytest.raises(MmtwinError) as info:
        mmtwin.compare(kernels=["3.0-rc6-vanilla"], machine="x86-64-4core-512m-xfs", workload={"kind": "memhog", "size_gb": 0.1, "threads": 1})
    assert "a comparison needs at least two" in info.value.message
    with pytest.raises(MmtwinError) as info:
        mmtwin.compare(kernels="3.0-rc6-vanilla", machine="x86-64-4core-512m-xfs", workload={"kind": "memhog"})
    assert "kernels: '3.0-rc6-vanilla' is not allowed" in info.value.message
    two = {"kernels": ["3.0-rc6-vanilla", "3.0-rc6-kswapwb"], "machine": "x86-64-4core-512m-xfs",
           "workload": {"kind": "memhog", "size_gb": 0.1, "threads": 1}}
    for kwargs, expected in [
        ({**two, "kernels": 5}, "kernels: 5 is not allowed; expected a list of kernel profile names"),
        ({**two, "kernels": ["3.0-rc6-vanilla"] * 2}, "kernels: ['3.0-rc6-vanilla', '3.0-rc6-vanilla'] names a kernel twice"),
        ({**two, "jobs": "x"}, "jobs: 'x' is not allowed; expected an integer >= 1, or None for the number of CPUs"),
        ({**two, "jobs": 1.5}, "jobs: 1.5 is not allowed; expected an integer >= 1"),
        ({**two, "jobs": 0}, "jobs: 0 is not allowed; expected an integer >= 1"),
        ({**two, "check": 2}, "check: 2 is not allowed; expected True or False"),
    ]:
        with pytest.raises(MmtwinError) as info:
            mmtwin.compare(**kwargs)
        assert info.value.message.startswith(expected), info.value.message


@requires_engine
def test_a_machine_may_be_a_path_object() -> None:
    from pathlib import Path

    r = mmtwin.run(**{**HOG, "machine": Path(DATA / "presets" / "machines" / "x86-64-4core-512m-xfs.toml")})
    assert r.spec["machine"]["name"] == "x86-64-4core-512m-xfs"
