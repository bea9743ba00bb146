"""Registry of reproductions: a published experiment, the claims made about it,
and the code that runs the experiment file and checks each claim.

A reproduction only builds specs from its experiment file and evaluates the
results; it never changes what is simulated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from fractions import Fraction
from pathlib import Path

from mmtwin.errors import MmtwinError


@dataclass(frozen=True)
class Options:
    scale: Fraction = Fraction(1)
    jobs: int | None = None
    check: bool = False
    json: bool = False
    plot_dir: Path | None = None
    experiment: str | None = None  # experiment name or path; None = the reproduction's own
    iterations: int = 1  # runs of each cell, seeds derived from the experiment's (mmtwin.iterations)


@dataclass
class Outcome:
    text: str  # what goes to stdout (report or JSON)
    held: bool  # every claim held
    data: dict = field(default_factory=dict)  # the machine-readable report
    perf: str = ""  # "simulated N page events in W s (E events/s)", for stderr


@dataclass(frozen=True)
class Reproduction:
    name: str
    description: str
    experiment: str
    run: Callable[[Options], Outcome]
    # The scale `mmtwin reproduce` uses without --scale or --full: the
    # published scale where that finishes in a few minutes here, else a
    # proportionally smaller machine (docs/cli.md).
    default_scale: Fraction = Fraction(1)
    # Whether `mmtwin reproduce` without a NAME runs it; one too slow for
    # that runs by name only.
    in_all: bool = True
    # Whether it takes --iterations N > 1 (repeats each run with derived
    # seeds and judges the claims on the means).
    iterations: bool = False


def format_claims(
    claims: "Sequence[dict[str, Any]]",
    *,
    figure: "Callable[[dict[str, Any]], str]",
    sep: str,
    rule_extra: "Callable[[dict[str, Any]], str]" = lambda cl: "",
) -> str:
    """The claims block every reproduction prints: verdict, rule, the
    published and simulated figures (an x marks a figure that misses the
    rule), after --iterations the iterations it held in and each simulated
    figure's range over them (``add_iteration_counts``), and the verdict line."""
    lines = []
    for cl in claims:
        verdict = "HELD" if cl["held"] else "NOT HELD"
        lines.append(f"{cl['id']}  {verdict:<8}  {cl['text']}")
        lines.append(f"    rule: {cl['rule']}{rule_extra(cl)}")
        for label in ("published", "simulated"):
            figs = sep.join(f"{figure(r)} {r['value']:.2f}{'' if r['ok'] else ' x'}" for r in cl[label])
            held = cl["held_published"] if label == "published" else cl["held"]
            lines.append(f"    {label:<9} {'held' if held else 'not held':<8} {figs}")
        if "held_iterations" in cl:
            ranges = sep.join(f"{figure(r)} {r['min']:.2f}..{r['max']:.2f}" for r in cl["simulated"])
            lines.append(f"    iterations held in {cl['held_iterations']} of {cl['iterations']}; min..max: {ranges}")
    n_held = sum(1 for cl in claims if cl["held"])
    lines.append(f"verdict: {n_held} of {len(claims)} claims held in the simulation")
    return "\n".join(lines) + "\n"


def add_iteration_counts(claims: "list[dict[str, Any]]", alone: "Sequence[Sequence[dict[str, Any]]]") -> None:
    """``claims`` were judged on the Amean of some iterations, ``alone`` holds the same
    claims judged on each iteration's own figures: add to each claim in how many
    iterations it held (``held_iterations`` of ``iterations``) and to each simulated
    figure its ``min`` and ``max`` over the iterations."""
    for j, cl in enumerate(claims):
        cl["iterations"] = len(alone)
        cl["held_iterations"] = sum(1 for a in alone if a[j]["held"])
        for k, row in enumerate(cl["simulated"]):
            vals = [a[j]["simulated"][k]["value"] for a in alone]
            row["min"], row["max"] = min(vals), max(vals)


def registry() -> dict[str, Reproduction]:
    from mmtwin.reproduce import reclaim_writeback, reclaim_writeback_fake8, zlcfirst, zonelist_cache

    entries = [zonelist_cache.REPRODUCTION, zlcfirst.REPRODUCTION, reclaim_writeback.REPRODUCTION,
               reclaim_writeback_fake8.REPRODUCTION]
    return {r.name: r for r in entries}


def get(name: str) -> Reproduction:
    reg = registry()
    if name not in reg:
        raise MmtwinError(f"unknown reproduction {name!r}; available: {', '.join(sorted(reg))}")
    return reg[name]
