"""`mmtwin oracle capture`: a machine preset carrying a real kernel's zone layout."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Optional

from mmtwin.errors import MmtwinError

PAGE = 4096
PAGES_PER_MIB = 2**20 // PAGE
# QEMU's "pc" machine (i440fx) puts RAM at and above 3.5 GiB behind a PCI hole: guest RAM below
# 4 GiB ends at 3 GiB and the rest is mapped from 4 GiB (hw/i386/pc_piix.c, QEMU 7.2).
PC_LOWMEM_LIMIT_MIB = 3584
PC_LOWMEM_MIB = 3072


def kernel_hz(release: str) -> Optional[int]:
    """CONFIG_HZ of the guest kernel from /boot/config-<release>, when that file is there."""
    try:
        text = Path(os.environ.get("MMTWIN_ORACLE_BOOT", "/boot"), f"config-{release}").read_text()
    except OSError:
        return None
    m = re.search(r"^CONFIG_HZ=(\d+)$", text, re.M)
    return int(m.group(1)) if m else None


def check_out(path: Path) -> Path:
    if path.suffix != ".toml":
        raise MmtwinError(f"--out: {str(path)!r} is not allowed; a machine preset file ends in .toml")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", path.stem):
        raise MmtwinError(
            f"--out: {path.name!r} is not allowed; the file stem becomes the preset's name: letters, digits, . _ -"
        )
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise MmtwinError(f"--out: directory {str(parent)!r} does not exist")
    from mmtwin.results import check_writable

    check_writable(parent, "--out")
    if path.exists() and not path.is_file():
        raise MmtwinError(f"--out: {str(path)!r} exists and is not a regular file")
    return path


def _toml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def preset_toml(name: str, machine: Any, doc: dict[str, Any]) -> str:
    """The TOML text of a machine preset for the captured guest. `doc` is oracle_run's result without workload."""
    g, k = doc["guest"], doc["kernel"]
    zones = doc["snapshots"]["before"]["zoneinfo"]
    nodes = g["nodes"]
    memory = g["memory_mib"]
    managed = [sum(z.get("managed", 0) for z in zones if z["node"] == n) for n in range(nodes)]
    present = [sum(z.get("present", 0) for z in zones if z["node"] == n) for n in range(nodes)]
    spanned = [sum(z.get("spanned", 0) for z in zones if z["node"] == n) for n in range(nodes)]
    reserved_pages = [memory[n] * PAGES_PER_MIB - managed[n] for n in range(nodes)]
    bands = ("DMA", "DMA32", "Normal")
    zone_pages = [[sum(z.get("managed", 0) for z in zones if z["node"] == n and z["zone"] == b) for b in bands]
                  for n in range(nodes)]
    free = [sum(z.get("free", 0) for z in zones if z["node"] == n and z["zone"] in bands) for n in range(nodes)]
    # In use at boot among the managed pages (kernel, initramfs, early allocations), whole MiB, rounded down.
    in_use = [max(0, sum(zone_pages[n]) - free[n]) for n in range(nodes)]
    reserved = [p // PAGES_PER_MIB for p in in_use]
    cpus = [len(node["cpus"]) for node in k["nodes"]] or g["cpus_per_node"]
    distance = [node["distance"] for node in k["nodes"]] or g["distance"]
    hz = kernel_hz(k["release"])
    hole = sum(memory) >= PC_LOWMEM_LIMIT_MIB
    release = k["release"]
    wm = "\n".join(
        f"  node {z['node']} {z['zone']:<7} start_pfn {z.get('start_pfn', '-'):>8}  spanned {z['spanned']:>8}  "
        f"present {z['present']:>8}  managed {z['managed']:>8}  min {z['min']:>6}  low {z['low']:>6}  "
        f"high {z['high']:>6}  protection ({', '.join(map(str, z['protection']))})"
        for z in zones if z.get("present")
    )
    empty = sorted({z["zone"] for z in zones} - {z["zone"] for z in zones if z.get("present")})
    sysctl = ", ".join(f"{key} = {v}" for key, v in k.get("sysctl", {}).items())
    source = f"""Captured by `mmtwin oracle capture -m {machine.name}` from a real Linux {release} kernel
booted under QEMU ({doc['accel']}) with preset {machine.name}'s NUMA topology scaled to this host:
{nodes} nodes, {sum(memory)} MiB ({' + '.join(map(str, memory))}), CPUs per node {cpus}, distances as read
back from /sys/devices/system/node/node*/distance. Kernel command line: {k['cmdline']}.

What the kernel reported in /proc/zoneinfo at boot (pages of 4 KiB; populated zones):
{wm}
Empty zones the kernel also lists: {', '.join(empty) or 'none'}.
Sysctls at boot: {sysctl}.

How the preset expresses it:
- memory_mib: each node's RAM as QEMU was given it (memory-backend-ram size);
  the kernel spans {spanned} pages per node and sees {present} present.
- zone_pages: per node, the pages of each band (DMA, DMA32, NORMAL) the
  kernel manages, exactly; the twin's zones are these, so its watermarks
  come out as the kernel's for the same min_free_kbytes. RAM the kernel never
  gave the page allocator (memory_mib x 256 - managed: {reserved_pages} pages)
  is simply not there.
- reserved_mib: per node, the managed pages in use when the dump was taken
  (managed - free: {in_use} pages), in whole MiB rounded down.
- pci_hole_mib: {'[3072, 4096]: QEMU pc puts RAM above 3 GiB behind the PCI hole when the guest has 3.5 GiB or more' if hole else 'none: the guest has less than 3.5 GiB, all below the PCI hole'}.
- zones: the x86-64 bands DMA < 16 MiB, DMA32 < 4096 MiB, NORMAL above.
- hz = {hz if hz else 250}: {'CONFIG_HZ of /boot/config-' + release if hz else 'NOT read (no /boot/config-' + release + '); the x86-64 default'}.
- max_order = 11: MAX_ORDER of Linux 6.1 on x86-64.

NOT expressible in a machine preset (so not carried here; the twin computes
its own from the kernel profile):
- which zone the pages in use at boot come out of (the preset has one
  reserved_mib per node);
- the firmware holes inside the DMA zone (present < spanned: page 0 and
  640 KiB-1 MiB) and the zones' start_pfn;
- the watermarks (min/low/high) and the protection (lowmem_reserve) arrays:
  they follow from min_free_kbytes, watermark_scale_factor and
  lowmem_reserve_ratio, which belong to a kernel profile, not a machine;
- the empty Movable and Device zones of 6.1.

[cost] is copied from preset {machine.name}: NOT measured in the guest (a
virtual machine's times are not the hardware's). No [storage]: the guest has
no block device.
"""
    lines = [
        f"name = {_toml_str(name)}",
        f"description = {_toml_str(f'{machine.name} topology as Linux {release} laid it out under QEMU: {nodes} nodes, {sum(memory)} MiB (captured by mmtwin oracle)')}",
        "source = '''",
        source.rstrip("\n").replace("'''", "'' '"),
        "'''",
        'arch = "x86_64"',
        "page_size = 4096",
        "cache_line = 64",
        f"hz = {hz if hz else 250}",
        "max_order = 11",
        "",
        "[topology]",
        f"nodes = {nodes}",
        f"cpus_per_node = [{', '.join(map(str, cpus))}]",
        f"memory_mib = [{', '.join(map(str, memory))}]",
        f"# managed pages per node: {managed}",
        f"reserved_mib = [{', '.join(map(str, reserved))}]",
        "# pages per zone band (DMA, DMA32, NORMAL) as the kernel manages them",
        f"zone_pages = [{', '.join('[' + ', '.join(map(str, row)) + ']' for row in zone_pages)}]",
    ]
    if hole:
        lines.append(f"pci_hole_mib = [{PC_LOWMEM_MIB}, 4096]")
    lines.append("distance = [")
    lines += [f"  [{', '.join(map(str, row))}]," for row in distance]
    lines.append("]")
    lines += [
        "",
        "# Zone bands of x86-64 Linux 6.1 (Movable and Device are empty in the guest and not expressible).",
        "[[zones]]", 'name = "DMA"', "end_mib = 16",
        "[[zones]]", 'name = "DMA32"', "end_mib = 4096",
        "[[zones]]", 'name = "NORMAL"',
        "",
        f"# Copied from preset {machine.name}; NOT measured.",
        "[cost]",
    ]
    for key, value in machine.cost.model_dump(exclude_unset=True).items():
        if value is not None:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def write_preset(path: Path, text: str) -> None:
    """Write the preset, checked first: it is loaded from a scratch directory beside the target (same file
    name, so its name still equals the stem) and only then moved over the target."""
    import shutil
    import tempfile

    from mmtwin.config import load_machine

    scratch = Path(tempfile.mkdtemp(prefix=f".{path.stem}-", dir=path.parent))
    try:
        tmp = scratch / path.name
        tmp.write_text(text)
        try:
            load_machine(str(tmp))
        except MmtwinError as exc:
            raise MmtwinError(f"oracle capture: the preset for {path} does not load (an mmtwin bug), "
                              f"nothing written: {exc.message}") from None
        os.replace(tmp, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
