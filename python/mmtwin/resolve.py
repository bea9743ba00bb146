"""Resolve a machine preset, a kernel profile and workload parameters into the
engine specification of docs/engine-api.md.

All arithmetic is exact (integers and fractions), so a spec is a pure function
of its inputs. Physical layout: nodes are laid out one after the other from
physical address 0 in node order; each node's memory is split across the zone
bands it overlaps. ``scale`` (0 < S <= 1) multiplies every node's memory and
reserved memory, the zone band boundaries and the workload's bytes by S, then
rounds each down to whole pages (docs/config-schema.md, "Scaling").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mmtwin.config import Kernel, Machine, WorkloadParams
from mmtwin.errors import MmtwinError

MIB = 2**20
GIB = 2**30

# Buddy geometry: MAX_ORDER comes from the machine preset (default 11;
# ia64 distribution kernels with hugetlb use 17), and pageblock_order is
# HUGETLB_PAGE_ORDER of x86 (9) capped at MAX_ORDER-1 (docs/kernel-mm.md §0.3).
PAGEBLOCK_ORDER = 9
SAMPLE_MS = 100


def as_fraction(value: int | float | str | Fraction) -> Fraction:
    """Exact fraction of a number as the user wrote it (0.05 is 1/20, not a binary float)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MmtwinError(f"{value!r} is not a finite number")
        return Fraction(repr(value))
    return Fraction(value)


def parse_scale(value: int | float | str | Fraction) -> Fraction:
    try:
        scale = as_fraction(value)
    except (ValueError, ZeroDivisionError):
        raise MmtwinError(f"--scale: {value!r} is not allowed; expected a number S with 0 < S <= 1") from None
    if not 0 < scale <= 1:
        raise MmtwinError(f"--scale: {value} is not allowed; expected a number S with 0 < S <= 1")
    return scale


def scaled_pages(mib: int | Fraction, scale: Fraction, page_size: int) -> int:
    """Whole pages in ``mib`` MiB scaled by ``scale``, rounded down."""
    return int(Fraction(mib) * MIB * scale // page_size)


@dataclass(frozen=True)
class NodeLayout:
    node: int
    cpus: int
    start_pfn: int
    pages: int
    reserved_pages: int
    zones: tuple[tuple[str, int], ...]  # (zone name, present pages), every band, low to high


def layout_nodes(machine: Machine, scale: Fraction = Fraction(1)) -> list[NodeLayout]:
    """Place the nodes from physical address 0 and split them into zone bands."""
    ps = machine.page_size
    topo = machine.topology
    # Band boundaries as page frame numbers; the last band is open.
    bounds: list[tuple[str, int, int | None]] = []
    start = 0
    for band in machine.zones:
        end = None if band.end_mib is None else scaled_pages(band.end_mib, scale, ps)
        bounds.append((band.name, start, end))
        start = end if end is not None else start
    out: list[NodeLayout] = []
    pfn = 0
    for node, (cpus, mem, res) in enumerate(zip(topo.cpus(), topo.memory(), topo.reserved())):
        pages = scaled_pages(mem, scale, ps)
        reserved = scaled_pages(res, scale, ps)
        if pages == 0:
            raise MmtwinError(
                f"--scale: {float(scale):g} leaves node {node} ({mem} MiB) without a single "
                f"{ps}-byte page; use a larger scale"
            )
        if reserved >= pages:
            raise MmtwinError(
                f"topology.reserved_mib: node {node} would have {reserved} of its {pages} pages reserved "
                f"at scale {float(scale):g}; reserved memory must be less than the node's memory"
            )
        lo, hi = pfn, pfn + pages
        zones = []
        for name, b_lo, b_hi in bounds:
            top = hi if b_hi is None else min(hi, b_hi)
            zones.append((name, max(0, top - max(lo, b_lo))))
        assert sum(p for _, p in zones) == pages, "zone bands must cover the node"
        out.append(NodeLayout(node, cpus, lo, pages, reserved, tuple(zones)))
        pfn = hi
    return out


def workload_bytes(size_gb: int | float, scale: Fraction, page_size: int) -> int:
    """Bytes touched for ``size_gb`` GB (2^30 bytes each) at ``scale``, rounded down to whole pages."""
    exact = as_fraction(size_gb) * GIB * scale
    return int(exact // page_size) * page_size


def _check_workload(machine: Machine, w: WorkloadParams, nbytes: int, scale: Fraction) -> None:
    total_cpus = machine.total_cpus()
    nodes = machine.topology.nodes
    if w.threads > total_cpus:
        raise MmtwinError(
            f"workload.threads: {w.threads} is not allowed; machine {machine.name} has {total_cpus} CPUs "
            "(one thread per CPU)"
        )
    if w.cpus is not None:
        if len(w.cpus) != w.threads:
            raise MmtwinError(
                f"workload.cpus: {len(w.cpus)} CPUs listed for {w.threads} threads; expected one CPU per thread"
            )
        for cpu in w.cpus:
            if not 0 <= cpu < total_cpus:
                raise MmtwinError(
                    f"workload.cpus: CPU {cpu} does not exist; machine {machine.name} has CPUs 0..{total_cpus - 1}"
                )
        if len(set(w.cpus)) != len(w.cpus):
            raise MmtwinError(f"workload.cpus: {w.cpus} lists a CPU twice; threads are pinned one per CPU")
    if w.mems_allowed is not None:
        if not w.mems_allowed:
            raise MmtwinError("workload.mems_allowed: [] is not allowed; list at least one node")
        for node in w.mems_allowed:
            if not 0 <= node < nodes:
                raise MmtwinError(
                    f"workload.mems_allowed: node {node} does not exist; machine {machine.name} has nodes 0..{nodes - 1}"
                )
        if len(set(w.mems_allowed)) != len(w.mems_allowed):
            raise MmtwinError(f"workload.mems_allowed: {w.mems_allowed} lists a node twice")
    ps = machine.page_size
    if ps % w.stride != 0:
        raise MmtwinError(f"workload.stride: {w.stride} is not allowed; it must divide the page size {ps}")
    if nbytes <= 0:
        raise MmtwinError(
            f"workload.size_gb: {w.size_gb} GB at scale {float(scale):g} is less than one {ps}-byte page"
        )
    if nbytes // w.threads < ps:
        raise MmtwinError(
            f"workload.size_gb: {w.size_gb} GB at scale {float(scale):g} gives each of the {w.threads} "
            f"threads less than one {ps}-byte page"
        )


def kernel_spec(kernel: Kernel) -> dict[str, Any]:
    s = kernel.sysctl
    lrr = None if s.lowmem_reserve_ratio == "auto" else list(s.lowmem_reserve_ratio)
    return {
        "name": kernel.name,
        "era": kernel.era,
        "zlc": kernel.policy.zlc,
        "zlc_reconsider": kernel.policy.zlc_reconsider,
        "min_free_kbytes": None if s.min_free_kbytes == "auto" else s.min_free_kbytes,
        "zone_reclaim_mode": None if s.zone_reclaim_mode == "auto" else s.zone_reclaim_mode,
        "lowmem_reserve_ratio": lrr,
        "percpu_pagelists": kernel.policy.percpu_pagelists,
    }


def machine_spec(machine: Machine, scale: Fraction = Fraction(1)) -> dict[str, Any]:
    nodes = layout_nodes(machine, scale)
    return {
        "name": machine.name,
        "arch": machine.arch,
        "page_size": machine.page_size,
        "cache_line": machine.cache_line,
        "hz": machine.hz,
        "max_order": machine.max_order,
        "pageblock_order": min(PAGEBLOCK_ORDER, machine.max_order - 1),
        "nodes": [
            {
                "cpus": n.cpus,
                "zones": [{"name": name, "present_pages": pages} for name, pages in n.zones],
                "reserved_pages": n.reserved_pages,
            }
            for n in nodes
        ],
        "distance": [list(row) for row in machine.topology.distance],
        "cost": machine.cost.model_dump(),
    }


def resolve_spec(
    machine: Machine,
    kernel: Kernel,
    workload: WorkloadParams,
    *,
    seed: int = 1,
    scale: int | float | str | Fraction = 1,
    check: bool = False,
    sample_ms: int = SAMPLE_MS,
) -> dict[str, Any]:
    """The engine specification (a JSON-ready dict) for one run."""
    frac = parse_scale(scale)
    if not 0 <= seed < 2**64:
        raise MmtwinError(f"--seed: {seed} is not allowed; expected 0 <= seed < 2^64")
    mspec = machine_spec(machine, frac)
    nbytes = workload_bytes(workload.size_gb, frac, machine.page_size)
    _check_workload(machine, workload, nbytes, frac)
    return {
        "machine": mspec,
        "kernel": kernel_spec(kernel),
        "workload": {
            "kind": workload.kind,
            "bytes": nbytes,
            "threads": workload.threads,
            "stride": workload.stride,
            "cpus": None if workload.cpus is None else list(workload.cpus),
            "mems_allowed": None if workload.mems_allowed is None else list(workload.mems_allowed),
        },
        "seed": seed,
        "check": bool(check),
        "sample_ms": sample_ms,
    }
