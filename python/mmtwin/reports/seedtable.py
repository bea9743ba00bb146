"""The table of seed 003 (Paul Jackson's zonelist-cache mail): sys/user/real
for a baseline and a new kernel per (GB, threads) cell, their deltas and the
percentage by which the new kernel's system time is better.

Everything in a printed row is computed from the printed (rounded) values, as
in the seed, so a reader can recheck each row: deltas are new - base and the
percentage is (base_sys - new_sys) * 100 / base_sys, truncated toward zero
with the sign kept (``-0%`` for a small loss, as the seed prints it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction


@dataclass(frozen=True)
class Times:
    sys: float
    user: float
    real: float


@dataclass(frozen=True)
class Cell:
    size_gb: int | float
    threads: int
    base: Times
    new: Times


def quantize(value: float, decimals: int) -> Decimal:
    """``value`` rounded half-even to ``decimals`` places, exactly as it is printed."""
    step = Decimal(1).scaleb(-decimals)
    return Decimal(repr(float(value))).quantize(step, rounding=ROUND_HALF_EVEN)


def percent_better(base_sys: float | Decimal, new_sys: float | Decimal) -> Fraction | None:
    """(base - new) * 100 / base, exactly; None when base is 0."""
    base = Fraction(str(base_sys)) if isinstance(base_sys, Decimal) else Fraction(base_sys)
    new = Fraction(str(new_sys)) if isinstance(new_sys, Decimal) else Fraction(new_sys)
    if base == 0:
        return None
    return (base - new) * 100 / base


def format_percent(pct: Fraction | float | None) -> str:
    """``12%``, ``0%``, ``-0%`` (a loss under 1%), ``-1%``: truncated toward zero, sign kept."""
    if pct is None:
        return "n/a"
    sign = "-" if pct < 0 else ""
    return f"{sign}{int(abs(Fraction(pct)))}%"


def short_name(name: str, base: str) -> str:
    """The seed's column title for the new kernel: ``zonelist-cache`` for ``<base>-zonelist-cache``."""
    if name.startswith(base + "-") and len(name) > len(base) + 1:
        return name[len(base) + 1 :]
    return name


def _gb(size: int | float) -> str:
    return f"{size:g}" if isinstance(size, float) else str(size)


def cell_row(cell: Cell, decimals: int = 0) -> tuple[list[Decimal], str]:
    """The nine printed numbers of a row (base sys/user/real, new, delta) and the percent text."""
    b = [quantize(v, decimals) for v in (cell.base.sys, cell.base.user, cell.base.real)]
    n = [quantize(v, decimals) for v in (cell.new.sys, cell.new.user, cell.new.real)]
    d = [y - x for x, y in zip(b, n)]
    return b + n + d, format_percent(percent_better(b[0], n[0]))


def format_seed_table(cells: Sequence[Cell], base_name: str, new_name: str, decimals: int = 0) -> str:
    """The seed-003 layout, one row per cell, times in seconds."""
    vw = 6 + (decimals + 1 if decimals else 0)
    group = 3 * vw
    titles = (base_name, short_name(new_name, base_name), "delta (< 0 good)")
    gw = max([group, *(len(t) for t in titles)])
    pad = " " * (gw - group)

    def grp(texts: Sequence[str]) -> str:
        return "  ".join(f"{t:>{gw}}" for t in texts)

    lines = [
        f"{'number':>12}  " + grp([f"{t:^{group}}" for t in titles]) + f"  {'percent':>8}",
        f"{'GBs':>4} {'N':>7}  " + grp(["-" * (group - 2) + "  "] * 3) + f"  {'systime':>8}",
        f"{'mem':>4} {'threads':>7}  " + grp([f"{'sys':>{vw}}{'user':>{vw}}{'real':>{vw}}"] * 3) + f"  {'better':>8}",
    ]
    for cell in cells:
        nums, pct = cell_row(cell, decimals)
        texts = [pad + "".join(f"{str(v):>{vw}}" for v in nums[i : i + 3]) for i in (0, 3, 6)]
        lines.append(f"{_gb(cell.size_gb):>4} {cell.threads:>7}  " + "  ".join(texts) + f"  {pct:>8}")
    return "\n".join(lines) + "\n"


def format_beside(
    published: Sequence[Cell],
    simulated: Sequence[Cell],
    base_name: str,
    new_name: str,
    decimals: int = 0,
) -> str:
    """Published vs simulated per cell: each field prints ``published/simulated``."""
    by_key = {(c.size_gb, c.threads): c for c in simulated}
    rows: list[list[str]] = []
    for pub in published:
        sim = by_key.get((pub.size_gb, pub.threads))
        if sim is None:
            continue
        fields = [_gb(pub.size_gb), str(pub.threads)]
        for kernel in ("base", "new"):
            p: Times = getattr(pub, kernel)
            s: Times = getattr(sim, kernel)
            for attr in ("sys", "user", "real"):
                fields.append(f"{quantize(getattr(p, attr), 0)}/{quantize(getattr(s, attr), decimals)}")
        fields.append(format_percent(percent_better(quantize(pub.base.sys, 0), quantize(pub.new.sys, 0))))
        fields.append(format_percent(percent_better(quantize(sim.base.sys, decimals), quantize(sim.new.sys, decimals))))
        rows.append(fields)
    w = max([9, *(len(f) for r in rows for f in r[2:8])]) + 1
    kg = 3 * w
    titles = (base_name, short_name(new_name, base_name))
    lines = [
        f"{'':>9}" + "".join(f"{t:^{kg}}" for t in titles) + f"{'sys better':>14}",
        f"{'GBs':>4} {'N':>4}" + (f"{'sys':>{w}}{'user':>{w}}{'real':>{w}}") * 2 + f"{'pub':>7}{'sim':>7}",
    ]
    for r in rows:
        lines.append(f"{r[0]:>4} {r[1]:>4}" + "".join(f"{x:>{w}}" for x in r[2:8]) + f"{r[8]:>7}{r[9]:>7}")
    lines.append("(each field: published/simulated seconds)")
    return "\n".join(lines) + "\n"


COLUMNS = ("sys", "user", "real")


def cell_errors(published: Sequence[Cell], simulated: Sequence[Cell]) -> list[dict[str, object]]:
    """Per cell, kernel ("base", "new") and column: published, simulated and the
    signed relative error (simulated - published) / published in percent (None
    where the published figure is 0). Only cells present in both."""
    by_key = {(c.size_gb, c.threads): c for c in simulated}
    rows: list[dict[str, object]] = []
    for pub in published:
        sim = by_key.get((pub.size_gb, pub.threads))
        if sim is None:
            continue
        for kernel in ("base", "new"):
            p: Times = getattr(pub, kernel)
            s: Times = getattr(sim, kernel)
            for col in COLUMNS:
                pv, sv = float(getattr(p, col)), float(getattr(s, col))
                err = (sv - pv) * 100.0 / pv if pv else None
                rows.append({
                    "size_gb": pub.size_gb, "threads": pub.threads, "kernel": kernel, "column": col,
                    "published": pv, "simulated": sv, "error_pct": None if err is None else round(err, 2),
                })
    return rows


def _median(xs: Sequence[float]) -> float | None:
    if not xs:
        return None
    v = sorted(xs)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def median_errors(rows: Sequence[dict[str, object]]) -> dict[str, dict[str, float | None]]:
    """Median |error| in percent per kernel ("base", "new") and column."""
    out: dict[str, dict[str, float | None]] = {}
    for kernel in ("base", "new"):
        out[kernel] = {}
        for col in COLUMNS:
            errs = [abs(float(r["error_pct"])) for r in rows  # type: ignore[arg-type]
                    if r["kernel"] == kernel and r["column"] == col and r["error_pct"] is not None]
            m = _median(errs)
            out[kernel][col] = None if m is None else round(m, 2)
    return out


def format_errors(rows: Sequence[dict[str, object]], base_name: str, new_name: str) -> str:
    """Each cell's error per column, (simulated - published) / published in
    percent, then the median |error| per column under the table."""
    cells: dict[tuple[object, object], dict[tuple[object, object], object]] = {}
    for r in rows:
        cells.setdefault((r["size_gb"], r["threads"]), {})[(r["kernel"], r["column"])] = r["error_pct"]

    def pct(v: object) -> str:
        return "n/a" if v is None else f"{float(v):+.0f}%"  # type: ignore[arg-type]

    w = 7
    titles = (base_name, short_name(new_name, base_name))
    lines = [
        f"{'':>9}" + "".join(f"{t:^{3 * w}}" for t in titles),
        f"{'GBs':>4} {'N':>4}" + (f"{'sys':>{w}}{'user':>{w}}{'real':>{w}}") * 2,
    ]
    for (gb, n), errs in cells.items():
        fields = [pct(errs.get((k, c))) for k in ("base", "new") for c in COLUMNS]
        lines.append(f"{_gb(gb):>4} {n!s:>4}" + "".join(f"{f:>{w}}" for f in fields))  # type: ignore[arg-type]
    med = median_errors(rows)

    def m(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.0f}%"

    lines.append(f"{'median':>9}" + "".join(f"{m(med[k][c]):>{w}}" for k in ("base", "new") for c in COLUMNS))
    lines.append(f"(each field: (simulated - published) / published; median: of |error| over the cells; "
                 f"{base_name} is fitted, {short_name(new_name, base_name)} predicted)")
    return "\n".join(lines) + "\n"
