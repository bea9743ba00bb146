"""mmtwin's MMTests text against what the real MMTests scripts printed for the same results.

tests/fixtures/mmtests-golden/ holds results trees written by mmtwin and, per era, the
output of the MMTests compare scripts of that date run on them (tools/mmtests-golden.sh;
the README there names each commit and command). No MMTests script is needed here.

Character by character: the 2011 FS-Mark and LARGE DD tables, every 2011 duration block,
the 2012 and 2017 duration and vmstat blocks. Row by row, at the script's width: the
2011 vmstat block, where mmtwin keeps the seeds' look (fewer rows, %12s in seed 000's
look, 100% direct scans when only direct reclaim scanned); each deliberate difference is
asserted below, so a change on either side fails a test.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from mmtwin import results as saved_mod
from mmtwin.reports import mmtests2011 as m11

GOLDEN = FIXTURES / "mmtests-golden"
TREES = GOLDEN / "trees"
MARKERS = ("===BEGIN", "===END", "===INPUTS", "===TITLES")
# The rows d8783346's subreport/mmtests-vmstat prints that seed 000's look leaves out.
SCRIPT_ONLY_2011 = {
    "Page writes file", "Page writes anon", "Page reclaim invalidate", "Kswapd skipped wait",
    "Compaction stalls", "Compaction success", "Compaction failures", "Compaction pages moved",
    "Compaction move failure",
}


def golden(era: str, name: str) -> str:
    return (GOLDEN / era / f"{name}.txt").read_text()


def mmtwin_text(tree: str, era: str) -> str:
    """What ``mmtwin compare --results TREE --era ERA --no-ftrace`` prints below its first line."""
    saved = saved_mod.load(TREES / tree)
    return saved_mod.compare_report(saved_mod._by_run(saved.runs), era, ftrace=False)


def script_lines(text: str) -> list[str]:
    """The script's output without compare-kernels.sh's ===BEGIN/END/INPUTS/TITLES markers."""
    return [line for line in text.splitlines() if not line.startswith(MARKERS)]


def block(lines: list[str], title: str) -> list[str]:
    """The lines of a block: from its title to the next blank line (or the end)."""
    start = lines.index(title)
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def table(lines: list[str], title: str) -> list[str]:
    """A benchmark table: its title, the two header rows and the rows up to the duration block."""
    start = lines.index(title)
    return lines[start : lines.index("MMTests Statistics: duration", start)]


def cells(line: str, width: int) -> tuple[str, list[str]]:
    """A ``%-40s`` label and its ``%<width>s`` cells, read by position (the script's cells may run together)."""
    label, rest = line[:40].rstrip(), line[40:]
    return label, [rest[i : i + width].strip() for i in range(0, len(rest), width)]


def check_vmstat_2011(mine: list[str], script: list[str], width: int, expected_only_script: set[str],
                      expected_only_mine: set[str] = frozenset()) -> dict[str, tuple[list[str], list[str]]]:
    """mmtwin's 2011 vmstat rows against the script's: same labels in the same order, and each row
    rendered at the script's width is the script's line; returns the rows whose cells differ."""
    assert mine[0] == script[0] == "MMTests Statistics: vmstat"
    script_rows = {cells(line, 10)[0]: line for line in script[1:]}
    labels = [line[:40].rstrip() for line in mine[1:]]
    assert set(script_rows) - set(labels) == expected_only_script
    assert set(labels) - set(script_rows) == set(expected_only_mine)
    common = [label for label in labels if label in script_rows]
    assert common == [label for label in script_rows if label in common]  # the script's order
    differ = {}
    for line in mine[1:]:
        label, values = line[:40].rstrip(), line[40:].split()
        if label not in script_rows:
            continue
        rendered = f"{label:<40}" + "".join(f"{v:>10}" for v in values)
        if rendered != script_rows[label]:
            differ[label] = (values, cells(script_rows[label], 10)[1])
    return differ


def check_percentage_direct(differ: dict[str, tuple[list[str], list[str]]], mine: list[str]) -> None:
    """Seed 000's rule: 100% when only direct reclaim scanned; d8783346 prints 0% whenever kswapd
    scanned nothing. That is the only cell allowed to differ, and only in such columns."""
    kswapd = cells(next(line for line in mine if line.startswith("Kswapd pages scanned")), 12)[1]
    direct = cells(next(line for line in mine if line.startswith("Direct pages scanned")), 12)[1]
    assert set(differ) <= {"Percentage direct scans"}
    if differ:
        ours, theirs = differ["Percentage direct scans"]
        for k, d, o, t in zip(kswapd, direct, ours, theirs):
            if k == "0" and d != "0":
                assert (o, t) == ("100%", "0%")
            else:
                assert o == t


# --------------------------------------------------------------------------- 2011 (compare-kernels.sh)


@pytest.mark.parametrize("tree, title", [("zlcfirst-fsmark", "FS-Mark"), ("zlcfirst-largedd", "LARGE DD")])
def test_2011_benchmark_table_and_duration_are_the_scripts(tree: str, title: str) -> None:
    kind = tree.split("-")[1]
    script = script_lines(golden("2011", kind))
    mine = mmtwin_text(tree, "2011").splitlines()
    ours = table(mine, title)
    if kind == "fsmark":
        # seed 000 prints fs_mark's command line under the title; the script does not
        assert ours.pop(1).startswith("./fs_mark  -d  ")
    assert ours == table(script, title)
    assert block(mine, "MMTests Statistics: duration") == block(script, "MMTests Statistics: duration")


@pytest.mark.parametrize("tree", ["zlcfirst-fsmark", "zlcfirst-largedd", "zlcfirst-mmapstream"])
def test_2011_vmstat_rows_are_the_scripts_in_seed_000s_look(tree: str) -> None:
    kind = tree.split("-")[1]
    script = script_lines(golden("2011", kind))
    mine = mmtwin_text(tree, "2011").splitlines()
    ours = block(mine, "MMTests Statistics: vmstat")
    assert len(ours) == 1 + len(m11.VMSTAT_ROWS)
    differ = check_vmstat_2011(ours, block(script, "MMTests Statistics: vmstat"), 12, SCRIPT_ONLY_2011)
    check_percentage_direct(differ, ours)


def test_2011_fixtures_exercise_both_percentage_rules() -> None:
    """The largedd fixture has a column where only direct reclaim scanned, the fsmark one both kinds."""
    script = script_lines(golden("2011", "largedd"))
    assert cells(next(line for line in script if line.startswith("Percentage direct")), 10)[1] == ["0%"] * 3
    mine = mmtwin_text("zlcfirst-largedd", "2011").splitlines()
    assert cells(next(line for line in mine if line.startswith("Percentage direct")), 12)[1] == ["100%"] * 3


def test_2011_mapped_writer_blocks() -> None:
    """No 2011 subreport has the mapped writer: the golden is the two monitor subreports
    compare-kernels.sh sources after each benchmark (duration, vmstat, each then a blank line)."""
    script = golden("2011", "mmapstream").splitlines()
    mine = mmtwin_text("zlcfirst-mmapstream", "2011").splitlines()
    assert mine[0] == "Streaming Mapped Writer"  # seed 000's title; the script prints none
    assert block(mine, "MMTests Statistics: duration") == block(script, "MMTests Statistics: duration")


def test_2011_memory_hog_blocks() -> None:
    """The memory hog's 2011 blocks are the file workloads'; its kernels have the writeback
    series' counter, so this is seed 004's look: the script's %10s, so every shared row is the
    script's line once re-rendered at %10s; as printed, two 10-character velocities differ:
    the script runs them together, seed 004 keeps them apart."""
    script = golden("2011", "memhog").splitlines()
    mine = mmtwin_text("memhog", "2011").splitlines()
    assert block(mine, "MMTests Statistics: duration") == block(script, "MMTests Statistics: duration")
    ours = block(mine, "MMTests Statistics: vmstat")
    differ = check_vmstat_2011(ours, block(script, "MMTests Statistics: vmstat"), 10,
                               {"Page writes file", "Page writes anon"}, {"Page reclaim throttled"})
    assert differ == {}
    # The script's %10s runs two 10-character velocities together; seed 004's look keeps a space.
    theirs = next(line for line in script if line.startswith("Direct velocity"))
    mine_row = next(line for line in ours if line.startswith("Direct velocity"))
    a, b = mine_row[40:].split()
    assert len(a) == len(b) == 10, "the fixture no longer has two 10-character velocities"
    assert theirs == f"{'Direct velocity':<40}{a}{b}"
    assert mine_row == f"{'Direct velocity':<40}{a} {b}"


def test_2011_writeback_series_look_is_7ed65ad9() -> None:
    """Seed 004's look (the kernels have nr_vmscan_invalidate) against gormanm/mmtests 7ed65ad9,
    the commit that adjusted the reports for that series: the table and duration block character by
    character, the vmstat rows at %10s character by character but two."""
    script = script_lines(golden("2011b", "fsmark"))
    mine = mmtwin_text("reclaim-writeback-fsmark", "2011").splitlines()
    ours = table(mine, "FS-Mark")
    assert ours.pop(1).startswith("./fs_mark  -d  ")
    assert ours == table(script, "FS-Mark")
    assert block(mine, "MMTests Statistics: duration") == block(script, "MMTests Statistics: duration")
    vm = block(mine, "MMTests Statistics: vmstat")
    # seed 004's rows: 7ed65ad9's, and "Page reclaim throttled" (a counter of the series' v1
    # that no public MMTests printed)
    differ = check_vmstat_2011(vm, block(script, "MMTests Statistics: vmstat"), 10, set(), {"Page reclaim throttled"})
    # 7ed65ad9 greps a summary line it never writes: its "Kswapd skipped wait" row is blank;
    # seed 004 (a later script) prints the counter, as mmtwin does
    assert list(differ) == ["Kswapd skipped wait"]
    ours_row, theirs_row = differ["Kswapd skipped wait"]
    assert theirs_row == ["", "", ""] and all(v.isdigit() for v in ours_row)


# --------------------------------------------------------------------------- 2012 and 2017


def test_2012_memory_hog_blocks_are_the_scripts() -> None:
    """9e71bc6a's mmtests-duration and mmtests-vmstat, character by character (blank lines too)."""
    text = mmtwin_text("memhog", "2012")
    assert text[text.index("MMTests Statistics: duration") :] + "\n" == golden("2012", "memhog")


def test_2017_memory_hog_monitors_are_compare_mmtests() -> None:
    """compare-mmtests.pl --print-monitor duration / mmtests-vmstat of 4aa747e1, character by
    character under mmtwin's titles (the script prints none; authors pasted them into their mails)."""
    lines = mmtwin_text("memhog", "2017").splitlines()
    assert block(lines, "MMTests Statistics: duration")[1:] == golden("2017", "memhog-duration").splitlines()
    assert block(lines, "MMTests Statistics: vmstat")[1:] == golden("2017", "memhog-vmstat").splitlines()


def test_2017_vmstat_keeps_the_shifted_formats() -> None:
    """MonitorMmtestsvmstat picks a row's format by position in its full key list, so the
    skipped highmem velocity makes 'Page writes by reclaim' a velocity (three decimals)."""
    vm = golden("2017", "memhog-vmstat").splitlines()
    values = next(line for line in vm if line.startswith("Page writes by reclaim")).split()[-2:]
    assert all(re.fullmatch(r"[0-9]+\.000", v) for v in values), values
    mine = mmtwin_text("memhog", "2017").splitlines()
    assert next(line for line in mine if line.startswith("Page writes by reclaim")).split()[-2:] == values


# --------------------------------------------------------------------------- the inputs stay valid


@pytest.mark.parametrize("tree", sorted(p.name for p in TREES.iterdir()))
def test_fixture_trees_are_what_mmtwin_writes_now(tree: str, tmp_path: Path) -> None:
    """The goldens were computed from the classic layout of these trees: writing their runs again
    must give the same files, or the goldens must be regenerated (tools/mmtests-golden.sh)."""
    saved = saved_mod.load(TREES / tree)
    saved_mod.write_tree(tmp_path / "t", saved.command, saved.runs, era=saved.era, summary_line=saved.summary_line)
    log = TREES / tree / "work" / "log"
    again = tmp_path / "t" / "work" / "log"
    files = sorted(p.relative_to(log) for p in log.rglob("*") if p.is_file())
    assert files and all(str(f).startswith("tests-timestamp-") or "/noprofile/" in str(f) for f in files)
    for f in files:
        assert (again / f).read_bytes() == (log / f).read_bytes(), f


def test_report_reads_a_fixture_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``mmtwin report`` on a copy of a fixture tree prints the comparison it was written with."""
    from mmtwin import cli

    shutil.copytree(TREES / "memhog", tmp_path / "m")
    with pytest.raises(SystemExit) as info:
        cli.main(["report", str(tmp_path / "m")])
    out = capsys.readouterr().out
    assert info.value.code in (0, None)
    assert out.endswith("\n".join(block(out.splitlines(), "MMTests Statistics: vmstat")) + "\n")
    assert "\n".join(block(out.splitlines(), "MMTests Statistics: vmstat")[1:]) + "\n" == golden("2017", "memhog-vmstat")
