"""Resolve a machine preset, a kernel profile and workload parameters into the
engine specification of docs/engine-api.md (Specification v2: every key sent).

All arithmetic is exact (integers and fractions), so a spec is a pure function
of its inputs. Physical layout: nodes are laid out one after the other from
physical address 0 in node order; each node's memory is split across the zone
bands it overlaps. ``scale`` (0 < S <= 1) multiplies every node's memory and
reserved memory, the zone band boundaries and the workload's size by S, then
rounds each down to whole pages (docs/config-schema.md, "Scaling"): the memory
hog's bytes, the largedd tarfile, the mapped file; fs_mark's files per thread
per iteration are scaled and kept at least 1. Storage is not scaled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mmtwin.config import (
    SYSCTL_LIMITS,
    AnyWorkload,
    MAX_PAGES,
    FsmarkParams,
    Kernel,
    LargeddParams,
    Machine,
    MmapstreamParams,
    WorkloadParams,
)
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
        if isinstance(value, bool) or not isinstance(value, (int, float, str, Fraction)):
            raise ValueError(value)
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
    """Place the nodes from physical address 0, skipping the PCI hole if the
    machine has one, and split them into zone bands (physical boundaries)."""
    ps = machine.page_size
    topo = machine.topology
    hole = topo.pci_hole_mib
    h_lo, h_hi = (scaled_pages(hole[0], scale, ps), scaled_pages(hole[1], scale, ps)) if hole else (0, 0)

    def ram_offset(phys: int) -> int:
        """Pages of RAM below physical frame ``phys``."""
        if phys <= h_lo:
            return phys
        return h_lo if phys <= h_hi else phys - (h_hi - h_lo)

    def phys_of(ram: int) -> int:
        return ram if ram < h_lo else ram + (h_hi - h_lo)

    # Band boundaries as RAM offsets (pages of RAM below them); the last band is open.
    bounds: list[tuple[str, int, int | None]] = []
    start = 0
    for band in machine.zones:
        end = None if band.end_mib is None else ram_offset(scaled_pages(band.end_mib, scale, ps))
        bounds.append((band.name, start, end))
        start = end if end is not None else start
    out: list[NodeLayout] = []
    pfn = 0
    if topo.zone_pages is not None:
        # Zones as a kernel managed them: pages per band per node, laid end to end.
        for node, (cpus, row, res) in enumerate(zip(topo.cpus(), topo.zone_pages, topo.reserved())):
            zones = tuple((band.name, int(Fraction(x) * scale)) for band, x in zip(machine.zones, row))
            pages = sum(p for _, p in zones)
            reserved = scaled_pages(res, scale, ps)
            if pages == 0 or reserved >= pages:
                raise MmtwinError(
                    f"--scale: {float(scale):g} leaves node {node} {pages} pages with {reserved} reserved; "
                    "use a larger scale"
                )
            out.append(NodeLayout(node, cpus, pfn, pages, reserved, zones))
            pfn += pages
        return out
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
        out.append(NodeLayout(node, cpus, phys_of(lo), pages, reserved, tuple(zones)))
        pfn = hi
    return out


def workload_bytes(size_gb: int | float, scale: Fraction, page_size: int) -> int:
    """Bytes touched for ``size_gb`` GB (2^30 bytes each) at ``scale``, rounded down to whole pages."""
    exact = as_fraction(size_gb) * GIB * scale
    return int(exact // page_size) * page_size


def mib_bytes(mib: int | float, scale: Fraction, page_size: int) -> int:
    """Bytes in ``mib`` MiB at ``scale``, rounded down to whole pages."""
    exact = as_fraction(mib) * MIB * scale
    return int(exact // page_size) * page_size


def scaled_count(n: int, scale: Fraction) -> int:
    """``n`` scaled and rounded down, at least 1 (fs_mark's files per thread per iteration)."""
    return max(1, int(n * scale))


def _number(value: int | float) -> int | float:
    """An integral number as an int (the engine's integer fields accept it), otherwise the float."""
    return int(value) if float(value).is_integer() else float(value)


def _count_text(n: int) -> str:
    """An integer as is, or in 3 significant digits when it is too long to read (a size of 1e30 GB)."""
    digits = str(n)
    return digits if len(digits) <= 12 else f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


def _gib(nbytes: int) -> str:
    return f"{nbytes / GIB:.1f} GiB" if nbytes < 10**12 * GIB else f"{_count_text(nbytes // GIB)} GiB"


# --------------------------------------------------------------------------- checks


def _check_cpuset(machine: Machine, w: AnyWorkload) -> None:
    """CPU and node ids exist and are listed once (every kind)."""
    total_cpus = machine.total_cpus()
    nodes = machine.topology.nodes
    if w.cpus is not None:
        if not w.cpus:
            raise MmtwinError("workload.cpus: [] is not allowed; list at least one CPU")
        for cpu in w.cpus:
            if not 0 <= cpu < total_cpus:
                raise MmtwinError(
                    f"workload.cpus: CPU {cpu} does not exist; machine {machine.name} has CPUs 0..{total_cpus - 1}"
                )
        if len(set(w.cpus)) != len(w.cpus):
            what = "threads are pinned one per CPU" if w.kind == "memhog" else "each CPU at most once"
            raise MmtwinError(f"workload.cpus: {w.cpus} lists a CPU twice; {what}")
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


def _check_memhog(machine: Machine, w: WorkloadParams, nbytes: int, scale: Fraction) -> None:
    total_cpus = machine.total_cpus()
    if w.threads > total_cpus:
        raise MmtwinError(
            f"workload.threads: {w.threads} is not allowed; machine {machine.name} has {total_cpus} CPUs "
            "(one thread per CPU)"
        )
    if w.cpus is not None and len(w.cpus) != w.threads:
        raise MmtwinError(
            f"workload.cpus: {len(w.cpus)} CPUs listed for {w.threads} threads; expected one CPU per thread"
        )
    _check_cpuset(machine, w)
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


def _check_memory(machine: Machine, nodes: list[NodeLayout], w: AnyWorkload, field: str, what: str, nbytes: int) -> None:
    """Anonymous memory the workload needs must fit the free memory of its nodes, plus swap."""
    allowed = w.mems_allowed if w.mems_allowed is not None else range(len(nodes))
    free = sum((nodes[i].pages - nodes[i].reserved_pages) * machine.page_size for i in allowed)
    swap = machine.storage.swap if machine.storage is not None else None
    swap_bytes = swap.size_mib * MIB if swap is not None else 0
    if nbytes > free + swap_bytes:
        where = f"machine {machine.name}" if w.mems_allowed is None else f"nodes {','.join(map(str, allowed))} of {machine.name}"
        has = f"{free // MIB} MiB after boot reservations" + (f" and {swap.size_mib} MiB of swap" if swap else ", no swap")
        raise MmtwinError(f"workload.{field}: {what} needs {_count_text(nbytes // MIB)} MiB of memory, more than {where} has ({has})")


def _filesystem(machine: Machine, kind: str) -> tuple[str, int]:
    """(``"ext4 on sda"``, its size in bytes); an error when the machine has no filesystem."""
    if machine.storage is None:
        raise MmtwinError(
            f"workload.kind: {kind!r} needs a filesystem; machine {machine.name} has no [storage] table"
        )
    fs = machine.storage.fs
    return f"the {fs.kind} filesystem on {fs.device} ({fs.size_mib} MiB)", fs.size_mib * MIB


def _check_fits(machine: Machine, kind: str, field: str, what: str, nbytes: int) -> None:
    fs_name, fs_bytes = _filesystem(machine, kind)
    if nbytes > fs_bytes:
        raise MmtwinError(f"workload.{field}: {what} ({_gib(nbytes)}) is larger than {fs_name}")


# --------------------------------------------------------------------------- workload specs


def _memhog_spec(machine: Machine, nodes: list[NodeLayout], w: WorkloadParams, scale: Fraction) -> dict[str, Any]:
    nbytes = workload_bytes(w.size_gb, scale, machine.page_size)
    _check_memhog(machine, w, nbytes, scale)
    _check_memory(machine, nodes, w, "size_gb", f"a {w.size_gb:g} GB memory hog", nbytes)
    return {
        "kind": w.kind,
        "bytes": nbytes,
        "threads": w.threads,
        "stride": w.stride,
        "passes": w.passes,
        "cpus": _ids(w.cpus),
        "mems_allowed": _ids(w.mems_allowed),
    }


def _fsmark_spec(machine: Machine, nodes: list[NodeLayout], w: FsmarkParams, scale: Fraction) -> dict[str, Any]:
    _check_cpuset(machine, w)
    files = scaled_count(w.files, scale)
    kept = w.threads * files * w.iterations
    if kept > MAX_FILES_KEPT:
        raise MmtwinError(
            f"workload.files: fs_mark keeps {kept} files ({w.threads} threads x {files} files x {w.iterations} iterations); "
            f"at most {MAX_FILES_KEPT}, the engine's bound on inodes (about 200 bytes of state each)"
        )
    _check_fits(
        machine, w.kind, "files",
        f"fs_mark keeps {kept} files of {w.file_bytes} bytes ({w.threads} threads x {files} files x {w.iterations} iterations)",
        kept * w.file_bytes,
    )
    _check_memory(machine, nodes, w, "write_bytes", f"{w.threads} fs_mark threads with {w.write_bytes}-byte buffers",
                  w.threads * w.write_bytes)
    return {
        "kind": w.kind,
        "threads": w.threads,
        "cpus": _ids(w.cpus),
        "mems_allowed": _ids(w.mems_allowed),
        "dirs": w.dirs,
        "subdirs": w.subdirs,
        "files_per_subdir": w.files_per_subdir,
        "files": files,
        "iterations": w.iterations,
        "file_bytes": w.file_bytes,
        "write_bytes": w.write_bytes,
        "sync_method": w.sync_method,
    }


def _largedd_spec(machine: Machine, nodes: list[NodeLayout], w: LargeddParams, scale: Fraction) -> dict[str, Any]:
    _check_cpuset(machine, w)
    ps = machine.page_size
    tar_bytes = mib_bytes(w.tar_mib, scale, ps)
    if tar_bytes <= 0:
        raise MmtwinError(f"workload.tar_mib: {w.tar_mib} MiB at scale {float(scale):g} is less than one {ps}-byte page")
    dd_bytes = int(as_fraction(w.dd_kib) * 1024)
    _check_fits(machine, w.kind, "tar_mib", f"the tarfile and its {w.copies} copies", tar_bytes * (w.copies + 1))
    _check_memory(machine, nodes, w, "dd_kib", f"{w.threads} dd process(es) with bs={_count_text(dd_bytes)}", w.threads * dd_bytes)
    return {
        "kind": w.kind,
        "cpus": _ids(w.cpus),
        "mems_allowed": _ids(w.mems_allowed),
        "tar_bytes": tar_bytes,
        "copies": w.copies,
        "dd_bytes": dd_bytes,
        "threads": w.threads,
        "download_mib_s": _number(w.download_mib_s),
    }


def _mmapstream_spec(machine: Machine, nodes: list[NodeLayout], w: MmapstreamParams, scale: Fraction) -> dict[str, Any]:
    _check_cpuset(machine, w)
    ps = machine.page_size
    nbytes = mib_bytes(w.size_mib, scale, ps)
    if nbytes // w.threads < ps:
        raise MmtwinError(
            f"workload.size_mib: {w.size_mib} MiB at scale {float(scale):g} gives each of the {w.threads} "
            f"threads less than one {ps}-byte page"
        )
    _check_fits(machine, w.kind, "size_mib", f"the {w.size_mib:g} MiB mapped file", nbytes)
    mixed = mib_bytes(w.mixed_size_mib, scale, ps) if w.mixed_size_mib else 0
    if mixed:
        parts = (mixed * (100 - w.mixed_anon_percent) // 100, mixed * w.mixed_anon_percent // 100)
        if any(part and part // w.mixed_threads < ps for part in parts):
            raise MmtwinError(
                f"workload.mixed_size_mib: {w.mixed_size_mib} MiB at scale {float(scale):g} gives each of the "
                f"{w.mixed_threads} processes of a kind less than one {ps}-byte page"
            )
        if -(-mixed // ps) > MAX_PAGES:
            raise MmtwinError(f"workload.mixed_size_mib: {w.mixed_size_mib} is not allowed; at most {MAX_PAGES} pages of mappings")
        # Stage 1's files are removed before stage 2 creates its own.
        _check_fits(machine, w.kind, "mixed_size_mib", f"stage 2's files ({100 - w.mixed_anon_percent}% of {w.mixed_size_mib:g} MiB)",
                    mixed * (100 - w.mixed_anon_percent) // 100)
    spec: dict[str, Any] = {
        "kind": w.kind,
        "cpus": _ids(w.cpus),
        "mems_allowed": _ids(w.mems_allowed),
        "bytes": nbytes,
        "threads": w.threads,
    }
    if mixed:
        spec.update(mixed_bytes=mixed, mixed_threads=w.mixed_threads, mixed_anon_percent=w.mixed_anon_percent, mixed_iter=w.mixed_iter)
    return spec


def _ids(ids: list[int] | None) -> list[int] | None:
    return None if ids is None else list(ids)


_WORKLOAD_SPECS: dict[str, Callable[..., dict[str, Any]]] = {
    "memhog": _memhog_spec,
    "fsmark": _fsmark_spec,
    "largedd": _largedd_spec,
    "mmapstream": _mmapstream_spec,
}


def workload_spec(
    machine: Machine, workload: AnyWorkload, scale: int | float | str | Fraction = 1
) -> dict[str, Any]:
    """The spec's ``workload`` table, after the checks against the machine (docs/engine-api.md)."""
    frac = parse_scale(scale)
    return _WORKLOAD_SPECS[workload.kind](machine, layout_nodes(machine, frac), workload, frac)


# --------------------------------------------------------------------------- machine and kernel specs


def kernel_spec(kernel: Kernel, page_size: int | None = None) -> dict[str, Any]:
    s = kernel.sysctl
    if page_size is not None and 0 < s.dirty_bytes < 2 * page_size:
        raise MmtwinError(
            f"kernel {kernel.name}: sysctl.dirty_bytes: {s.dirty_bytes} is not allowed; the kernel's minimum "
            f"is two pages ({2 * page_size} bytes), 0 uses dirty_ratio"
        )
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
        "pcp_sizing": kernel.policy.pcp_sizing,
        "new_anon_lru": kernel.policy.new_anon_lru,
        "slab_allocator": kernel.policy.slab_allocator,
        "direct_fs_writeback": kernel.policy.direct_fs_writeback,
        "kswapd_fs_writeback": kernel.policy.kswapd_fs_writeback,
        "kswapd_balance": kernel.policy.kswapd_balance,
        "min_free_kbytes_max": kernel.policy.min_free_kbytes_max,
        "reclaim_throttle_dirty": kernel.policy.reclaim_throttle_dirty,
        "reclaim_invalidate": kernel.policy.reclaim_invalidate,
        **{name: getattr(s, name) for name in SYSCTL_LIMITS},
    }


def storage_spec(machine: Machine) -> dict[str, Any] | None:
    """Devices in file order (the index is the device id); fs and swap name their device by index."""
    st = machine.storage
    if st is None:
        return None
    return {
        "devices": [
            {
                "name": d.name,
                "disks": d.disks,
                "chunk_kib": d.chunk_kib,
                "bandwidth_mib_s": _number(d.bandwidth_mib_s),
                "access_us": 0 if d.access_us is None else _number(d.access_us),
                "rpm": d.rpm or 0,
                "track_seek_us": d.track_seek_us or 0,
                "full_seek_us": d.full_seek_us or 0,
                "nr_requests": d.nr_requests,
                "max_sectors_kib": d.max_sectors_kib,
                "size_mib": d.size_mib,
                "elevator": d.elevator,
                "queue_depth": d.queue_depth,
            }
            for d in st.devices
        ],
        "fs": {"kind": st.fs.kind, "device": st.device_index(st.fs.device), "size_mib": st.fs.size_mib,
               "journal": st.fs.kind == "ext4" if st.fs.journal is None else st.fs.journal, "commit_s": st.fs.commit_s},
        "swap": None if st.swap is None else {"device": st.device_index(st.swap.device), "size_mib": st.swap.size_mib},
    }


def machine_spec(machine: Machine, scale: Fraction = Fraction(1)) -> dict[str, Any]:
    nodes = layout_nodes(machine, scale)
    return {
        "name": machine.name,
        "arch": machine.arch,
        "page_size": machine.page_size,
        "cache_line": machine.cache_line,
        "cache_kib": machine.cache_kib,
        "link_mb_s": machine.topology.link_mb_s,
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
        "storage": storage_spec(machine),
        "fork_balance": machine.fork_balance,
    }


def trace_spec(path: str | None, events: Sequence[str] | None = None) -> dict[str, Any] | None:
    """The spec's ``trace`` table: None (no trace) or the file and the events (None = all)."""
    if path is None:
        if events is not None:
            raise MmtwinError("--trace-events: needs --trace FILE")
        return None
    if not path:
        raise MmtwinError("--trace: '' is not allowed; expected a file path")
    return {"path": path, "events": None if events is None else list(events)}


# The engine's bound on the files fs_mark keeps (spec.rs MAX_FILES_KEPT): an inode is about 200 bytes of state.
MAX_FILES_KEPT = 2**24
# The engine's bound on its cache model (spec.rs CACHE_MODEL_BUDGET, cost.rs CacheModel::bytes_per_line).
CACHE_MODEL_BUDGET = 2**30
# Bytes of one line's recent transactions at its home (mm.rs LockHolds: 8 intervals of two u64 and
# the latest end).
_LINE_HOLDS_BYTES = 136


def faulting_processes(wspec: dict[str, Any]) -> int:
    """Processes of a workload that take page faults, at most (spec.rs ``WorkloadSpec::faulting_processes``)."""
    kind = wspec["kind"]
    if kind == "memhog":
        return 1
    if kind == "mmapstream":
        return int(wspec.get("threads", 1)) + 2 * int(wspec.get("mixed_threads", 1))
    return 0


def cache_lines_bound(mspec: dict[str, Any], processes: int = 0) -> int:
    """The engine's upper bound on the cache lines it tracks (spec.rs ``Spec::cache_lines_bound``): five per
    populated zone, one per node, the global vm_stat line, one per CPU per zone, per node five zonelists and
    their caches, and two per faulting process (its mm_struct)."""
    zones = sum(1 for n in mspec["nodes"] for z in n["zones"] if z["present_pages"] > 0)
    nodes = len(mspec["nodes"])
    cpus = sum(n["cpus"] for n in mspec["nodes"])
    line = mspec["cache_line"]
    zonelist = max(1, -(-zones // max(1, line // 8)))
    zlc = 2 + max(1, -(-zones // max(1, line // 2)))
    return 5 * zones + nodes + 1 + cpus * zones + 5 * nodes * (zonelist + zlc) + 2 * processes


def cache_line_bytes(cpus: int) -> int:
    """Bytes of cache-model state per line: home and owner, the sharer set, a stream position per CPU and
    the line's recent transactions (cost.rs ``CacheModel::bytes_per_line``)."""
    return 4 + 8 * max(1, -(-cpus // 64)) + 8 * cpus + _LINE_HOLDS_BYTES


def _check_cache_model(machine: Machine, mspec: dict[str, Any], wspec: dict[str, Any]) -> None:
    cpus = sum(n["cpus"] for n in mspec["nodes"])
    lines = cache_lines_bound(mspec, faulting_processes(wspec))
    total = cache_line_bytes(cpus) * lines
    if total > CACHE_MODEL_BUDGET:
        raise MmtwinError(
            f"machine {machine.name}: {cpus} CPUs x {lines} cache lines take {total >> 20} MiB of the engine's "
            f"cache model; at most {CACHE_MODEL_BUDGET >> 20} MiB (fewer CPUs, nodes or zones)"
        )


def resolve_spec(
    machine: Machine,
    kernel: Kernel,
    workload: AnyWorkload,
    *,
    seed: int = 1,
    scale: int | float | str | Fraction = 1,
    check: bool = False,
    sample_ms: int = SAMPLE_MS,
    trace: dict[str, Any] | None = None,
    snapshots: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The engine specification (a JSON-ready dict) for one run; every key of docs/engine-api.md present."""
    frac = parse_scale(scale)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise MmtwinError(f"--seed: {seed!r} is not allowed; expected an integer 0 <= seed < 2^64")
    mspec = machine_spec(machine, frac)
    total = sum(z["present_pages"] for n in mspec["nodes"] for z in n["zones"])
    if total > MAX_PAGES:
        raise MmtwinError(
            f"machine {machine.name}: {total} pages at scale {float(frac):g} is more than the engine's {MAX_PAGES} "
            f"(its state is about 28 bytes a page); use a smaller --scale"
        )
    wspec = workload_spec(machine, workload, frac)
    _check_cache_model(machine, mspec, wspec)
    spec = {
        "machine": mspec,
        "kernel": kernel_spec(kernel, machine.page_size),
        "workload": wspec,
        "seed": seed,
        "check": bool(check),
        "sample_ms": sample_ms,
        "trace": trace,
    }
    # /proc snapshots: always at the start and the end (tests-sysstate's /proc files); more with
    # --proc-at / --proc-every (mmtwin.reports.procfs.snapshots_spec checks them).
    if snapshots is None:
        from mmtwin.reports.procfs import snapshots_spec

        snapshots = snapshots_spec(spec)
    spec["snapshots"] = snapshots
    return spec
