"""`mmtwin oracle run` and `mmtwin oracle capture`: settings in, parsed counters out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional, Sequence

from mmtwin.errors import MmtwinError
from mmtwin.oracle import guest, procfs

PHASES = ("before", "during", "after")
NUMASTAT = ("numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node")
# vmstat counters whose change over the workload the summary prints (when they changed).
VMSTAT_DELTAS = (
    "pgfault", "pgmajfault", "pgfree", "pgactivate", "pgscan_kswapd", "pgscan_direct", "pgsteal_kswapd",
    "pgsteal_direct", "allocstall_dma", "allocstall_dma32", "allocstall_normal", "allocstall_movable",
    "pswpin", "pswpout", "numa_pte_updates", "zone_reclaim_failed", "kswapd_low_wmark_hit_quickly",
    "kswapd_high_wmark_hit_quickly", "oom_kill",
    # file workloads: I/O, dirtying and writeback, and what reclaim did with file pages
    "pgpgin", "pgpgout", "nr_dirtied", "nr_written", "pgdeactivate", "pgrotated", "pgscan_file", "pgsteal_file",
    "nr_vmscan_write", "nr_vmscan_immediate_reclaim", "slabs_scanned", "kswapd_inodesteal", "pginodesteal",
    "workingset_refault_file", "workingset_activate_file",
    # anonymous pages under reclaim, with --swap-mib
    "pgscan_anon", "pgsteal_anon", "swap_ra", "swap_ra_hit", "workingset_refault_anon", "pgrefill", "pageoutrun",
)
# What the guest runs: the memory hog (anonymous memory), or a file workload on a virtio disk with
# ext4 (filehog.c; the twin's workload of the same name).
WORKLOADS = ("memhog", "mmapstream", "fsmark", "largedd")
FILE_WORKLOADS = ("mmapstream", "fsmark", "largedd")
# The largedd fields --set takes (the twin's largedd workload's, config.LargeddParams), and what the
# guest's filehog can do: dd calls of at most 1 MiB (its buffer), at most 2^20 copies.
LARGEDD_FIELDS = ("tar_mib", "copies", "dd_kib", "download_mib_s")
MAX_DD_BYTES = 1 << 20
MAX_COPIES = 1 << 20
# The fsmark fields the guest's filehog takes, in its argument order after THREADS and CPULIST.
FSMARK_FIELDS = ("dirs", "subdirs", "files_per_subdir", "files", "iterations", "file_bytes", "write_bytes")
MIN_DISK_MIB = 64
MAX_DISK_MIB = 1 << 20
# --swap-mib: the swap disk's size (a swap area takes its whole disk; oracle compare first writes
# 32 MiB to it to time the disk, initramfs.py).
MIN_SWAP_MIB = 64
MAX_SWAP_MIB = 1 << 20
# xfs's smallest filesystem (mkfs.xfs: "must be larger than 300MB"), in MiB.
MIN_XFS_MIB = 300
# --passes: as the twin's memory hog takes them.
MAX_PASSES = 1000
# The largest file workload whose default disk (the files, a quarter more and 256 MiB) fits MAX_DISK_MIB.
MAX_FILE_MIB = (MAX_DISK_MIB - 256) * 4 // 5
HEADROOM_MIB = 192          # what the guest kernel and its tmpfs root keep for themselves, roughly
_SYSCTL_KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
_SYSCTL_VALUE = re.compile(r"^[A-Za-z0-9_.:-]+( [A-Za-z0-9_.:-]+)*$")


def parse_sysctls(items: Optional[Sequence[str]]) -> list[tuple[str, str]]:
    """--sysctl KEY=VALUE (KEY as sysctl(8) names it, e.g. vm.zone_reclaim_mode)."""
    out = []
    for item in items or []:
        key, sep, value = item.partition("=")
        key, value = key.strip(), " ".join(value.split())
        if not sep or not _SYSCTL_KEY.match(key):
            raise MmtwinError(
                f"--sysctl: {item!r} is not allowed; expected KEY=VALUE with a dotted sysctl name such as "
                "vm.zone_reclaim_mode=1"
            )
        if not _SYSCTL_VALUE.match(value):
            raise MmtwinError(
                f"--sysctl: {key}: value {value!r} is not allowed; expected numbers or words (letters, digits, _ . : -), "
                "space-separated, e.g. vm.lowmem_reserve_ratio='256 256 32 0 0'"
            )
        out.append((key, value))
    return out


def fs_room(disk_mib: int, fs: str = "ext4") -> int:
    """MiB a fresh filesystem of `disk_mib` MiB leaves for files: ext4's metadata (inode tables, journal,
    group descriptors) takes a few percent; xfs (xfsprogs 6.1's mkfs) keeps 64 MiB of log, and 6.1 sets
    aside min(5%, 32 MiB) when mounting, and a little for each allocation group."""
    if fs == "xfs":
        return disk_mib - 64 - min(disk_mib // 20, 32) - disk_mib // 64 - 8
    return disk_mib - disk_mib // 16 - 32


def disk_size(size_mib: int, disk_mib: Optional[int], fs: str = "ext4") -> int:
    """The file workload's disk: --disk-mib, or room for its files plus the filesystem's own (a quarter more,
    and 256 MiB; xfs at least MIN_XFS_MIB, the smallest mkfs.xfs makes)."""
    if disk_mib is None:
        size = size_mib + size_mib // 4 + 256
        return max(size, MIN_XFS_MIB) if fs == "xfs" else size
    if not MIN_DISK_MIB <= disk_mib <= MAX_DISK_MIB:
        raise MmtwinError(f"--disk-mib: {disk_mib} is not allowed; expected {MIN_DISK_MIB} to {MAX_DISK_MIB} MiB")
    if fs == "xfs" and disk_mib < MIN_XFS_MIB:
        raise MmtwinError(f"--disk-mib: {disk_mib} is not allowed with --fs xfs; mkfs.xfs makes filesystems of "
                          f"{MIN_XFS_MIB} MiB or more")
    if size_mib > fs_room(disk_mib, fs):
        need = size_mib
        while fs_room(need, fs) < size_mib:
            need += 1 + (size_mib - fs_room(need, fs)) // 2
        if fs == "xfs":
            need = max(need, MIN_XFS_MIB)
        raise MmtwinError(f"--disk-mib: {disk_mib} is not allowed for a {size_mib} MiB workload; its files need "
                          f"at least {need} MiB with {fs}'s own metadata")
    return disk_mib


def fsmark_settings(text: Optional[str], size_mib: Optional[int], threads: int) -> dict[str, Any]:
    """--fsmark ARGS for the guest: fs_mark's command line as the twin reads it (config.parse_fsmark_command),
    checked as the twin's fsmark workload (-S0 only: the guest's fs_mark never syncs, nor does the twin's)."""
    from mmtwin.config import FsmarkParams, parse_fsmark_command, validate

    if text is None:
        raise MmtwinError("--fsmark: missing; --workload fsmark needs fs_mark's command line, e.g. "
                          "--fsmark '-d /tmp/x -D 10 -N 100 -n 50 -L 4 -t 4 -S0 -s 1048576'")
    if size_mib is not None:
        raise MmtwinError(f"--size-mib: {size_mib} is not allowed with --workload fsmark; its size follows from "
                          "--fsmark (-t x -n x -L x -s)")
    if threads != 1:
        raise MmtwinError(f"--threads: {threads} is not allowed with --workload fsmark; give -t in --fsmark")
    fields = parse_fsmark_command(text)
    # The twin's own checks (-S0 only, as the guest's filehog runs it).
    params = validate(FsmarkParams, {"kind": "fsmark", **fields}, "--fsmark")
    return {f: getattr(params, f) for f in ("threads", *FSMARK_FIELDS)}


def largedd_settings(sets: Optional[Sequence[str]], size_mib: Optional[int], threads: int) -> dict[str, Any]:
    """--set KEY=VALUE for --workload largedd: the twin's largedd fields (LARGEDD_FIELDS), checked as the twin
    checks them."""
    from mmtwin.config import LargeddParams, parse_set_value, validate

    if size_mib is not None:
        raise MmtwinError(f"--size-mib: {size_mib} is not allowed with --workload largedd; give the tarfile's size "
                          "with --set tar_mib=N")
    if threads != 1:
        raise MmtwinError(f"--threads: {threads} is not allowed with --workload largedd; it runs one dd at a time")
    data: dict[str, Any] = {"kind": "largedd"}
    for item in sets or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or key not in LARGEDD_FIELDS:
            raise MmtwinError(f"--set: {item!r} is not allowed; expected KEY=VALUE with KEY one of "
                              f"{', '.join(LARGEDD_FIELDS)}, e.g. tar_mib=512")
        data[key] = parse_set_value(text.strip())
    p = validate(LargeddParams, data, "--set")
    tar_bytes, dd_bytes = int(p.tar_mib * (1 << 20)) // 4096 * 4096, int(p.dd_kib * 1024)
    # The guest's filehog: calls of at most its 1 MiB buffer, at most 2^20 copies; and the twin's dd makes
    # one call a page below a page and whole pages above, so other sizes would be different work.
    if tar_bytes < 4096:
        raise MmtwinError(f"--set: tar_mib={p.tar_mib:g} is not allowed; the tarfile must be at least one 4 KiB page")
    if dd_bytes > MAX_DD_BYTES or (4096 % dd_bytes if dd_bytes < 4096 else dd_bytes % 4096):
        raise MmtwinError(f"--set: dd_kib={p.dd_kib:g} is not allowed in the guest; expected a divisor of 4 KiB "
                          f"(0.5, 1, 2, 4) or a multiple of 4 KiB up to {MAX_DD_BYTES >> 10}")
    if p.copies > MAX_COPIES:
        raise MmtwinError(f"--set: copies={p.copies} is not allowed in the guest; expected 1 to {MAX_COPIES}")
    return {"tar_mib": p.tar_mib, "copies": p.copies, "dd_kib": p.dd_kib, "download_mib_s": p.download_mib_s,
            "tar_bytes": tar_bytes, "dd_bytes": dd_bytes}


def workload(topo: guest.GuestTopology, size_mib: Optional[int], threads: int, cpus: Optional[str],
             kind: str = "memhog", disk_mib: Optional[int] = None, fsmark: Optional[str] = None,
             swap_mib: Optional[int] = None, passes: int = 1, fs: Optional[str] = None,
             sets: Optional[Sequence[str]] = None) -> dict[str, Any]:
    """The workload's settings, checked against the guest."""
    if kind not in WORKLOADS:
        raise MmtwinError(f"--workload: {kind!r} is not allowed; expected one of {', '.join(WORKLOADS)}")
    if kind != "largedd" and sets:
        raise MmtwinError(f"--set: {sets[0]!r} is not allowed with --workload {kind}; only largedd takes --set")
    if fs is not None and fs not in guest.FS_KINDS:
        raise MmtwinError(f"--fs: {fs!r} is not allowed; expected one of {', '.join(guest.FS_KINDS)}")
    if fs is not None and kind not in FILE_WORKLOADS:
        raise MmtwinError(f"--fs: {fs} is not allowed with the memhog workload, which writes no files; give "
                          f"--workload {FILE_WORKLOADS[0]}")
    if swap_mib is not None and not MIN_SWAP_MIB <= swap_mib <= MAX_SWAP_MIB:
        raise MmtwinError(f"--swap-mib: {swap_mib} is not allowed; expected {MIN_SWAP_MIB} to {MAX_SWAP_MIB} MiB")
    if kind != "memhog" and passes != 1:
        raise MmtwinError(f"--passes: {passes} is not allowed with --workload {kind}; only the memory hog makes "
                          "several passes")
    if not 1 <= passes <= MAX_PASSES:
        raise MmtwinError(f"--passes: {passes} is not allowed; expected 1 to {MAX_PASSES}")
    if kind != "fsmark" and fsmark is not None:
        raise MmtwinError(f"--fsmark: not allowed with --workload {kind}; give --workload fsmark")
    if kind == "largedd":
        wl = _largedd_workload(topo, sets, size_mib, threads, cpus, disk_mib, fs or "ext4")
    else:
        wl = _workload(topo, size_mib, threads, cpus, kind, disk_mib, fsmark, swap_mib, fs or "ext4")
    if swap_mib is not None:
        wl["swap_mib"] = swap_mib
    if kind == "memhog":
        wl["passes"] = passes
    return wl


def _workload(topo: guest.GuestTopology, size_mib: Optional[int], threads: int, cpus: Optional[str],
              kind: str, disk_mib: Optional[int], fsmark: Optional[str], swap_mib: Optional[int],
              fs: str) -> dict[str, Any]:
    if kind == "memhog" and disk_mib is not None:
        raise MmtwinError(f"--disk-mib: {disk_mib} is not allowed with the memhog workload, which uses no disk; "
                          f"give --workload {FILE_WORKLOADS[0]}")
    if kind == "fsmark":
        return _fsmark_workload(topo, fsmark, size_mib, threads, cpus, disk_mib, fs)
    if size_mib is None:
        # The memory hog fits in node 0; a file workload writes half as much again as the guest has.
        size_mib = topo.memory_mib[0] // 2 if kind == "memhog" else topo.total_mib * 3 // 2
    if size_mib < 1:
        raise MmtwinError(f"--size-mib: {size_mib} is not allowed; expected at least 1")
    if kind in FILE_WORKLOADS and size_mib > MAX_FILE_MIB:
        raise MmtwinError(f"--size-mib: {size_mib} is not allowed; a file workload writes at most {MAX_FILE_MIB} MiB "
                          f"(its disk is at most {MAX_DISK_MIB} MiB)")
    limit = topo.total_mib - HEADROOM_MIB
    if kind == "memhog" and swap_mib is None and size_mib > limit:
        raise MmtwinError(
            f"--size-mib: {size_mib} is not allowed; the {topo.total_mib} MiB guest has no swap, so the hog must be "
            f"at most {limit} MiB (guest memory less {HEADROOM_MIB} MiB for the guest kernel; --swap-mib gives it swap)"
        )
    if kind == "memhog" and swap_mib is not None and size_mib > limit + swap_mib:
        raise MmtwinError(
            f"--size-mib: {size_mib} is not allowed; with {swap_mib} MiB of swap the {topo.total_mib} MiB guest holds "
            f"a hog of at most {limit + swap_mib} MiB (guest memory less {HEADROOM_MIB} MiB for the guest kernel, "
            "plus the swap)"
        )
    if threads < 1:
        raise MmtwinError(f"--threads: {threads} is not allowed; expected at least 1")
    from mmtwin.config import parse_id_option

    ids = parse_id_option(cpus, "--cpus")
    if ids is None:
        if threads > topo.total_cpus:
            raise MmtwinError(
                f"--threads: {threads} is not allowed; the guest has {topo.total_cpus} CPUs and each thread gets its own"
            )
        ids = list(range(threads))
    if len(ids) != threads:
        raise MmtwinError(f"--cpus: {len(ids)} CPUs for {threads} threads is not allowed; give one CPU per thread")
    _check_cpus(topo, ids, "; each thread gets its own CPU")
    wl: dict[str, Any] = {"kind": kind, "size_mib": size_mib, "threads": threads, "cpus": ids}
    if kind in FILE_WORKLOADS:
        wl["disk_mib"] = disk_size(size_mib, disk_mib, fs)
        wl["fs"] = fs
    return wl


def snapshots(out: guest.GuestOutput) -> dict[str, Any]:
    """Parsed /proc and /sys files per phase."""
    result: dict[str, Any] = {}
    for phase in PHASES:
        sec = {name: text for (ph, name), text in out.sections.items() if ph == phase}
        if not sec:
            continue
        snap: dict[str, Any] = {}
        if "vmstat" in sec:
            snap["vmstat"] = procfs.parse_counters(sec["vmstat"])
        if "zoneinfo" in sec:
            snap["zoneinfo"] = procfs.parse_zoneinfo(sec["zoneinfo"])
        if "buddyinfo" in sec:
            snap["buddyinfo"] = procfs.parse_buddyinfo(sec["buddyinfo"])
        if "pagetypeinfo" in sec:
            snap["pagetypeinfo"] = procfs.parse_pagetypeinfo(sec["pagetypeinfo"])
        if "meminfo" in sec:
            snap["meminfo"] = procfs.parse_meminfo(sec["meminfo"])
        nodes = sorted(int(n[len("numastat-node"):]) for n in sec if n.startswith("numastat-node"))
        snap["numastat"] = {str(n): procfs.parse_counters(sec[f"numastat-node{n}"]) for n in nodes}
        result[phase] = snap
    return result


_WRITE_LINE = re.compile(r"^directwrite: (\d+) bytes in (\d+) writes in ([0-9.]+) s$")
_HOG_LINE = re.compile(r"^memhog: touched (\d+) pages .* in ([0-9.]+) s$")


def calibration(out: guest.GuestOutput) -> Optional[dict[str, Any]]:
    """The guest's own speeds (CALIBRATE=1): its virtio disk's O_DIRECT writes, 1 MiB and 4 KiB at a time,
    and a 64 MiB memory hog's faults; None when the guest did not measure them."""
    sec = {name: text for (ph, name), text in out.sections.items() if ph == "calib"}
    if not sec:
        return None
    got: dict[str, Any] = {}
    for name, key in (("write-1m", "write_1m"), ("write-4k", "write_4k")):
        for line in sec.get(name, "").splitlines():
            m = _WRITE_LINE.match(line.strip())
            if m:
                got[key] = {"bytes": int(m.group(1)), "writes": int(m.group(2)), "seconds": float(m.group(3))}
    for line in sec.get("memhog", "").splitlines():
        m = _HOG_LINE.match(line.strip())
        if m:
            got["memhog"] = {"pages": int(m.group(1)), "seconds": float(m.group(2))}
    missing = [k for k in ("write_1m", "write_4k", "memhog") if k not in got]
    if missing:
        name = {"write_1m": "write-1m", "write_4k": "write-4k", "memhog": "memhog"}[missing[0]]
        said = (sec.get(name, "").strip().splitlines() or ["no output"])[-1][:200]
        raise MmtwinError(f"oracle: the guest's calibration is incomplete ({missing[0]}: {said})")
    if min(got[k]["seconds"] for k in got) <= 0:
        raise MmtwinError("oracle: the guest's calibration measured a time of 0 s (its clock is too coarse); run again")
    return got


def guest_info(out: guest.GuestOutput) -> dict[str, Any]:
    """What the guest said about itself: release, command line, CPUs, memory and distances per node."""
    sec = {name: text for (ph, name), text in out.sections.items() if ph == "info"}
    nodes = sorted(int(n[len("cpulist-node"):]) for n in sec if n.startswith("cpulist-node"))
    return {
        "release": sec.get("uname", "").strip(),
        "cmdline": sec.get("cmdline", "").strip(),
        "nodes": [
            {
                "node": n,
                "cpus": procfs.parse_cpulist(sec.get(f"cpulist-node{n}", "")),
                "meminfo_kb": procfs.parse_meminfo(sec.get(f"meminfo-node{n}", "")),
                "distance": [int(x) for x in sec.get(f"distance-node{n}", "").split()],
            }
            for n in nodes
        ],
        "sysctl": dict(out.values),
        # /proc/mounts once a workload's disk is mounted (else "").
        "mounts": sec.get("mounts", ""),
    }


def summarize(snaps: dict[str, Any]) -> dict[str, Any]:
    """Per-zone layout and watermarks, placement counters, pgalloc per zone and vmstat changes."""
    before = snaps.get("before", {})
    after = snaps.get("after", before)
    during = snaps.get("during", {})
    free = {ph: {(z["node"], z["zone"]): z.get("free") for z in snaps.get(ph, {}).get("zoneinfo", [])}
            for ph in PHASES}
    zones = []
    for z in before.get("zoneinfo", []):
        if not z.get("present"):
            continue
        key = (z["node"], z["zone"])
        zones.append({
            "node": z["node"], "zone": z["zone"],
            **{k: z.get(k) for k in ("spanned", "present", "managed", "min", "low", "high", "protection", "start_pfn")},
            "free_before": free["before"].get(key),
            "free_during": free["during"].get(key) if during else None,
            "free_after": free["after"].get(key) if "after" in snaps else None,
        })
    numa = {}
    for node, b in before.get("numastat", {}).items():
        a = after.get("numastat", {}).get(node, b)
        numa[node] = {k: {"before": b.get(k, 0), "after": a.get(k, 0), "delta": a.get(k, 0) - b.get(k, 0)}
                      for k in NUMASTAT}
    vb, va = before.get("vmstat", {}), after.get("vmstat", {})
    pgalloc = {k[len("pgalloc_"):]: va.get(k, 0) - vb.get(k, 0) for k in va if k.startswith("pgalloc_")}
    deltas = {k: va[k] - vb.get(k, 0) for k in VMSTAT_DELTAS if k in va}
    return {"zones": zones, "numastat": numa, "pgalloc": pgalloc, "vmstat_delta": deltas}


TRACE_FILE = "mmtwin-trace.txt"      # where the guest leaves its trace, at the root of its disk
# An ftrace text line: "comm-pid [cpu] flags timestamp: event: fields" (the flags column since 3.x).
_TRACE_LINE = re.compile(r"^\s*\S.*?-\d+\s+\[\d+\]\s+(?:\S+\s+)?\d+\.\d+:\s+([a-z0-9_]+):")


# The memory hog's guest gets a small ext4 disk of its own for --trace (a file workload writes its trace
# to its own disk): ext4's own 64 MiB and 8 MiB a CPU, room for the text of a full 2 MiB buffer per CPU.
TRACE_DISK_BASE_MIB = 64
TRACE_DISK_MIB_PER_CPU = 8


def add_trace_disk(wl: dict[str, Any], cpus: int) -> None:
    """A workload without a disk of its own (the memory hog) gets one for its trace, on a guest of `cpus` CPUs."""
    if "disk_mib" not in wl:
        wl.update(disk_mib=TRACE_DISK_BASE_MIB + TRACE_DISK_MIB_PER_CPU * cpus, fs="ext4", disk_for="trace")


def uses_disk(wl: dict[str, Any]) -> bool:
    """Does the workload itself use a virtio disk (its files, or swap), not only one for its trace?"""
    return "swap_mib" in wl or ("disk_mib" in wl and wl.get("disk_for") != "trace")


def check_trace(path: Optional[str], wl: Optional[dict[str, Any]]) -> Optional[Path]:
    """--trace FILE: the guest traces its vmscan events to its disk (the memory hog gets one for it);
    FILE must be writable."""
    if path is None:
        return None
    if not path:
        raise MmtwinError("--trace: '' is not allowed; expected a file path")
    if wl is None:
        raise MmtwinError(f"--trace: {path!r} is not allowed without a workload")
    if wl.get("fs", "ext4") != "ext4":
        raise MmtwinError(f"--trace: {path!r} is not allowed with --fs {wl['fs']}; the host reads the trace out of "
                          "an ext4 disk (debugfs)")
    out = Path(path)
    if out.is_dir():
        raise MmtwinError(f"--trace: {path!r} is a directory; expected a file path")
    if not out.parent.is_dir():
        raise MmtwinError(f"--trace: {path!r}: directory {str(out.parent)!r} does not exist")
    return out


def trace_summary(text: str) -> dict[str, Any]:
    """Events per tracepoint in an ftrace text file, and the lines that are not events."""
    counts: dict[str, int] = {}
    other = 0
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _TRACE_LINE.match(line)
        if m is None:
            other += 1
            continue
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return {"events": dict(sorted(counts.items())), "total": sum(counts.values()), "unparsed_lines": other}


def _check_cpus(topo: guest.GuestTopology, ids: list[int], why_twice: str) -> None:
    if len(set(ids)) != len(ids):
        dup = next(c for c in ids if ids.count(c) > 1)
        raise MmtwinError(f"--cpus: CPU {dup} twice is not allowed{why_twice}")
    for c in ids:
        if c >= topo.total_cpus:
            raise MmtwinError(f"--cpus: CPU {c} is not allowed; the guest has CPUs 0-{topo.total_cpus - 1}")


def _fsmark_workload(topo: guest.GuestTopology, fsmark: Optional[str], size_mib: Optional[int], threads: int,
                     cpus: Optional[str], disk_mib: Optional[int], fs: str) -> dict[str, Any]:
    """fs_mark in the guest: its processes may run on every CPU of --cpus (default: all the guest's), as
    the twin's fsmark threads may on theirs."""
    from mmtwin.config import parse_id_option

    fm = fsmark_settings(fsmark, size_mib, threads)
    ids = parse_id_option(cpus, "--cpus")
    if ids is None:
        ids = list(range(topo.total_cpus))
    _check_cpus(topo, ids, "")
    total = fm["threads"] * fm["files"] * fm["iterations"] * fm["file_bytes"]
    size = max(1, -(-total // (1 << 20)))
    if size > MAX_FILE_MIB:
        raise MmtwinError(f"--fsmark: {size} MiB of files is not allowed; a file workload writes at most "
                          f"{MAX_FILE_MIB} MiB")
    # Each file takes an inode, and the image has one per 16 KiB (mkfs -i 16384): 16 KiB a file besides
    # the data.
    files = fm["threads"] * fm["files"] * fm["iterations"]
    return {"kind": "fsmark", "size_mib": size, "threads": fm["threads"], "cpus": ids, "fsmark": fm,
            "disk_mib": disk_size(size + files // 64 + 1, disk_mib, fs), "fs": fs}


def _largedd_workload(topo: guest.GuestTopology, sets: Optional[Sequence[str]], size_mib: Optional[int],
                      threads: int, cpus: Optional[str], disk_mib: Optional[int], fs: str) -> dict[str, Any]:
    """LARGE DD in the guest: one process, allowed on every CPU of --cpus (default all), as the twin's."""
    from mmtwin.config import parse_id_option

    ld = largedd_settings(sets, size_mib, threads)
    ids = parse_id_option(cpus, "--cpus")
    if ids is None:
        ids = list(range(topo.total_cpus))
    _check_cpus(topo, ids, "")
    # The tarfile and every copy exist together until the copies are deleted.
    size = -(-ld["tar_bytes"] * (ld["copies"] + 1) // (1 << 20))
    if size > MAX_FILE_MIB:
        raise MmtwinError(f"--set: {size} MiB of tarfile and copies is not allowed; a file workload writes at most "
                          f"{MAX_FILE_MIB} MiB")
    return {"kind": "largedd", "size_mib": size, "threads": 1, "cpus": ids, "largedd": ld,
            "disk_mib": disk_size(size, disk_mib, fs), "fs": fs}


def _overruns(out: guest.GuestOutput) -> int:
    total = 0
    for (phase, _name), text in out.sections.items():
        if phase != "trace":
            continue
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "overrun" and value.strip().isdigit():
                total += int(value)
    return total


def _settings(wl: Optional[dict[str, Any]], sysctls: list[tuple[str, str]]) -> tuple[str, str]:
    if wl is None:
        conf = "HOG_MIB=0\n"
    else:
        conf = (f"WORKLOAD={wl['kind']}\nHOG_MIB={wl['size_mib']}\nHOG_THREADS={wl['threads']}\n"
                f"HOG_CPUS={','.join(map(str, wl['cpus']))}\nHOG_PASSES={wl.get('passes', 1)}\n"
                f"DISK={int('disk_mib' in wl)}\nFS={wl.get('fs', 'ext4')}\nSWAP={int('swap_mib' in wl)}\n")
        if wl["kind"] == "fsmark":
            conf += f"FSMARK_ARGS='{' '.join(str(wl['fsmark'][f]) for f in FSMARK_FIELDS)}'\n"
        if wl["kind"] == "largedd":
            ld = wl["largedd"]
            conf += f"LARGEDD_ARGS='{ld['tar_bytes']} {ld['copies']} {ld['dd_bytes']} {ld['download_mib_s']}'\n"
    return conf, "".join(f"{k} {v}\n" for k, v in sysctls)


def oracle_run(machine: Any, *, mem_mib: Optional[int] = None, scale: Optional[float] = None,
               max_cpus: int = guest.DEFAULT_MAX_CPUS, size_mib: Optional[int] = None, threads: int = 1,
               cpus: Optional[str] = None, sysctls: Optional[Sequence[str]] = None, kernel: Optional[str] = None,
               accel: str = "auto", timeout: float = 300.0, workload_on: bool = True,
               extra_conf: str = "", kind: str = "memhog", disk_mib: Optional[int] = None,
               trace: Optional[str] = None, fsmark: Optional[str] = None, swap_mib: Optional[int] = None,
               passes: int = 1, calibrate: bool = False, fs: Optional[str] = None,
               sets: Optional[Sequence[str]] = None) -> tuple[dict[str, Any], guest.BootResult]:
    """Boot, run the workload (unless `workload_on` is False) and return (the result dict, the boot).
    `extra_conf` is added to the guest's /oracle.conf (oracle compare's WMARK_RECOMPUTE); `trace`, a
    file the guest's vmscan trace of a file workload is written to; `calibrate`: a workload with a
    virtio disk (files or swap) first measures the guest's disk and fault speeds (doc["calibration"])."""
    topo = guest.guest_topology(machine, mem_mib, scale, max_cpus)
    settings = parse_sysctls(sysctls)
    wl = workload(topo, size_mib, threads, cpus, kind, disk_mib, fsmark, swap_mib, passes, fs, sets) if workload_on else None
    trace_out = check_trace(trace, wl)
    if trace_out is not None and wl is not None:
        add_trace_disk(wl, topo.total_cpus)
    conf, sysctl_text = _settings(wl, settings)
    conf += extra_conf
    if trace_out is not None:
        conf += "TRACE=1\n"
    if calibrate and wl is not None and uses_disk(wl):
        conf += "CALIBRATE=1\n"
    result = guest.boot(topo, conf, sysctl_text, kernel=kernel, accel=accel, timeout=timeout,
                        disk_mib=wl.get("disk_mib") if wl else None, swap_mib=wl.get("swap_mib") if wl else None,
                        fs=wl.get("fs", "ext4") if wl else "ext4",
                        fetch=(TRACE_FILE, trace_out) if trace_out is not None else None)
    out = result.output
    if out.errors:
        first = out.errors[0]
        if first.startswith("disk "):
            raise MmtwinError(f"oracle: the guest could not use its disk: {first[len('disk '):]}")
        if first.startswith("trace "):
            raise MmtwinError(f"--trace: the guest could not trace: {first[len('trace '):]}")
        if first.startswith("swap "):
            raise MmtwinError(f"--swap-mib: the guest could not use its swap disk: {first[len('swap '):]}")
        raise MmtwinError(f"--sysctl: the guest kernel said: {first}")
    if wl is not None and out.status.get("workload") != 0:
        status = out.status.get("workload")
        said = out.sections.get(("run", "workload"), "").strip().splitlines()
        why = f": {said[-1][:160]}" if said else ""
        killed = " (137: killed, the OOM killer?)" if status == 137 else ""
        what = "hog" if wl["kind"] == "memhog" else f"{wl['kind']} workload"
        option = {"fsmark": "--fsmark", "largedd": "--set"}.get(wl["kind"], "--size-mib")
        raise MmtwinError(f"{option}: the {what} of {wl['size_mib']} MiB failed in the guest, "
                          f"exit status {status}{killed}{why}")
    snaps = snapshots(out)
    wanted = ("before", "during", "after") if wl is not None else ("before",)
    missing = [ph for ph in wanted if ph not in snaps or "zoneinfo" not in snaps[ph] or "vmstat" not in snaps[ph]]
    if missing:
        raise MmtwinError(f"oracle: the guest's {missing[0]} snapshot is missing or incomplete; run again")
    doc: dict[str, Any] = {
        "machine": machine.name,
        "accel": result.accel,
        "kernel_image": str(result.kernel),
        "guest": {
            "nodes": topo.nodes,
            "cpus_per_node": topo.cpus,
            "preset_cpus_per_node": topo.preset_cpus,
            "cpus_cut": topo.cut_note(),
            "memory_mib": topo.memory_mib,
            "preset_memory_mib": topo.preset_memory_mib,
            "distance": topo.distance,
        },
        "kernel": guest_info(out),
        "sysctl_set": dict(settings),
        "workload": None,
        "snapshots": snaps,
        "summary": summarize(snaps),
        "calibration": calibration(out),
    }
    if wl is not None:
        printed = out.sections.get(("run", "workload"), "").strip()
        doc["workload"] = {**wl, "output": printed, "status": out.status.get("workload")}
    if trace_out is not None:
        try:
            text = trace_out.read_text(errors="replace")
        except OSError as exc:
            raise MmtwinError(f"--trace: cannot read {str(trace_out)!r} back: {exc.strerror}") from None
        doc["trace"] = {"path": str(trace_out), "overruns": _overruns(out), **trace_summary(text)}
    return doc, result


# --------------------------------------------------------------------------- text


def describe_workload(wl: dict[str, Any]) -> str:
    swap = f", {wl['swap_mib']} MiB of swap on a virtio disk" if wl.get("swap_mib") else ""
    trace = f", a {wl['disk_mib']} MiB ext4 virtio disk for the trace" if wl.get("disk_for") == "trace" else ""
    return _describe(wl) + swap + trace


def _describe(wl: dict[str, Any]) -> str:
    cpus = ",".join(map(str, wl["cpus"]))
    if wl.get("kind", "memhog") == "memhog":
        passes = wl.get("passes", 1)
        times = f", {passes} passes" if passes > 1 else ""
        return f"memhog {wl['size_mib']} MiB{times}, {wl['threads']} thread(s) on CPU {cpus}"
    if wl["kind"] == "largedd":
        ld = wl["largedd"]
        return (f"largedd {ld['tar_mib']:g} MiB tarfile at {ld['download_mib_s']} MiB/s, {ld['copies']} dd copies "
                f"with bs={ld['dd_bytes']} ({wl['size_mib']} MiB), on CPUs {cpus}, files on {wl['fs']} on a "
                f"{wl['disk_mib']} MiB virtio disk")
    if wl["kind"] == "fsmark":
        f = wl["fsmark"]
        return (f"fsmark -d x {f['dirs']} -D {f['subdirs']} -N {f['files_per_subdir']} -n {f['files']} "
                f"-L {f['iterations']} -t {f['threads']} -S0 -s {f['file_bytes']} -w {f['write_bytes']} "
                f"({wl['size_mib']} MiB), processes on CPUs {cpus}, files on {wl['fs']} on a {wl['disk_mib']} MiB "
                "virtio disk")
    return (f"{wl['kind']} {wl['size_mib']} MiB through shared file mappings, {wl['threads']} process(es) on CPU "
            f"{cpus}, files on {wl['fs']} on a {wl['disk_mib']} MiB virtio disk")


def format_summary(doc: dict[str, Any]) -> str:
    g, k, s = doc["guest"], doc["kernel"], doc["summary"]
    lines = []
    mem = "+".join(map(str, g["memory_mib"]))
    cpus = "+".join(map(str, g["cpus_per_node"]))
    lines.append(f"oracle: {doc['machine']} on Linux {k['release']} ({doc['accel']}): {g['nodes']} nodes, "
                 f"CPUs {cpus}, memory {mem} MiB")
    if g["cpus_cut"]:
        lines.append(f"  {g['cpus_cut']}")
    dist = g["distance"]
    if len(dist) > 1:
        lines.append("  distance: " + " / ".join(" ".join(map(str, row)) for row in dist))
    sysctl = k.get("sysctl", {})
    if sysctl:
        lines.append("  sysctl: " + ", ".join(f"{key}={v}" for key, v in sysctl.items()))
    wl = doc.get("workload")
    if wl:
        lines.append(f"workload: {describe_workload(wl)}; exit status {wl['status']}")
        if wl["output"]:
            lines.append(f"  guest: {wl['output']}  (guest time, not comparable with the twin's)")
    lines.append("")
    lines.append("zones (pages)        spanned   present   managed     min     low    high  free:before  during   after  protection")
    for z in s["zones"]:
        def n(v: Any) -> str:
            return "-" if v is None else str(v)
        lines.append(
            f"  node {z['node']} {z['zone']:<8} {z['spanned']:>9} {z['present']:>9} {z['managed']:>9} {z['min']:>7} "
            f"{z['low']:>7} {z['high']:>7} {n(z['free_before']):>12} {n(z['free_during']):>7} {n(z['free_after']):>7}  "
            f"({', '.join(map(str, z['protection']))})"
        )
    if s["numastat"]:
        lines.append("")
        lines.append("numastat (change over the workload)" if wl else "numastat")
        lines.append("  node " + "".join(f"{c:>15}" for c in NUMASTAT))
        for node, row in s["numastat"].items():
            lines.append(f"  {node:>4} " + "".join(f"{row[c]['delta' if wl else 'after']:>15}" for c in NUMASTAT))
    if wl:
        lines.append("")
        lines.append("pgalloc (change): " + ", ".join(f"{z} {v}" for z, v in s["pgalloc"].items()))
        changed = {c: v for c, v in s["vmstat_delta"].items() if v}
        lines.append("vmstat (change): " + (", ".join(f"{c} {v}" for c, v in changed.items()) or "none"))
    tr = doc.get("trace")
    if tr:
        lines.append("")
        lines.append(f"trace: {tr['total']} vmscan events in {tr['path']} (buffer overruns {tr['overruns']}): "
                     + (", ".join(f"{e} {n}" for e, n in tr["events"].items()) or "none"))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- raw files


def write_raw(dir: Path, doc: dict[str, Any], result: guest.BootResult) -> None:
    """--output-dir: the raw /proc and /sys texts per phase, the serial log, QEMU's command line and oracle.json."""
    for (phase, name), text in sorted(result.output.sections.items()):
        target = dir / phase / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (dir / "serial.log").write_text(result.output.serial)
    (dir / "qemu-cmdline").write_text(" ".join(result.command) + "\n")
    (dir / "oracle.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def check_output_dir(path: Optional[Path]) -> Optional[Path]:
    if path is None:
        return None
    from mmtwin.results import make_writable_dir

    path = make_writable_dir(Path(path), "--output-dir", "give a new or empty directory, or an earlier oracle output")
    entries = sorted(p.name for p in path.iterdir())
    if entries and "oracle.json" not in entries:
        raise MmtwinError(
            f"--output-dir: directory {str(path)!r} is not empty and holds no oracle.json (found {entries[0]!r}); "
            "give a new or empty directory, or an earlier oracle output to replace"
        )
    return path
