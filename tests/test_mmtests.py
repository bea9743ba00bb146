"""MMTests comparison: the percentage formulas of each era and the report layout."""

from __future__ import annotations

import pytest

from mmtwin.errors import MmtwinError
from mmtwin.reports import mmtests as mt


def test_worked_example_2011_fsmark() -> None:
    # Files/s mean 100.11 -> 135.17 printed (25.94%) by the 2011 scripts: relative to the new value.
    assert f"{mt.pdiff(100.11, 135.17, '2011'):.2f}" == "25.94"
    # The same numbers with the baseline-relative formula print 35.02%.
    assert f"{mt.pdiff(100.11, 135.17, '2012'):.2f}" == "35.02"


def test_worked_example_2017_simoop() -> None:
    # Amean p99-Write 6668722.09 -> 16854.04 printed (99.75%): pndiff, lower is better.
    assert f"{mt.pndiff(6668722.09, 16854.04, '2017'):.2f}" == "99.75"
    assert f"{mt.pndiff(6668722.09, 16854.04, '2012'):.2f}" == "99.75"


def test_other_2011_examples_from_the_writeback_mails() -> None:
    assert f"{mt.pdiff(8.10, 8.60, '2011'):.2f}" == "5.81"
    assert f"{mt.pndiff(29678.24, 40053.96, '2011'):.2f}" == "-25.90"


@pytest.mark.parametrize("era", mt.ERAS)
def test_sign_convention_positive_is_better(era: str) -> None:
    assert mt.pdiff(100, 110, era) > 0  # higher is better and it went up
    assert mt.pdiff(100, 90, era) < 0
    assert mt.pndiff(100, 90, era) > 0  # lower is better and it went down
    assert mt.pndiff(100, 110, era) < 0


def test_special_cases() -> None:
    for era in mt.ERAS:
        assert mt.pdiff(5, 5, era) == 0
        assert mt.pndiff(5, 5, era) == 0
        assert mt.pdiff(5, 0, era) == 0
        assert mt.pdiff(0, 0, era) == 0
    assert mt.pdiff(0, 3, "2012") == 100
    assert mt.pndiff(0, 3, "2017") == -99
    assert mt.pndiff(7, 0, "2017") == 100
    assert mt.pndiff(7, 0, "2011") == 0
    # 2011 relative to new, 2012+ relative to base: different numbers for the same pair
    assert mt.pndiff(200, 100, "2011") == 100.0
    assert mt.pndiff(200, 100, "2012") == 50.0


def test_unknown_era() -> None:
    with pytest.raises(MmtwinError, match=r"--era: '2020' is not allowed; expected one of: 2011, 2012, 2017"):
        mt.pdiff(1, 2, "2020")


def test_header_split() -> None:
    assert mt.split_perl("4.11.0-rc1-vanilla") == ("4.11.0-rc1", "vanilla")
    assert mt.split_perl("5.8-vanilla") == ("5.8", "vanilla")
    assert mt.split_perl("2.6.18-mm3-zonelist-cache") == ("2.6.18", "mm3-zonelist-cache")
    assert mt.split_perl("vanilla") == ("vanill", "vanilla")
    assert mt.split_shell("fsmark-3.0.0-rc6-vanilla") == ("fsmark-3.0.0", "rc6-vanilla")


def _runs() -> list[mt.RunSamples]:
    base = {"times": {"user_s": 24.0, "sys_s": 153.0, "elapsed_s": 177.0},
            "vmstat": {"numa_hit": 10, "pgalloc_dma": 1000, "pgfree": 3}}
    new = {"times": {"user_s": 24.0, "sys_s": 151.0, "elapsed_s": 176.0},
           "vmstat": {"numa_hit": 12, "pgalloc_dma": 1000, "pgfree": 3}}
    return [mt.samples_from_results("2.6.18-mm3", [base], 1), mt.samples_from_results("2.6.18-mm3-zonelist-cache", [new], 1)]


def test_2017_report_layout() -> None:
    text = mt.compare_report(_runs(), "2017")
    lines = text.splitlines()
    assert lines[0] == "memhog"
    assert lines[1].rstrip().endswith("2.6.18")
    assert lines[2].rstrip().endswith("mm3-zonelist-cache")
    amean_sys = next(line for line in lines if line.startswith("Amean") and "System-1" in line)
    # %12.2f then " (%6.2f%%)"; 100 - 151*100/153 = 1.31
    assert amean_sys == "Amean    System-1       153.00 (  0.00%)      151.00 (  1.31%)"
    stats = [line.split()[0] for line in lines[3:18]]
    assert stats == ["Min"] * 3 + ["Amean"] * 3 + ["Stddev"] * 3 + ["CoeffVar"] * 3 + ["Max"] * 3
    assert "MMTests Statistics: duration" in lines
    user = next(line for line in lines if line.startswith("User "))
    assert user.split() == ["User", "24.00", "24.00"]
    vm = lines[lines.index("MMTests Statistics: vmstat") + 3 :]
    # MonitorMmtestsvmstat's rows: %-Ns label (the longest label), %12d values; a header
    # longer than the cell runs into its neighbour, as sprintf lets it
    hit = next(line for line in vm if line.startswith("NUMA alloc hit"))
    assert hit == f"{'NUMA alloc hit':<23}{'10':>12}{'12':>12}"
    assert lines[lines.index("MMTests Statistics: vmstat") + 2].endswith("mm3-zonelist-cache")


def test_2011_report_layout() -> None:
    text = mt.compare_report(_runs(), "2011")
    lines = text.splitlines()
    mean_sys = next(line for line in lines if line.split()[:2] == ["System-1", "mean"])
    # relative to the new value: (153-151)*100/151 = 1.32, " %11.2f (%5.2f%%)"
    assert mean_sys.endswith("      153.00 ( 0.00%)      151.00 ( 1.32%)")
    row = lines[lines.index("MMTests Statistics: duration") + 1]
    # no header rows; %-40s then %10s per run of what perl printed for GNU time's user + sys
    assert row == f"{'User/Sys Time Running Test (seconds)':<40}{'177':>10}{'175':>10}"
    assert lines[lines.index("MMTests Statistics: duration") + 2].startswith("Total Elapsed Time (seconds)")


def test_2012_duration_rows() -> None:
    lines = mt.duration_block(_runs(), "2012").splitlines()
    labels = [line[:40].rstrip() for line in lines[1:]]
    assert labels == [
        "Sys Time Running Test (seconds)",
        "User+Sys Time Running Test (seconds)",
        "Total Elapsed Time (seconds)",
    ]


def test_compare_needs_two() -> None:
    with pytest.raises(MmtwinError, match="at least two"):
        mt.benchmark_table(_runs()[:1], "2017")


def test_stats() -> None:
    xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    assert mt.stat_amean(xs) == 5.0
    assert mt.stat_stddev(xs) == 2.0  # population
    assert mt.stat_coeffvar(xs) == 40.0
    assert mt.stat_coeffvar([0.0, 0.0]) == 0.0
