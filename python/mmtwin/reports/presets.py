"""Human-readable descriptions of presets and experiments (``mmtwin presets show``)."""

from __future__ import annotations

from fractions import Fraction

from pydantic import BaseModel

from mmtwin.config import SYSCTL_LIMITS, Experiment, Kernel, Machine
from mmtwin.resolve import PAGEBLOCK_ORDER, layout_nodes


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line else line for line in text.strip().splitlines())


def describe_machine(m: Machine, scale: Fraction = Fraction(1)) -> str:
    topo = m.topology
    nodes = layout_nodes(m, scale)
    distances = sorted({d for row in topo.distance for d in row})
    lines = [
        f"machine {m.name}: {m.description}",
        f"  arch {m.arch}, page size {m.page_size}, cache line {m.cache_line}, HZ {m.hz}, "
        f"MAX_ORDER {m.max_order}, pageblock_order {min(PAGEBLOCK_ORDER, m.max_order - 1)}",
        f"  {topo.nodes} nodes, {m.total_cpus()} CPUs, {m.total_memory_mib()} MiB; distances used: "
        + ", ".join(map(str, distances)),
        "  zone bands: "
        + ", ".join(f"{z.name} < {z.end_mib} MiB" if z.end_mib is not None else f"{z.name} above" for z in m.zones)
        + (f"; PCI hole {topo.pci_hole_mib[0]}-{topo.pci_hole_mib[1]} MiB (no RAM)" if topo.pci_hole_mib else ""),
        *([
            "  zone pages (as a kernel managed them; replace the bands): "
            + "; ".join(f"node {n} " + ", ".join(f"{z.name} {p}" for z, p in zip(m.zones, row) if p)
                        for n, row in enumerate(topo.zone_pages))
        ] if topo.zone_pages is not None else []),
        "  cost (ns): " + ", ".join(f"{k} {v}" for k, v in m.cost.model_dump().items()),
        *_storage_lines(m),
        "  source:",
        _indent(m.source, "    "),
        f"  layout at scale {float(scale):g} (pages of {m.page_size} bytes):",
    ]
    zone_names = [z.name for z in m.zones]
    header = f"    {'node':>4} {'cpus':>4} {'start_pfn':>12} {'pages':>10} {'reserved':>9}" + "".join(
        f"{n:>10}" for n in zone_names
    )
    lines.append(header)
    for n in nodes:
        lines.append(
            f"    {n.node:>4} {n.cpus:>4} {n.start_pfn:>12} {n.pages:>10} {n.reserved_pages:>9}"
            + "".join(f"{p:>10}" for _, p in n.zones)
        )
    return "\n".join(lines) + "\n"


def _storage_lines(m: Machine) -> list[str]:
    st = m.storage
    if st is None:
        return ["  storage: none"]
    lines = ["  storage:"]
    for i, d in enumerate(st.devices):
        what = "plain disk" if d.disks == 1 else f"md RAID-0 of {d.disks} disks, chunk {d.chunk_kib} KiB"
        if d.rpm is None:
            access = f"access {d.access_us:g} us"
        else:
            access = f"{d.rpm} rpm, seek {d.track_seek_us}-{d.full_seek_us} us"
        lines.append(
            f"    device {i} {d.name}: {what}, {d.size_mib} MiB per disk, {d.bandwidth_mib_s:g} MiB/s, "
            f"{access}, nr_requests {d.nr_requests}, max_sectors_kib {d.max_sectors_kib}, elevator {d.elevator}, queue_depth {d.queue_depth}"
        )
    lines.append(f"    fs: {st.fs.kind} on {st.fs.device}, {st.fs.size_mib} MiB")
    lines.append(f"    swap: {st.swap.size_mib} MiB on {st.swap.device}" if st.swap else "    swap: none")
    return lines


def describe_kernel(k: Kernel) -> str:
    s = k.sysctl
    return "\n".join(
        [
            f"kernel {k.name}: {k.description}",
            f"  era {k.era}",
            f"  policy: zlc {k.policy.zlc}, zlc_reconsider {str(k.policy.zlc_reconsider).lower()}, "
            f"percpu_pagelists {str(k.policy.percpu_pagelists).lower()}, pcp_sizing {k.policy.pcp_sizing}",
            f"  policy (writeback from reclaim): direct_fs_writeback {str(k.policy.direct_fs_writeback).lower()}, "
            f"kswapd_fs_writeback {k.policy.kswapd_fs_writeback}, "
            f"reclaim_throttle_dirty {str(k.policy.reclaim_throttle_dirty).lower()}, "
            f"reclaim_invalidate {str(k.policy.reclaim_invalidate).lower()}",
            f"  sysctl: min_free_kbytes {s.min_free_kbytes}, zone_reclaim_mode {s.zone_reclaim_mode}, "
            f"lowmem_reserve_ratio {s.lowmem_reserve_ratio}",
            "  sysctl: " + ", ".join(f"{name} {getattr(s, name)}" for name in SYSCTL_LIMITS),
        ]
    ) + "\n"


def _workload_fields(w: BaseModel) -> str:
    return ", ".join(f"{k} {v}" for k, v in w.model_dump().items() if k != "kind" and v is not None)


def describe_experiment(e: Experiment) -> str:
    lines = [
        f"experiment {e.name}: {e.description}",
        f"  seed document {e.seed_document or '-'}; machine {e.machine}; seed {e.seed}",
        f"  kernels: {', '.join(e.kernels)} (the first is the baseline)",
    ]
    if e.runs is not None:
        lines.append(f"  runs (every kernel runs each): {len(e.runs)}")
        for r in e.runs:
            lines.append(f"    {r.name}: {r.workload.kind}: {_workload_fields(r.workload)}")
            if r.description:
                lines.append(f"      {r.description}")
        return "\n".join(lines) + "\n"
    assert e.matrix is not None
    w = e.matrix_workload
    sizes = ", ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in e.matrix.size_gb)
    lines += [
        f"  workload {w.kind}, stride {w.stride}" + (f", mems_allowed {w.mems_allowed}" if w.mems_allowed is not None else ""),
        f"  matrix: size_gb [{sizes}] x threads {e.matrix.threads} "
        f"= {len(e.matrix.size_gb) * len(e.matrix.threads)} cells per kernel",
    ]
    return "\n".join(lines) + "\n"
