"""Pydantic models and loaders for machine presets, kernel profiles and experiments.

The TOML schemas are described in docs/config-schema.md. Every table is strict
(unknown keys are errors) and every error is reported as one line naming the
file, the dotted field path, the bad value and what is allowed, e.g.::

    python/mmtwin/data/presets/machines/x.toml: topology.distance: 27 rows, expected 28 (one per node)
"""

from __future__ import annotations

import importlib.resources
import os
import stat
import tomllib
import types
import typing
from collections.abc import Sequence
from fractions import Fraction
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from mmtwin.errors import MmtwinError

ZONE_NAMES: tuple[str, ...] = ("DMA", "DMA32", "NORMAL", "HIGHMEM", "MOVABLE")
ERAS: tuple[str, ...] = ("2.6.18", "3.0", "3.1", "4.11")
ZLC_MODES: tuple[str, ...] = ("none", "after-first-zone", "first-eligible")
ARCHES: tuple[str, ...] = ("ia64", "x86_64")
WORKLOAD_KINDS: tuple[str, ...] = ("memhog", "fsmark", "largedd", "mmapstream")
FS_KINDS: tuple[str, ...] = ("ext3", "ext4", "xfs")

MAX_NODES = 256  # the engine's limit (crates/mmtwin-core spec.rs)
MAX_CPUS = 4096
INT_MAX = 2**31 - 1  # the kernel's int sysctls (lowmem_reserve_ratio)
ZONE_RECLAIM_MODE_MAX = 7  # RECLAIM_ZONE | RECLAIM_WRITE | RECLAIM_SWAP
LOWMEM_RESERVE_ENTRIES = len(ZONE_NAMES) - 1  # one per zone type below MOVABLE
BLKDEV_MIN_RQ = 4  # 3.0 include/linux/blkdev.h: the smallest nr_requests a queue accepts
FSMARK_MAX_THREADS = 64  # fs_mark.h MAX_THREADS
FSMARK_MAX_FILES = 1_000_000  # fs_mark.h MAX_FILES: -n at most this
FSMARK_MAX_IO = 1024 * 1024  # fs_mark.h MAX_IO_BUFFER_SIZE: -w at most this
FSMARK_MAX_ITERATIONS = 100_000  # the engine's limit on -L (spec.rs validate_file_workload)
U32_MAX = 2**32 - 1  # the engine's 32-bit counts (subdirs, files_per_subdir, copies)


class FieldError(ValueError):
    """A validation error about a sub-field of the model being validated.

    Raised from model validators so that the reported path names the field
    (``topology.distance``) rather than the enclosing table (``topology``).
    """

    def __init__(self, path: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.path = tuple(path)
        self.message = message


def describe(value: Any) -> str:
    """A short, TOML-like rendering of a value for error messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        text = "{" + ", ".join(f"{k} = {describe(v)}" for k, v in value.items()) + "}"
    elif isinstance(value, (list, tuple)):
        text = "[" + ", ".join(describe(v) for v in value) + "]"
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool))


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# --------------------------------------------------------------------------- machines


class Topology(StrictModel):
    nodes: int
    cpus_per_node: int | list[int]
    memory_mib: int | list[int]
    reserved_mib: int | list[int] = 0
    distance: list[list[int]]
    # The PCI (MMIO) hole: physical addresses [start, end) MiB hold no RAM;
    # the firmware remaps the RAM that would lie there above it, so nodes
    # are laid out skipping it and zone bands stay physical addresses.
    pci_hole_mib: list[int] | None = None
    # Optional: the pages each zone band holds on each node, as a real kernel
    # manages them (`mmtwin oracle capture` writes it from /proc/zoneinfo).
    # One list per node, one entry per [[zones]] band (0 where the node has
    # none of it). It replaces the layout from memory_mib, the bands and the
    # PCI hole: pages the kernel never managed are simply not there, and
    # reserved_mib is what the kernel had in use among them at boot.
    zone_pages: list[list[int]] | None = None
    # Each node's port into the interconnect, MB/s in each direction: remote
    # page clears pass through the page's node's port and queue there when
    # many CPUs clear on one node (docs/architecture.md, "Cost model"). 0:
    # unlimited.
    link_mb_s: int = 0

    @field_validator("link_mb_s")
    @classmethod
    def _link(cls, v: int) -> int:
        if not 0 <= v <= 10_000_000:
            raise ValueError(f"{v} is not allowed; expected 0 (unlimited) to 10000000 MB/s")
        return v

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, v: int) -> int:
        if not 1 <= v <= MAX_NODES:
            raise ValueError(f"{v} is not allowed; expected 1 to {MAX_NODES}")
        return v

    @field_validator("cpus_per_node", "memory_mib", "reserved_mib", mode="before")
    @classmethod
    def _int_or_list(cls, v: Any) -> Any:
        if _is_int(v):
            return v
        if isinstance(v, list) and all(_is_int(x) for x in v):
            return v
        raise ValueError(f"{describe(v)} is not allowed; expected an integer or a list of integers (one per node)")

    @model_validator(mode="after")
    def _check(self) -> "Topology":
        n = self.nodes
        for field, minimum, what in (
            ("cpus_per_node", 0, ">= 0"),
            ("memory_mib", 1, "> 0"),
            ("reserved_mib", 0, ">= 0"),
        ):
            value = getattr(self, field)
            if isinstance(value, list):
                if len(value) != n:
                    raise FieldError([field], f"{_count(len(value), 'entry', 'entries')}, expected {n} (one per node)")
                for i, x in enumerate(value):
                    if x < minimum:
                        raise FieldError([field, i], f"{x} is not allowed; must be {what}")
            elif value < minimum:
                raise FieldError([field], f"{value} is not allowed; must be {what}")
        if sum(self.cpus()) < 1:
            raise FieldError(["cpus_per_node"], f"{describe(self.cpus_per_node)} gives no CPU at all; at least one node needs a CPU")
        if sum(self.cpus()) > MAX_CPUS:
            raise FieldError(["cpus_per_node"], f"{sum(self.cpus())} CPUs in total is not allowed; at most {MAX_CPUS}")
        for i, (mem, res) in enumerate(zip(self.memory(), self.reserved())):
            if res >= mem:
                where = ["reserved_mib", i] if isinstance(self.reserved_mib, list) else ["reserved_mib"]
                raise FieldError(where, f"{res} MiB reserved on node {i}, which has only {mem} MiB; must be less than memory_mib")
        hole = self.pci_hole_mib
        if hole is not None:
            if len(hole) != 2 or not all(_is_int(x) for x in hole):
                raise FieldError(["pci_hole_mib"], f"{describe(hole)} is not allowed; expected [start, end] in MiB")
            if not 0 < hole[0] < hole[1]:
                raise FieldError(["pci_hole_mib"], f"{hole} is not allowed; expected 0 < start < end (MiB)")
        d = self.distance
        if len(d) != n:
            raise FieldError(["distance"], f"{_count(len(d), 'row', 'rows')}, expected {n} (one per node)")
        for i, row in enumerate(d):
            if len(row) != n:
                raise FieldError(["distance", i], f"row has {_count(len(row), 'entry', 'entries')}, expected {n} (one per node)")
            for j, x in enumerate(row):
                if i == j and x != 10:
                    raise FieldError(["distance", i, j], f"{x} is not allowed on the diagonal; a node's distance to itself is 10")
                if not 10 <= x <= 255:
                    raise FieldError(["distance", i, j], f"{x} is not allowed; distances are 10..255")
        return self

    def cpus(self) -> list[int]:
        return _per_node(self.cpus_per_node, self.nodes)

    def memory(self) -> list[int]:
        return _per_node(self.memory_mib, self.nodes)

    def reserved(self) -> list[int]:
        return _per_node(self.reserved_mib, self.nodes)


def _per_node(value: int | list[int], nodes: int) -> list[int]:
    return list(value) if isinstance(value, list) else [value] * nodes


class ZoneBand(StrictModel):
    name: Literal["DMA", "DMA32", "NORMAL", "HIGHMEM", "MOVABLE"]
    end_mib: int | None = None

    @field_validator("end_mib")
    @classmethod
    def _end(cls, v: int | None) -> int | None:
        if v is not None and v <= 0:
            raise ValueError(f"{v} is not allowed; must be > 0")
        return v


COST_MAX_NS = 1_000_000_000  # the engine's limit per cost (crates/mmtwin-core spec.rs)
MAX_DEVICES = 16  # the engine's block layer (block.rs)
# The engine's bound on simulated pages (crates/mmtwin-core/src/spec.rs MAX_PAGES), and on swap slots:
# about 3.8 GB of state at 28 bytes a page (docs/architecture.md, Memory bound).
MAX_PAGES = 2**27
# The engine's limits per device (spec.rs validate_storage_and_sysctls).
MAX_DISKS = 64
MAX_NR_REQUESTS = 100_000
MAX_SECTORS_KIB = 65_536
# The engine's limit on a disk's queue_depth (spec.rs).
MAX_QUEUE_DEPTH = 256
MAX_DISK_MIB = 2**32
REQUEST_SLOTS_BUDGET = 2**30  # spec.rs: all devices' preallocated request slots together


class Cost(StrictModel):
    fault_ns: int
    clear_ns_per_kib: int
    clear_remote_ns_per_kib: int
    line_miss_ns: int
    line_hit_ns: int
    buddy_page_ns: int
    user_store_ns: int
    # Specification v2 (docs/engine-api.md): optional, defaults are the engine's own.
    syscall_ns: int = 300
    copy_ns_per_kib: int = 250
    page_cache_ns: int = 400
    scan_page_ns: int = 150
    inode_ns: int = 20000
    writepage_ns: int = 1500
    clone_ns: int = 25000

    @field_validator("*")
    @classmethod
    def _non_negative(cls, v: int) -> int:
        if not 0 <= v <= COST_MAX_NS:
            raise ValueError(f"{v} is not allowed; costs are nanoseconds from 0 to {COST_MAX_NS} (the engine's limit)")
        return v


def _int_between(v: Any, lo: int, hi: int, what: str) -> Any:
    """``v`` if it is a whole number in ``lo..hi``; else the error naming it and ``what`` is allowed."""
    if _is_int(v) and lo <= v <= hi:
        return v
    raise ValueError(f"{describe(v)} is not allowed; {what}")


def _min_int(v: int, minimum: int, what: str) -> int:
    if v < minimum:
        raise ValueError(f"{v} is not allowed; {what}")
    return v


def _between(v: int, lo: int, hi: int, what: str = "") -> int:
    if not lo <= v <= hi:
        raise ValueError(f"{v} is not allowed; expected {lo} to {hi}{what}")
    return v


class StorageDevice(StrictModel):
    """One request queue: a plain disk, or md RAID-0 over ``disks`` identical disks."""

    name: str
    disks: int = 1
    chunk_kib: int = 64
    bandwidth_mib_s: int
    # Either a flat access time for every non-contiguous piece, or a seek
    # curve: spindle speed, track-to-track and full-stroke seek (block.rs).
    access_us: int | None = None
    rpm: int | None = None
    track_seek_us: int | None = None
    full_seek_us: int | None = None
    nr_requests: int
    max_sectors_kib: int
    size_mib: int
    # The member disks' I/O scheduler: "noop" serves reads and writes in
    # arrival order; "deadline" keeps each direction sorted by sector and
    # serves batches in ascending order, reads first, with writes let
    # through after two read batches and expired pieces first; "cfq" gives
    # each reader its own queue and the writes one shared queue, served in
    # turns of time slices (block.rs, docs/config-schema.md).
    elevator: Literal["noop", "deadline", "cfq"] = "noop"
    # Commands each disk holds at once: 1 takes one at a time in the
    # elevator's order; more is native command queueing (a SATA drive under
    # libata: 31), the drive serving the piece nearest its head first.
    queue_depth: int = 1

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v or not all(c.isalnum() or c in "-_" for c in v):
            raise ValueError(f"{describe(v)} is not allowed; expected a device name of letters, digits, '-' and '_' (e.g. 'sda', 'md0')")
        return v

    @field_validator("disks")
    @classmethod
    def _disks(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"{v} is not allowed; a RAID of zero disks stores nothing: expected 1 (a plain disk) or more (md RAID-0)")
        if v > MAX_DISKS:
            raise ValueError(f"{v} is not allowed; expected 1 to {MAX_DISKS} disks (the engine's largest md RAID-0)")
        return v

    @field_validator("chunk_kib")
    @classmethod
    def _chunk(cls, v: int) -> int:
        if not (4 <= v <= 2**20 and v & (v - 1) == 0):
            raise ValueError(f"{v} is not allowed; expected a power of two from 4 to 1048576 KiB (the md chunk size)")
        return v

    @field_validator("bandwidth_mib_s", mode="before")
    @classmethod
    def _bandwidth(cls, v: Any) -> Any:
        return _int_between(v, 1, 1_000_000, "expected a whole number of MiB/s, 1 to 1000000 (per disk)")

    @field_validator("access_us", mode="before")
    @classmethod
    def _access(cls, v: Any) -> Any:
        return _int_between(v, 0, 1_000_000_000, "expected a whole number of microseconds, 0 to 1000000000 (seek + rotation)")

    @field_validator("rpm", mode="before")
    @classmethod
    def _rpm(cls, v: Any) -> Any:
        return _int_between(v, 1000, 30_000, "expected a spindle speed of 1000 to 30000 revolutions a minute")

    @field_validator("track_seek_us", "full_seek_us", mode="before")
    @classmethod
    def _seek(cls, v: Any) -> Any:
        return _int_between(v, 1, 1_000_000, "expected a whole number of microseconds, 1 to 1000000")

    @model_validator(mode="after")
    def _access_model(self) -> "StorageDevice":
        curve = {"rpm": self.rpm, "track_seek_us": self.track_seek_us, "full_seek_us": self.full_seek_us}
        given = [k for k, v in curve.items() if v is not None]
        if not given:
            if self.access_us is None:
                raise FieldError(["access_us"], "missing; give access_us (a flat access time) or rpm, track_seek_us and full_seek_us (a seek curve)")
            return self
        if self.access_us is not None:
            raise FieldError(["access_us"], f"{self.access_us} is not allowed with {given[0]}; the seek curve replaces the flat access time: give one or the other")
        for k, v in curve.items():
            if v is None:
                raise FieldError([k], f"missing; a seek curve needs rpm, track_seek_us and full_seek_us ({given[0]} is given)")
        assert self.track_seek_us is not None and self.full_seek_us is not None
        if self.full_seek_us < self.track_seek_us:
            raise FieldError(["full_seek_us"], f"{self.full_seek_us} is not allowed; at least track_seek_us ({self.track_seek_us}): a full stroke is the longest seek")
        return self

    @field_validator("nr_requests")
    @classmethod
    def _nr_requests(cls, v: int) -> int:
        return _between(v, BLKDEV_MIN_RQ, MAX_NR_REQUESTS,
                        f" (from BLKDEV_MIN_RQ, the smallest queue the block layer accepts, to the engine's limit)")

    @field_validator("max_sectors_kib")
    @classmethod
    def _max_sectors(cls, v: int) -> int:
        return _between(v, 4, MAX_SECTORS_KIB, " KiB (one page per request at least; the engine's limit)")

    @field_validator("size_mib")
    @classmethod
    def _size(cls, v: int) -> int:
        return _between(v, 1, MAX_DISK_MIB, " MiB (per disk; the engine's limit, 4 PiB)")

    @field_validator("queue_depth")
    @classmethod
    def _queue_depth(cls, v: int) -> int:
        return _between(v, 1, MAX_QUEUE_DEPTH, " commands (1: none queued; a SATA drive under libata takes 31)")

    def capacity_mib(self) -> int:
        return self.size_mib * self.disks


def request_slots_bytes(d: StorageDevice, page_size: int) -> int:
    """The engine's bound on one device's preallocated request slots (spec.rs ``request_slots_bytes``)."""
    pages = max(1, d.max_sectors_kib * 1024 // page_size)
    return 2 * max(1, 3 * d.nr_requests // 2) * d.disks * (12 * pages + 48 * d.disks + 64) + 4 * d.queue_depth * d.disks


class Filesystem(StrictModel):
    kind: Literal["ext3", "ext4", "xfs"]
    device: str
    size_mib: int
    # ext4's jbd2 journal (the engine's jbd2.rs); None: ext4 has one.
    journal: bool | None = None
    # The journal's commit interval in seconds (ext4's commit= mount option).
    commit_s: int = 5

    @field_validator("size_mib")
    @classmethod
    def _size(cls, v: int) -> int:
        return _min_int(v, 1, "expected a size in MiB > 0")

    @field_validator("commit_s")
    @classmethod
    def _commit(cls, v: int) -> int:
        return _between(v, 1, 300, " seconds")

    @model_validator(mode="after")
    def _journal(self) -> "Filesystem":
        if self.journal and self.kind != "ext4":
            raise FieldError(["journal"], f"true is not allowed with kind {self.kind!r}; "
                             "the engine models ext4's jbd2 journal only (false, or leave it out)")
        return self


class SwapArea(StrictModel):
    device: str
    size_mib: int

    @field_validator("size_mib")
    @classmethod
    def _size(cls, v: int) -> int:
        return _min_int(v, 1, "expected a size in MiB > 0")


class Storage(StrictModel):
    devices: list[StorageDevice]
    fs: Filesystem
    swap: SwapArea | None = None

    @model_validator(mode="after")
    def _check(self) -> "Storage":
        if not self.devices:
            raise FieldError(["devices"], "[] is not allowed; list at least one [[storage.devices]] table")
        if len(self.devices) > MAX_DEVICES:
            raise FieldError(["devices"], f"{len(self.devices)} devices is not allowed; 1 to {MAX_DEVICES}")
        names = [d.name for d in self.devices]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise FieldError(["devices", i, "name"], f"{name!r} is used twice; device names must be unique")
        listing = ", ".join(names)
        used: dict[str, int] = {}
        for key, area in (("fs", self.fs), ("swap", self.swap)):
            if area is None:
                continue
            if area.device not in names:
                raise FieldError([key, "device"], f"{area.device!r} is not a device; devices: {listing}")
            dev = self.devices[names.index(area.device)]
            what = "a filesystem" if key == "fs" else "a swap area"
            if area.size_mib > dev.capacity_mib():
                raise FieldError(
                    [key, "size_mib"],
                    f"{area.size_mib} MiB is {what} larger than its device {dev.name} "
                    f"({dev.capacity_mib()} MiB = {dev.disks} x {dev.size_mib} MiB)",
                )
            used[dev.name] = used.get(dev.name, 0) + area.size_mib
            if used[dev.name] > dev.capacity_mib():
                raise FieldError(
                    [key, "size_mib"],
                    f"{area.size_mib} MiB of swap plus the {self.fs.size_mib} MiB filesystem do not fit on "
                    f"{dev.name} ({dev.capacity_mib()} MiB)",
                )
        return self

    def device_index(self, name: str) -> int:
        return [d.name for d in self.devices].index(name)


class Machine(StrictModel):
    name: str
    description: str
    source: str
    arch: Literal["ia64", "x86_64"]
    page_size: int
    cache_line: int
    # Each CPU's share of its last-level cache in KiB (the coherence model's
    # evictions); 0: lines are never evicted (docs/config-schema.md).
    cache_kib: int = 0
    hz: int
    max_order: int = 11
    topology: Topology
    zones: list[ZoneBand]
    cost: Cost
    storage: Storage | None = None
    # Where a workload's threads run: "none" = thread i on CPU i; "ia64-2.6.18" =
    # 2.6.18's exec and fork balancing over ia64's sched domains (docs/config-schema.md).
    fork_balance: Literal["none", "ia64-2.6.18"] = "none"

    @field_validator("max_order")
    @classmethod
    def _max_order(cls, v: int) -> int:
        if not 2 <= v <= 20:
            raise ValueError(f"{v} is not allowed; expected 2 to 20 (MAX_ORDER: orders 0..MAX_ORDER-1)")
        return v

    @field_validator("page_size")
    @classmethod
    def _page_size(cls, v: int) -> int:
        if not (4096 <= v <= 65536 and v & (v - 1) == 0):
            raise ValueError(f"{v} is not allowed; expected a power of two from 4096 to 65536")
        return v

    @field_validator("cache_line")
    @classmethod
    def _cache_line(cls, v: int) -> int:
        if not (16 <= v <= 4096 and v & (v - 1) == 0):
            raise ValueError(f"{v} is not allowed; expected a power of two from 16 to 4096")
        return v

    @field_validator("cache_kib")
    @classmethod
    def _cache_kib(cls, v: int) -> int:
        if not 0 <= v <= 2**30:
            raise ValueError(f"{v} is not allowed; expected 0 (unbounded) to 1073741824 KiB")
        return v

    @field_validator("hz")
    @classmethod
    def _hz(cls, v: int) -> int:
        if not 1 <= v <= 10000:
            raise ValueError(f"{v} is not allowed; expected 1 to 10000 (CONFIG_HZ)")
        return v

    @model_validator(mode="after")
    def _zones(self) -> "Machine":
        if not self.zones:
            raise FieldError(["zones"], "no zone band; at least one [[zones]] table is required")
        order = {name: i for i, name in enumerate(ZONE_NAMES)}
        last = len(self.zones) - 1
        for i, band in enumerate(self.zones):
            if i > 0:
                prev = self.zones[i - 1]
                if order[band.name] <= order[prev.name]:
                    raise FieldError(
                        ["zones", i, "name"],
                        f"{band.name!r} after {prev.name!r}; bands go low to high "
                        f"({', '.join(ZONE_NAMES)}), each at most once",
                    )
            if i < last:
                if band.end_mib is None:
                    raise FieldError(["zones", i, "end_mib"], "missing; every band but the last needs end_mib")
                if i > 0 and band.end_mib <= (self.zones[i - 1].end_mib or 0):
                    raise FieldError(
                        ["zones", i, "end_mib"],
                        f"{band.end_mib} is not above the previous band's end {self.zones[i - 1].end_mib}; end_mib must increase",
                    )
            elif band.end_mib is not None:
                raise FieldError(
                    ["zones", i, "end_mib"],
                    f"{band.end_mib} is not allowed; the last band has no end_mib (it runs to the end of memory)",
                )
        page_kib = self.page_size // 1024
        for i, dev in enumerate(self.storage.devices if self.storage is not None else []):
            # A request holds whole pages, and a RAID-0 chunk too.
            if dev.max_sectors_kib < page_kib:
                raise FieldError(["storage", "devices", i, "max_sectors_kib"],
                                 f"{dev.max_sectors_kib} is not allowed; at least the page size, {page_kib} KiB")
            if dev.disks > 1 and dev.chunk_kib < page_kib:
                raise FieldError(["storage", "devices", i, "chunk_kib"],
                                 f"{dev.chunk_kib} is not allowed; a RAID-0 chunk is at least the page size, {page_kib} KiB")
        devices = self.storage.devices if self.storage is not None else []
        slots = sum(request_slots_bytes(d, self.page_size) for d in devices)
        if slots > REQUEST_SLOTS_BUDGET:
            raise FieldError(["storage", "devices"],
                             f"their request queues take {slots >> 20} MiB (3 x nr_requests slots a disk of max_sectors_kib each); "
                             f"at most {REQUEST_SLOTS_BUDGET >> 20} MiB (smaller nr_requests or max_sectors_kib)")
        swap = self.storage.swap if self.storage is not None else None
        if swap is not None and swap.size_mib * ((1 << 20) // self.page_size) > MAX_PAGES:
            raise FieldError(["storage", "swap", "size_mib"],
                             f"{swap.size_mib} is not allowed; at most {MAX_PAGES * self.page_size >> 20} MiB "
                             f"({MAX_PAGES} slots of a {self.page_size}-byte page, the engine's limit)")
        zp = self.topology.zone_pages
        if zp is not None:
            t = self.topology
            if len(zp) != t.nodes:
                raise FieldError(["topology", "zone_pages"], f"{_count(len(zp), 'list', 'lists')}, expected {t.nodes} (one per node)")
            per_mib = (1 << 20) // self.page_size
            for n, (row, mem, res) in enumerate(zip(zp, t.memory(), t.reserved())):
                if len(row) != len(self.zones):
                    raise FieldError(["topology", "zone_pages", n],
                                     f"{_count(len(row), 'entry', 'entries')}, expected {len(self.zones)} (one per [[zones]] band)")
                for j, x in enumerate(row):
                    if not _is_int(x) or x < 0:
                        raise FieldError(["topology", "zone_pages", n, j], f"{describe(x)} is not allowed; expected pages >= 0")
                if sum(row) > mem * per_mib:
                    raise FieldError(["topology", "zone_pages", n],
                                     f"{sum(row)} pages is more than node {n}'s memory_mib {mem} ({mem * per_mib} pages)")
                if res * per_mib >= sum(row):
                    raise FieldError(["topology", "reserved_mib"],
                                     f"{res} MiB reserved on node {n}, which has {sum(row)} pages in its zones; must be less")
        return self

    # Convenience accessors -------------------------------------------------
    def total_cpus(self) -> int:
        return sum(self.topology.cpus())

    def total_memory_mib(self) -> int:
        return sum(self.topology.memory())


# --------------------------------------------------------------------------- kernels


class Policy(StrictModel):
    zlc: Literal["none", "after-first-zone", "first-eligible"] = "none"
    zlc_reconsider: bool = False
    percpu_pagelists: bool = True
    # zone_batchsize and pcp->high: "6x-batch" up to 5.13, "zone-low" from 5.14 (docs/presets.md)
    pcp_sizing: Literal["6x-batch", "zone-low"] = "6x-batch"
    # where a new anonymous page starts and whether one reference activates it: "active" (to 5.8: the
    # active list, activated when met referenced) or "inactive" (5.9+: the inactive list, and a second
    # trip around it as for file pages)
    new_anon_lru: Literal["active", "inactive"] = "active"
    # CONFIG_SLAB ("slab": new slab pages on the task's node only, GFP_THISNODE, then
    # fallback_alloc) or CONFIG_SLUB ("slub", the Kconfig default: ordinary fallback)
    slab_allocator: Literal["slab", "slub"] = "slub"
    # Writeback from reclaim, seed 004's series (docs/presets.md):
    direct_fs_writeback: bool = True  # patch 1/8 sets false
    kswapd_fs_writeback: Literal["always", "high-priority", "never"] = "always"  # patch 5/8, patch 8/8
    # kswapd's balance rules: "per-zone" (3.0/3.1: every zone to its high mark, restart on progress) or
    # "node-any-zone" (4.12+, 6.1: balanced when any eligible zone meets its high mark; docs/presets.md)
    kswapd_balance: Literal["per-zone", "node-any-zone"] = "per-zone"
    # the ceiling of the boot-time min_free_kbytes: 65536 KiB to 5.6, 262144 from 5.7
    min_free_kbytes_max: Literal[65536, 262144] = 65536
    reclaim_throttle_dirty: bool = False  # patch 6/8
    reclaim_invalidate: bool = False  # patch 7/8


# The writeback and reclaim sysctls of Specification v2: name -> (default, minimum,
# maximum or None, what the value is). Defaults and bounds are those of 3.0
# (mm/page-writeback.c, mm/vmscan.c, fs/dcache.c, kernel/sysctl.c).
SYSCTL_LIMITS: dict[str, tuple[int, int, int | None, str]] = {
    "dirty_ratio": (20, 0, 100, "percent of dirtyable memory"),
    "dirty_background_ratio": (10, 0, 100, "percent of dirtyable memory"),
    "dirty_bytes": (0, 0, None, "bytes; 0 = use dirty_ratio"),
    "dirty_background_bytes": (0, 0, None, "bytes; 0 = use dirty_background_ratio"),
    "dirty_expire_centisecs": (3000, 0, 360_000_000, "centiseconds"),
    "dirty_writeback_centisecs": (500, 1, 360_000_000, "centiseconds (0, periodic writeback off, is not simulated)"),
    "swappiness": (60, 0, 100, "0 = reclaim file pages only, 100 = anonymous as readily as file"),
    "min_unmapped_ratio": (1, 0, 100, "percent of each zone"),
    "min_slab_ratio": (5, 0, 100, "percent of each zone"),
    "vfs_cache_pressure": (100, 0, 100_000, "100 = reclaim dentries and inodes at the fair rate"),
    # 5.0 on (6.1: 15000); 0, the default here, is a kernel without the boost, as every era the twin models was
    "watermark_boost_factor": (0, 0, 2_147_483_647, "1/10000 of the high watermark a fragmenting fallback may add to a zone's marks; 0 = no boost"),
}
_SYSCTL_BYTES_MAX = 2**63 - 1


class Sysctl(StrictModel):
    min_free_kbytes: Literal["auto"] | int = "auto"
    zone_reclaim_mode: Literal["auto"] | int = "auto"
    lowmem_reserve_ratio: Literal["auto"] | list[int] = "auto"
    dirty_ratio: int = SYSCTL_LIMITS["dirty_ratio"][0]
    dirty_background_ratio: int = SYSCTL_LIMITS["dirty_background_ratio"][0]
    dirty_bytes: int = SYSCTL_LIMITS["dirty_bytes"][0]
    dirty_background_bytes: int = SYSCTL_LIMITS["dirty_background_bytes"][0]
    dirty_expire_centisecs: int = SYSCTL_LIMITS["dirty_expire_centisecs"][0]
    dirty_writeback_centisecs: int = SYSCTL_LIMITS["dirty_writeback_centisecs"][0]
    swappiness: int = SYSCTL_LIMITS["swappiness"][0]
    min_unmapped_ratio: int = SYSCTL_LIMITS["min_unmapped_ratio"][0]
    min_slab_ratio: int = SYSCTL_LIMITS["min_slab_ratio"][0]
    vfs_cache_pressure: int = SYSCTL_LIMITS["vfs_cache_pressure"][0]
    watermark_boost_factor: int = SYSCTL_LIMITS["watermark_boost_factor"][0]

    @field_validator(*SYSCTL_LIMITS, mode="before")
    @classmethod
    def _limits(cls, v: Any, info: ValidationInfo) -> Any:
        _, lo, hi, what = SYSCTL_LIMITS[info.field_name]
        top = _SYSCTL_BYTES_MAX if hi is None else hi
        if _is_int(v) and lo <= v <= top:
            return v
        allowed = f"an integer {lo}..{hi}" if hi is not None else f"an integer >= {lo}"
        raise ValueError(f"{describe(v)} is not allowed; expected {allowed} ({what})")

    @field_validator("min_free_kbytes", mode="before")
    @classmethod
    def _mfk(cls, v: Any) -> Any:
        if v == "auto" and isinstance(v, str):
            return v
        if _is_int(v) and 1 <= v <= 2**32:
            return v
        raise ValueError(f'{describe(v)} is not allowed; expected "auto" or an integer number of KiB, 1 to 4294967296')

    @field_validator("zone_reclaim_mode", mode="before")
    @classmethod
    def _zrm(cls, v: Any) -> Any:
        if v == "auto" and isinstance(v, str):
            return v
        if _is_int(v) and 0 <= v <= ZONE_RECLAIM_MODE_MAX:
            return v
        raise ValueError(
            f'{describe(v)} is not allowed; expected "auto" or an integer 0..{ZONE_RECLAIM_MODE_MAX} '
            "(1 = reclaim zone, 2 = write dirty pages, 4 = swap)"
        )

    @field_validator("lowmem_reserve_ratio", mode="before")
    @classmethod
    def _lrr(cls, v: Any) -> Any:
        if v == "auto" and isinstance(v, str):
            return v
        if isinstance(v, list) and len(v) == LOWMEM_RESERVE_ENTRIES and all(_is_int(x) and 1 <= x <= INT_MAX for x in v):
            return v
        raise ValueError(
            f'{describe(v)} is not allowed; expected "auto" or a list of {LOWMEM_RESERVE_ENTRIES} integers 1..{INT_MAX} '
            f"(one per zone type below the top one: {', '.join(ZONE_NAMES[:-1])})"
        )


class Kernel(StrictModel):
    name: str
    description: str
    era: Literal["2.6.18", "3.0", "3.1", "4.11"]
    policy: Policy = Field(default_factory=Policy)
    sysctl: Sysctl = Field(default_factory=Sysctl)

    @model_validator(mode="after")
    def _combinations(self) -> "Kernel":
        if self.era == "4.11" and self.policy.zlc != "none":
            raise FieldError(
                ["policy", "zlc"],
                f"{self.policy.zlc!r} is not allowed with era '4.11'; the zonelist cache was removed in 4.4, so only 'none'",
            )
        if self.policy.zlc_reconsider and self.policy.zlc == "none":
            raise FieldError(
                ["policy", "zlc_reconsider"],
                "true is not allowed with zlc = 'none'; reconsidering needs a zonelist cache",
            )
        if self.sysctl.watermark_boost_factor and (self.era == "2.6.18" or self.policy.kswapd_balance != "node-any-zone"):
            raise FieldError(
                ["sysctl", "watermark_boost_factor"],
                f"{self.sysctl.watermark_boost_factor} is not allowed with era {self.era!r} and kswapd_balance "
                f"{self.policy.kswapd_balance!r}; the boost (5.0) needs migrate types (not 2.6.18) and the node balance "
                "of 4.12 on ('node-any-zone'), so only 0 otherwise",
            )
        return self


# --------------------------------------------------------------------------- workloads and experiments


def _positive_number(v: Any, what: str) -> Any:
    if _is_number(v) and v > 0 and v == v and v != float("inf"):
        return v
    raise ValueError(f"{describe(v)} is not allowed; {what}")


def parse_id_list(text: str) -> list[int]:
    """A kernel cpulist/nodelist (``"0-11"``, ``"0,2,4-7"``) as a list of ids, in the order written.

    Raises ValueError naming the bad part.
    """
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise ValueError(f"{part!r} is neither an id nor a range a-b") from None
        if a < 0 or b < a:
            raise ValueError(f"{part!r} is not a range a-b with 0 <= a <= b")
        if b >= MAX_CPUS:
            # No machine has more CPUs (or nodes): a larger id is a typo, and expanding it would not end.
            raise ValueError(f"{part!r} goes past {MAX_CPUS - 1}, the largest CPU or node id a machine can have")
        out.extend(range(a, b + 1))
    return out


def parse_id_option(text: str | None, option: str) -> list[int] | None:
    """A command-line id list (``--cpus``, ``--mems``), or a one-line MmtwinError naming the option."""
    if text is None:
        return None
    try:
        return parse_id_list(text)
    except ValueError as exc:
        raise MmtwinError(f"{option}: {text!r} is not allowed; {exc} (expected a list such as 0-11 or 0,2,4-7)") from None


def _id_list(v: Any, what: str) -> Any:
    """``None``, a list of integers, or a kernel list string such as ``"0-11"``."""
    if v is None:
        return v
    if isinstance(v, list) and all(_is_int(x) for x in v):
        return v
    if isinstance(v, str):
        try:
            return parse_id_list(v)
        except ValueError as exc:
            raise ValueError(f"{describe(v)} is not allowed; {exc} (expected a list of {what} or a string like \"0-11\")") from None
    raise ValueError(f"{describe(v)} is not allowed; expected a list of {what} or a string like \"0-11\"")


def _at_least(v: int, minimum: int, what: str = "") -> int:
    if v < minimum:
        raise ValueError(f"{v} is not allowed; must be >= {minimum}{what}")
    return v


class _WorkloadBase(StrictModel):
    """Validators of the fields every workload kind has last: ``cpus`` and ``mems_allowed`` (its cpuset)."""

    @field_validator("cpus", mode="before", check_fields=False)
    @classmethod
    def _cpus(cls, v: Any) -> Any:
        return _id_list(v, "CPU ids")

    @field_validator("mems_allowed", mode="before", check_fields=False)
    @classmethod
    def _mems(cls, v: Any) -> Any:
        return _id_list(v, "node ids")


class WorkloadParams(_WorkloadBase):
    """The memory hog (seed 003): ``threads`` threads, pinned one per CPU, touch ``size_gb`` GB."""

    kind: Literal["memhog"] = "memhog"
    size_gb: int | float
    threads: int
    stride: int = 4096
    passes: int = 1  # passes over the memory (usemem -r): later ones touch the pages again
    cpus: list[int] | None = None
    mems_allowed: list[int] | None = None

    @field_validator("passes")
    @classmethod
    def _passes(cls, v: int) -> int:
        if not 1 <= v <= 1000:
            raise ValueError(f"{v} is not allowed; expected 1 to 1000 passes over the memory")
        return v

    @field_validator("size_gb", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return _positive_number(v, "the size must be a number of GB (2^30 bytes) > 0")

    @field_validator("threads")
    @classmethod
    def _threads(cls, v: int) -> int:
        return _at_least(v, 1)

    @field_validator("stride")
    @classmethod
    def _stride(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"{v} is not allowed; must be a number of bytes >= 1")
        return v


MemhogParams = WorkloadParams


class FsmarkParams(_WorkloadBase):
    """fs_mark v3.3 (docs: shared mmtests.md §5.1); each field is one fs_mark flag.

    Defaults are fs_mark's own (fs_mark.h) except ``sync_method``: MMTests
    passes -S0 and only 0 is simulated (fs_mark's default is 1).
    """

    kind: Literal["fsmark"]
    threads: int = 1  # -t
    dirs: int = 1  # how many -d directories
    subdirs: int  # -D
    files_per_subdir: int  # -N
    files: int = 1000  # -n, files per thread per iteration
    iterations: int = 1  # -L
    file_bytes: int = 51200  # -s
    write_bytes: int = 16384  # -w
    sync_method: int = 0  # -S
    cpus: list[int] | None = None
    mems_allowed: list[int] | None = None

    @field_validator("threads")
    @classmethod
    def _threads(cls, v: int) -> int:
        if not 1 <= v <= FSMARK_MAX_THREADS:
            raise ValueError(f"{v} is not allowed; expected 1 to {FSMARK_MAX_THREADS} (-t, fs_mark's MAX_THREADS)")
        return v

    @field_validator("dirs")
    @classmethod
    def _dirs(cls, v: int) -> int:
        return _at_least(v, 1, " (the number of -d directories)")

    @field_validator("subdirs")
    @classmethod
    def _subdirs(cls, v: int) -> int:
        return _between(v, 2, U32_MAX, " (-D, subdirectories under each -d directory)")

    @field_validator("files_per_subdir")
    @classmethod
    def _per_subdir(cls, v: int) -> int:
        return _between(v, 1, U32_MAX, " (-N, files written to a subdirectory before moving to the next)")

    @field_validator("files")
    @classmethod
    def _files(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"{v} is not allowed; fs_mark with zero files does nothing: expected 1 to {FSMARK_MAX_FILES} (-n, files per thread per iteration)")
        if v > FSMARK_MAX_FILES:
            raise ValueError(f"{v} is not allowed; expected 1 to {FSMARK_MAX_FILES} (-n, fs_mark's MAX_FILES)")
        return v

    @field_validator("iterations")
    @classmethod
    def _iterations(cls, v: int) -> int:
        return _between(v, 1, FSMARK_MAX_ITERATIONS, " (-L, iterations)")

    @field_validator("file_bytes")
    @classmethod
    def _file_bytes(cls, v: int) -> int:
        if not 0 <= v < 2**32:
            raise ValueError(f"{v} is not allowed; expected 0 to 4294967295 bytes (-s; 0 = empty files)")
        return v

    @field_validator("write_bytes")
    @classmethod
    def _write_bytes(cls, v: int) -> int:
        if not 1 <= v <= FSMARK_MAX_IO:
            raise ValueError(f"{v} is not allowed; expected 1 to {FSMARK_MAX_IO} bytes (-w, fs_mark's MAX_IO_BUFFER_SIZE)")
        return v

    @field_validator("sync_method")
    @classmethod
    def _sync(cls, v: int) -> int:
        if not 0 <= v <= 6:
            raise ValueError(f"{v} is not allowed; fs_mark's sync methods are 0..6 (-S)")
        if v != 0:
            raise ValueError(f"{v} is not simulated yet; only 0 (-S0, no fsync or sync, as MMTests runs it) is")
        return v

    @model_validator(mode="after")
    def _threads_per_dir(self) -> "FsmarkParams":
        if self.threads % self.dirs:
            raise FieldError(
                ["threads"],
                f"{self.threads} is not a multiple of dirs = {self.dirs}; fs_mark runs the same number of threads in each -d directory",
            )
        return self


class LargeddParams(_WorkloadBase):
    """MMTests 2011 largedd (mmtests.md §5.2): download a tarfile, dd it ``copies`` times, delete them."""

    kind: Literal["largedd"]
    tar_mib: int | float
    copies: int
    dd_kib: int | float = 1024
    threads: int = 1
    download_mib_s: int
    cpus: list[int] | None = None
    mems_allowed: list[int] | None = None

    @field_validator("tar_mib", mode="before")
    @classmethod
    def _tar(cls, v: Any) -> Any:
        return _positive_number(v, "expected the tarfile's size in MiB > 0")

    @field_validator("copies")
    @classmethod
    def _copies(cls, v: int) -> int:
        return _between(v, 1, U32_MAX, " (dd copies of the tarfile)")

    @field_validator("dd_kib", mode="before")
    @classmethod
    def _dd(cls, v: Any) -> Any:
        _positive_number(v, "expected dd's block size in KiB > 0 (bs=)")
        if (Fraction(repr(v)) if isinstance(v, float) else Fraction(v)) * 1024 % 1:
            raise ValueError(f"{describe(v)} is not allowed; dd's block size must be a whole number of bytes (e.g. 0.5 = 512 bytes)")
        return v

    @field_validator("threads")
    @classmethod
    def _threads(cls, v: int) -> int:
        if v != 1:
            raise ValueError(f"{v} is not simulated; 1 (LARGECOPY_THREADS = 1: one dd at a time, as the 2011 config ran it)")
        return v

    @field_validator("download_mib_s", mode="before")
    @classmethod
    def _download(cls, v: Any) -> Any:
        if _is_int(v) and 1 <= v <= 1_000_000:
            return v
        raise ValueError(f"{describe(v)} is not allowed; expected the download rate as a whole number of MiB/s, 1 to 1000000")


class MmapstreamParams(_WorkloadBase):
    """MMTests' micro benchmark of 2011 (mmtests.md §5.3): stage 1, the
    streaming mapped writer (vmscan-file-mmap-write: each process writes its
    share of `size_mib` through a shared file mapping once, page by page);
    with `mixed_size_mib` > 0, stage 2 (vmscan-mixed-mmap-write):
    `mixed_threads` processes on shared file mappings making 2 x `mixed_iter`
    passes and as many on anonymous memory making `mixed_iter` passes,
    `mixed_anon_percent` of `mixed_size_mib` anonymous."""

    kind: Literal["mmapstream"]
    size_mib: int | float
    threads: int = 1
    mixed_size_mib: int | float = 0
    mixed_threads: int = 1
    mixed_anon_percent: int = 30
    mixed_iter: int = 5
    cpus: list[int] | None = None
    mems_allowed: list[int] | None = None

    @field_validator("size_mib", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return _positive_number(v, "expected the mapping's total size in MiB > 0")

    @field_validator("mixed_size_mib", mode="before")
    @classmethod
    def _mixed_size(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0:
            return v
        return _positive_number(v, "expected stage 2's total size in MiB, 0 for no stage 2")

    @field_validator("threads", "mixed_threads")
    @classmethod
    def _threads(cls, v: int) -> int:
        if not 1 <= v <= 1024:
            raise ValueError(f"{v} is not allowed; expected 1 to 1024 processes")
        return v

    @field_validator("mixed_anon_percent")
    @classmethod
    def _anon_percent(cls, v: int) -> int:
        if not 0 <= v <= 100:
            raise ValueError(f"{v} is not allowed; expected a percentage, 0 to 100")
        return v

    @field_validator("mixed_iter")
    @classmethod
    def _iter(cls, v: int) -> int:
        if not 1 <= v <= 1000:
            raise ValueError(f"{v} is not allowed; expected 1 to 1000 passes")
        return v


AnyWorkload = Union[WorkloadParams, FsmarkParams, LargeddParams, MmapstreamParams]
Workload = Annotated[AnyWorkload, Field(discriminator="kind")]
WORKLOAD_MODELS: dict[str, type[StrictModel]] = {
    "memhog": WorkloadParams,
    "fsmark": FsmarkParams,
    "largedd": LargeddParams,
    "mmapstream": MmapstreamParams,
}


FSMARK_OPTIONS = "vhkFr:S:N:D:d:l:L:n:p:s:t:w:"  # fs_mark.c process_args() getopt string
_FSMARK_FIELDS = {"-D": "subdirs", "-N": "files_per_subdir", "-n": "files", "-L": "iterations",
                  "-s": "file_bytes", "-t": "threads", "-S": "sync_method", "-w": "write_bytes"}


def parse_set_value(text: str) -> Any:
    """A ``--set KEY=VALUE`` value: a TOML value (``20``, ``0.5``, ``[0, 1]``, ``"x"``), else the bare text."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_fsmark_command(text: str, where: str = "--fsmark") -> dict[str, Any]:
    """fs_mark's command line (``./fs_mark -d DIR -D 100 -N 5000 -n 208 -L 35 -t 24 -S0 -s 524288``) as fsmark fields.

    Parsed with fs_mark's own getopt string; each -d counts one directory.
    ``-l``, ``-p``, ``-r`` and ``-v`` do not change what is simulated and are
    ignored. Values are checked by the fsmark model afterwards.
    """
    import getopt
    import shlex

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise MmtwinError(f"{where}: {text!r} is not a command line: {exc}") from None
    if words and words[0].rsplit("/", 1)[-1] == "fs_mark":
        words = words[1:]
    try:
        opts, rest = getopt.getopt(words, FSMARK_OPTIONS)
    except getopt.GetoptError as exc:
        raise MmtwinError(f"{where}: {exc}; fs_mark's options are -d -D -N -n -L -t -S -s -w -k -l -p -r -v") from None
    if rest:
        raise MmtwinError(f"{where}: {rest[0]!r} is not an fs_mark option; fs_mark takes no operands")
    out: dict[str, Any] = {}
    dirs = 0
    keep = False
    for flag, value in opts:
        if flag == "-d":
            dirs += 1
        elif flag in _FSMARK_FIELDS:
            try:
                out[_FSMARK_FIELDS[flag]] = int(value)
            except ValueError:
                raise MmtwinError(f"{where}: {flag} {value!r} is not allowed; expected an integer") from None
            keep = keep or flag == "-L"
        elif flag == "-k":
            keep = True
        elif flag == "-F":
            raise MmtwinError(f"{where}: -F (run until the filesystem is full) is not simulated")
        elif flag == "-h":
            raise MmtwinError(f"{where}: -h prints fs_mark's usage; it runs nothing")
    if dirs == 0:
        raise MmtwinError(f"{where}: no -d; fs_mark needs at least one directory")
    if "subdirs" in out and "files_per_subdir" not in out:
        raise MmtwinError(f"{where}: -D without -N (subdirectories chosen by time) is not simulated; give -N as well")
    if not keep:
        raise MmtwinError(f"{where}: without -L or -k fs_mark unlinks its files at the end, which is not simulated; add -k")
    out["dirs"] = dirs
    # fs_mark runs at least one thread per directory
    out["threads"] = max(out.get("threads", 1), dirs)
    return out


class _WorkloadTable(StrictModel):
    workload: Workload


def validate_workload(data: dict[str, Any], where: str) -> AnyWorkload:
    """Validate one workload table of any kind; errors name the field without a ``workload.`` prefix."""
    return validate(_WorkloadTable, {"workload": data}, where, strip=1).workload


class ExperimentWorkload(StrictModel):
    kind: Literal["memhog"] = "memhog"
    stride: int = 4096
    mems_allowed: list[int] | None = None

    @field_validator("stride")
    @classmethod
    def _stride(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"{v} is not allowed; must be a number of bytes >= 1")
        return v

    @field_validator("mems_allowed", mode="before")
    @classmethod
    def _mems(cls, v: Any) -> Any:
        return _id_list(v, "node ids")


class Matrix(StrictModel):
    size_gb: list[int | float]
    threads: list[int]

    @field_validator("size_gb", mode="before")
    @classmethod
    def _sizes(cls, v: Any) -> Any:
        if not isinstance(v, list) or not v:
            raise ValueError(f"{describe(v)} is not allowed; expected a non-empty list of sizes in GB")
        for x in v:
            _positive_number(x, f"sizes are numbers of GB > 0 (got {describe(x)} in {describe(v)})")
        if len(set(v)) != len(v):
            raise ValueError(f"{describe(v)} has duplicates; each size at most once")
        return v

    @field_validator("threads", mode="before")
    @classmethod
    def _threads(cls, v: Any) -> Any:
        if not isinstance(v, list) or not v or not all(_is_int(x) and x >= 1 for x in v):
            raise ValueError(f"{describe(v)} is not allowed; expected a non-empty list of integers >= 1")
        if len(set(v)) != len(v):
            raise ValueError(f"{describe(v)} has duplicates; each thread count at most once")
        return v


class Run(StrictModel):
    """One named workload of a runs-shaped experiment; every kernel runs it."""

    name: str
    description: str = ""
    workload: Workload

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v or not all(c.isalnum() or c in "-_." for c in v):
            raise ValueError(f"{describe(v)} is not allowed; expected a name of letters, digits, '-', '_' and '.'")
        return v


class Experiment(StrictModel):
    name: str
    description: str
    seed_document: str | None = None
    machine: str
    kernels: list[str]
    seed: int = 1
    # Sysctls the tester set for every kernel (seed 004: "Dirty ratio was
    # tuned to 40%"); only the keys given override each kernel profile's.
    sysctl: Sysctl | None = None
    workload: ExperimentWorkload | None = None  # matrix shape only
    matrix: Matrix | None = None
    runs: list[Run] | None = None

    @field_validator("kernels")
    @classmethod
    def _kernels(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("[] is not allowed; list at least one kernel (the first is the baseline)")
        if len(set(v)) != len(v):
            raise ValueError(f"{describe(v)} has duplicates; each kernel at most once")
        return v

    @field_validator("seed")
    @classmethod
    def _seed(cls, v: int) -> int:
        if not 0 <= v < 2**64:
            raise ValueError(f"{v} is not allowed; expected 0 <= seed < 2^64")
        return v

    @model_validator(mode="after")
    def _shape(self) -> "Experiment":
        if self.matrix is None and self.runs is None:
            raise FieldError(
                ["matrix"],
                "missing; an experiment has either a [matrix] (memory-hog sizes x threads) or [[runs]] (named workloads)",
            )
        if self.matrix is not None and self.runs is not None:
            raise FieldError(["runs"], "not allowed together with [matrix]; an experiment has one or the other")
        if self.runs is not None:
            if self.workload is not None:
                raise FieldError(["workload"], "not allowed with [[runs]]; each run has its own [runs.workload] table")
            if not self.runs:
                raise FieldError(["runs"], "[] is not allowed; list at least one [[runs]] table")
            names = [r.name for r in self.runs]
            for i, name in enumerate(names):
                if name in names[:i]:
                    raise FieldError(["runs", i, "name"], f"{name!r} is used twice; run names must be unique")
        return self

    @property
    def matrix_workload(self) -> ExperimentWorkload:
        return self.workload if self.workload is not None else ExperimentWorkload()

    def run_named(self, name: str) -> Run:
        runs = self.runs or []
        for r in runs:
            if r.name == name:
                return r
        listing = ", ".join(r.name for r in runs) if runs else "none (this experiment is a [matrix])"
        raise MmtwinError(f"--run: unknown run {name!r} in experiment {self.name}; runs: {listing}")


# --------------------------------------------------------------------------- error formatting

_TYPE_WORDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}


def _unwrap(annotation: Any) -> list[Any]:
    """The model classes reachable from an annotation (through list, Optional, unions)."""
    origin = typing.get_origin(annotation)
    if origin is None:
        return [annotation]
    out: list[Any] = []
    for arg in typing.get_args(annotation):
        out.extend(_unwrap(arg))
    if origin in (Union, types.UnionType, list):
        return out
    return out


def _models(annotation: Any) -> list[type[BaseModel]]:
    return [c for c in _unwrap(annotation) if isinstance(c, type) and issubclass(c, BaseModel)]


def _kind_tag(model: type[BaseModel]) -> str | None:
    """The ``kind`` literal of a discriminated-union member, if it has one."""
    field = model.model_fields.get("kind")
    if field is None or typing.get_origin(field.annotation) is not Literal:
        return None
    args = typing.get_args(field.annotation)
    return args[0] if len(args) == 1 else None


def _walk(model: type[BaseModel], loc: Sequence[str | int]) -> tuple[list[str | int], list[type[BaseModel]]]:
    """A pydantic error location without discriminated-union tags, and the models it can end in.

    Pydantic puts the tag of a tagged union into the location
    (``runs[0].workload.fsmark.files``); the user wrote ``runs[0].workload.files``.
    """
    shown: list[str | int] = []
    candidates: list[type[BaseModel]] = [model]
    for part in loc:
        if isinstance(part, int):
            shown.append(part)
            continue
        if len(candidates) > 1:
            tagged = {_kind_tag(c): c for c in candidates}
            if part in tagged:
                candidates = [tagged[part]]
                continue
        shown.append(part)
        field = candidates[0].model_fields.get(part) if candidates else None
        candidates = _models(field.annotation) if field is not None else []
    return shown, candidates


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    _, candidates = _walk(model, loc)
    return candidates[0] if len(candidates) == 1 else None


def _either(quoted: str) -> str:
    """``"'a', 'b', 'c'"`` -> ``"'a', 'b' or 'c'"`` (pydantic's literal_error style)."""
    head, sep, last = quoted.rpartition(", ")
    return f"{head} or {last}" if sep else quoted


def format_path(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def format_validation_error(exc: ValidationError, model: type[BaseModel], where: str, strip: int = 0) -> str:
    """One line: ``<where>: <field path>: <value and what is allowed>``.

    ``strip`` drops that many leading parts of the field path (a wrapper table).
    """
    errors = exc.errors(include_url=False)
    # An unknown key usually explains a "missing" one (a typo): report it first.
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    raw: list[str | int] = [p for p in first["loc"] if isinstance(p, (str, int))]
    loc, candidates = _walk(model, raw)
    kind = first["type"]
    value = first.get("input")
    ctx = first.get("ctx") or {}
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = ", ".join(repr(t) for t in (_kind_tag(c) for c in candidates) if t is not None)
        loc = loc + [str(ctx.get("discriminator", "kind")).strip("'")]
        if kind == "union_tag_invalid":
            detail = f"{describe(ctx.get('tag'))} is not allowed; expected {_either(tags)}"
        else:
            detail = f"missing; this key is required: {_either(tags)}"
    elif kind == "value_error":
        err = ctx.get("error")
        if isinstance(err, FieldError):
            loc = loc + list(err.path)
            detail = err.message
        else:
            detail = str(err) if err is not None else first["msg"]
    elif kind == "extra_forbidden":
        parent = _model_at(model, raw[:-1])
        allowed = ", ".join(parent.model_fields) if parent else "?"
        detail = f"unknown key; allowed keys here: {allowed}"
    elif kind == "missing":
        detail = "missing; this key is required"
    elif kind == "literal_error":
        detail = f"{describe(value)} is not allowed; expected {ctx.get('expected')}"
    elif kind in _TYPE_WORDS:
        detail = f"{describe(value)} is not allowed; expected {_TYPE_WORDS[kind]}"
    else:
        detail = f"{describe(value)}: {first['msg']}"
    path = format_path(loc[strip:])
    more = f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return " ".join(f"{where}: {path + ': ' if path else ''}{detail}{more}".split())


def validate(model: type[BaseModel], data: Any, where: str, strip: int = 0) -> Any:
    """Validate ``data`` against ``model``; raise MmtwinError with a one-line message."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MmtwinError(format_validation_error(exc, model, where, strip)) from None


# --------------------------------------------------------------------------- loading
#
# Where presets and experiments are looked up (docs/cli.md, "Where presets are
# looked up"). The first directory holding NAME.toml wins; listings are the
# union of the directories, sorted by name.
#
#   presets (machines/, kernels/)      experiments
#   $MMTWIN_PRESETS, alone if set       $MMTWIN_EXPERIMENTS, alone if set
#   otherwise                           otherwise
#     $XDG_CONFIG_HOME/mmtwin/presets     $XDG_CONFIG_HOME/mmtwin/experiments
#       (default ~/.config/...)             (default ~/.config/...)
#     mmtwin/data/presets (shipped)       mmtwin/data/experiments (shipped)
#
# The shipped files are package data, read through importlib.resources, so an
# installed wheel finds them wherever it is installed.

PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT = PACKAGE_DIR.parents[1]
# The source checkout this module runs from (an editable install or PYTHONPATH=python), else None.
REPO_ROOT: Path | None = (
    _CHECKOUT if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "crates").is_dir() else None
)


def shipped_data() -> Traversable:
    """The package's data directory: ``presets/`` and ``experiments/`` as shipped."""
    return importlib.resources.files("mmtwin.data")


def user_config_dir() -> Path | None:
    """``$XDG_CONFIG_HOME/mmtwin``, or ``~/.config/mmtwin`` (None without a home directory)."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    if xdg and Path(xdg).is_absolute():  # the XDG spec: a relative path is invalid and ignored
        return Path(xdg) / "mmtwin"
    try:
        return Path.home() / ".config" / "mmtwin"
    except RuntimeError:
        return None


def _search_path(env_var: str, sub: str) -> list[Traversable]:
    env = os.environ.get(env_var)
    if env:
        return [Path(env)]
    user = user_config_dir()
    return ([user / sub] if user is not None else []) + [shipped_data() / sub]


def presets_dirs() -> list[Traversable]:
    """Directories holding ``machines/`` and ``kernels/``, searched in this order."""
    return _search_path("MMTWIN_PRESETS", "presets")


def experiments_dirs() -> list[Traversable]:
    """Directories of experiment files, searched in this order."""
    return _search_path("MMTWIN_EXPERIMENTS", "experiments")


def machine_dirs() -> list[Traversable]:
    return [d / "machines" for d in presets_dirs()]


def kernel_dirs() -> list[Traversable]:
    return [d / "kernels" for d in presets_dirs()]


def display_path(path: Traversable) -> str:
    """A file or directory as shown in messages.

    Relative to the source checkout when inside it (``python/mmtwin/data/presets/...``),
    the shipped data of an installed package relative to its site directory
    (``mmtwin/data/presets/...``), other files relative to the cwd when inside it,
    else as given.
    """
    if not isinstance(path, Path):  # package data that is not on a filesystem (a zip)
        return str(path)
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        return str(path)
    if REPO_ROOT is not None and resolved.is_relative_to(REPO_ROOT):
        return str(resolved.relative_to(REPO_ROOT))
    if resolved.is_relative_to(PACKAGE_DIR):
        return str(resolved.relative_to(PACKAGE_DIR.parent))
    cwd = Path.cwd().resolve()
    if resolved.is_relative_to(cwd):
        return str(resolved.relative_to(cwd))
    return str(path)


def describe_dirs(dirs: Sequence[Traversable]) -> str:
    """``a or b``: the directories of a search path, as shown in messages."""
    return " or ".join(display_path(d) for d in dirs)


# Preset and experiment files are a few KiB; anything this large is not one.
MAX_TOML_BYTES = 16 * 2**20


def read_toml(path: Traversable) -> dict[str, Any]:
    """Parse one preset or experiment file. Only a regular file of at most
    MAX_TOML_BYTES is read (a FIFO would block, a device never end)."""
    where = display_path(path)
    try:
        if isinstance(path, Path):
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise MmtwinError(f"{where}: not a regular file; a preset or experiment is a .toml file")
            if st.st_size > MAX_TOML_BYTES:
                raise MmtwinError(f"{where}: {st.st_size} bytes is not allowed; a preset or experiment file is at most {MAX_TOML_BYTES} bytes")
        with path.open("rb") as fh:
            data = fh.read(MAX_TOML_BYTES + 1)
        if len(data) > MAX_TOML_BYTES:
            raise MmtwinError(f"{where}: more than {MAX_TOML_BYTES} bytes is not allowed for a preset or experiment file")
        if data.startswith(b"\xef\xbb\xbf"):
            raise MmtwinError(f"{where}: starts with a byte-order mark (EF BB BF); save it as UTF-8 without one")
        return tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise MmtwinError(f"{where}: no such file") from None
    except UnicodeDecodeError as exc:
        raise MmtwinError(f"{where}: not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}; TOML files are UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise MmtwinError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:
        raise MmtwinError(f"{where}: invalid TOML: arrays or tables nested too deeply to parse") from None
    except OSError as exc:
        raise MmtwinError(f"{where}: cannot read: {exc.strerror}") from None


def _names_in(directory: Traversable) -> list[str]:
    try:
        if not directory.is_dir():
            return []
        return [p.name[: -len(".toml")] for p in directory.iterdir() if p.name.endswith(".toml") and p.is_file()]
    except OSError:
        return []


def _available(dirs: Sequence[Traversable]) -> list[str]:
    return sorted({name for d in dirs for name in _names_in(d)})


def _looks_like_path(name: str) -> bool:
    return name.endswith(".toml") or os.sep in name or "/" in name


def find_file(kind: str, name: str, dirs: Sequence[Traversable]) -> Traversable:
    """The TOML file for a preset name (the first of ``dirs`` that has it), or ``name`` itself when it is a path."""
    if _looks_like_path(name):
        path = Path(name)
        if not path.is_file():
            if path.exists():
                raise MmtwinError(f"{name}: not a regular file; {'an' if kind[0] in 'aeiou' else 'a'} {kind} is a .toml file")
            raise MmtwinError(f"{name}: no such {kind} file")
        return path
    for directory in dirs:
        path = directory / f"{name}.toml"
        if path.is_file():
            return path
    names = _available(dirs)
    listing = ", ".join(names) if names else f"none (no *.toml in {describe_dirs(dirs)})"
    raise MmtwinError(f"unknown {kind} {name!r}; available: {listing}")


def load_file(model: type[BaseModel], path: Traversable) -> Any:
    """Validate one TOML file against ``model``; its ``name`` must equal the file stem."""
    where = display_path(path)
    obj = validate(model, read_toml(path), where)
    stem = Path(path.name).stem
    if obj.name != stem:
        raise MmtwinError(f"{where}: name: {obj.name!r} is not allowed; it must equal the file stem {stem!r}")
    return obj


def _load(model: type[BaseModel], kind: str, name: str, dirs: Sequence[Traversable]) -> Any:
    return load_file(model, find_file(kind, name, dirs))


def load_machine(name_or_path: str) -> Machine:
    return _load(Machine, "machine preset", name_or_path, machine_dirs())


def load_kernel(name_or_path: str) -> Kernel:
    return _load(Kernel, "kernel profile", name_or_path, kernel_dirs())


def load_experiment(name_or_path: str) -> Experiment:
    return _load(Experiment, "experiment", name_or_path, experiments_dirs())


def machine_names() -> list[str]:
    return _available(machine_dirs())


def kernel_names() -> list[str]:
    return _available(kernel_dirs())


def experiment_names() -> list[str]:
    return _available(experiments_dirs())


def experiment_file(name_or_path: str) -> Traversable:
    return find_file("experiment", name_or_path, experiments_dirs())


def load_experiment_parts(exp: Experiment, where: str) -> tuple[Machine, list[Kernel]]:
    """Load the machine and kernels an experiment names, prefixing errors with the file."""
    try:
        machine = load_machine(exp.machine)
    except MmtwinError as exc:
        raise MmtwinError(f"{where}: machine: {exc.message}") from None
    kernels = []
    for i, name in enumerate(exp.kernels):
        try:
            kernels.append(load_kernel(name))
        except MmtwinError as exc:
            raise MmtwinError(f"{where}: kernels[{i}]: {exc.message}") from None
    return machine, kernels
