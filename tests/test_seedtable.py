"""The seed-003 table: formatting and the transcription of the published figures."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mmtwin.reports.seedtable import Cell, Times, format_beside, format_percent, format_seed_table, percent_better
from mmtwin.reproduce import zonelist_cache as zc


@pytest.mark.parametrize(
    ("base", "new", "text"),
    [
        (153, 151, "1%"),
        (99, 99, "0%"),
        (111, 112, "-0%"),  # a loss under 1% keeps its sign, as in the seed
        (501, 511, "-1%"),  # -1.996% truncates to -1
        (1118, 965, "13%"),  # 13.68% truncates to 13
        (2392, 2116, "11%"),  # 11.54% truncates to 11
    ],
)
def test_percent_format(base: int, new: int, text: str) -> None:
    assert format_percent(percent_better(base, new)) == text


def test_percent_zero_base() -> None:
    assert percent_better(0, 1) is None
    assert format_percent(None) == "n/a"
    assert percent_better(3, 2) == Fraction(100, 3)


def test_published_transcription_matches_the_seeds_percent_column() -> None:
    """Recomputing the seed's 'percent systime better' from its sys columns gives what it printed."""
    assert len(zc.PUBLISHED) == 16
    for cell in zc.PUBLISHED:
        computed = format_percent(percent_better(cell.base.sys, cell.new.sys))
        assert computed == zc.PUBLISHED_PERCENT[(cell.size_gb, cell.threads)], cell
    # and the seed's own claim: sys up to ~13% better at the intermediate thread counts
    assert max(percent_better(c.base.sys, c.new.sys) for c in zc.PUBLISHED) < 14


def test_seed_table_rows() -> None:
    cells = [c for c in zc.PUBLISHED if (c.size_gb, c.threads) in {(12, 1), (38, 55), (90, 37)}]
    text = format_seed_table(cells, "2.6.18-mm3", "2.6.18-mm3-zonelist-cache")
    lines = text.splitlines()
    assert "2.6.18-mm3" in lines[0] and "zonelist-cache" in lines[0] and "delta (< 0 good)" in lines[0]
    assert lines[2].split() == ["mem", "threads", "sys", "user", "real", "sys", "user", "real", "sys", "user", "real", "better"]
    assert lines[3].split() == ["12", "1", "153", "24", "177", "151", "24", "176", "-2", "0", "-1", "1%"]
    assert lines[4].split() == ["38", "55", "501", "77", "23", "511", "80", "24", "10", "3", "1", "-1%"]
    assert lines[5].split() == ["90", "37", "3313", "238", "175", "2972", "225", "145", "-341", "-13", "-30", "10%"]
    # columns line up: every data row has the same length
    assert len({len(line) for line in lines[3:]}) == 1


def test_seed_table_rounds_and_uses_printed_values() -> None:
    cell = Cell(12, 19, Times(99.4, 22.5, 8.49), Times(99.6, 22.4, 8.51))
    row = format_seed_table([cell], "a", "b").splitlines()[3].split()
    # 99.4 -> 99, 99.6 -> 100: the delta and the percent follow the printed integers
    assert row == ["12", "19", "99", "22", "8", "100", "22", "9", "1", "0", "1", "-1%"]
    two = format_seed_table([cell], "a", "b", decimals=2).splitlines()[3].split()
    assert two[:5] == ["12", "19", "99.40", "22.50", "8.49"]
    assert two[-1] == "-0%"


def test_beside_layout() -> None:
    sim = [Cell(12, 1, Times(150.4, 23.6, 174.2), Times(149.0, 23.5, 172.9))]
    text = format_beside(zc.PUBLISHED, sim, "2.6.18-mm3", "2.6.18-mm3-zonelist-cache")
    lines = text.splitlines()
    row = lines[2].split()
    assert row == ["12", "1", "153/150", "24/24", "177/174", "151/149", "24/24", "176/173", "1%", "0%"]
    assert len(lines) == 4  # only cells present in both


def test_cell_errors_and_medians() -> None:
    from mmtwin.reports.seedtable import cell_errors, format_errors, median_errors

    pub = [Cell(12, 1, Times(100, 20, 120), Times(100, 20, 120)), Cell(38, 19, Times(200, 40, 50), Times(180, 40, 40))]
    sim = [Cell(12, 1, Times(110, 20, 60), Times(90, 20, 120)), Cell(38, 19, Times(100, 50, 50), Times(180, 30, 40))]
    rows = cell_errors(pub, sim)
    assert len(rows) == 12
    err = {(r["size_gb"], r["kernel"], r["column"]): r["error_pct"] for r in rows}
    assert err[(12, "base", "sys")] == 10.0 and err[(12, "base", "real")] == -50.0
    assert err[(38, "base", "sys")] == -50.0 and err[(38, "new", "user")] == -25.0
    med = median_errors(rows)
    # medians of |error|: base sys (10, 50) -> 30; new sys (10, 0) -> 5
    assert med["base"]["sys"] == 30.0 and med["new"]["sys"] == 5.0 and med["base"]["real"] == 25.0
    text = format_errors(rows, "a", "a-b")
    assert text.splitlines()[2].split() == ["12", "1", "+10%", "+0%", "-50%", "-10%", "+0%", "+0%"]
    assert text.splitlines()[4].split() == ["median", "30%", "12%", "25%", "5%", "12%", "0%"]


def test_new_claims_can_fail() -> None:
    """C4 and C5 read figures the model decides: a run whose real time is its
    CPU time spread over its threads fails C5; one where 55 threads take longer
    than 37 fails C4."""
    even = [Cell(c.size_gb, c.threads, Times(c.base.sys, c.base.user, (c.base.sys + c.base.user) / c.threads),
                 Times(c.new.sys, c.new.user, (c.new.sys + c.new.user) / c.threads)) for c in zc.PUBLISHED]
    claims = {cl["id"]: cl for cl in zc.evaluate(even)}
    assert not claims["C5"]["held"] and claims["C4"]["held_published"] and claims["C5"]["held_published"]
    slow55 = [Cell(c.size_gb, c.threads, Times(c.base.sys, c.base.user, c.base.real * (3 if c.threads == 55 else 1)), c.new)
              for c in zc.PUBLISHED]
    assert not {cl["id"]: cl for cl in zc.evaluate(slow55)}["C4"]["held"]
