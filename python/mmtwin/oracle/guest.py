"""Booting a real Linux kernel under QEMU with a machine preset's NUMA topology.

`guest_topology` turns a preset into what fits this host (memory scaled,
CPUs capped); `boot` builds the QEMU command line, runs it with a timeout,
and returns the guest's serial output split into its marked sections.
"""

from __future__ import annotations

import glob
import math
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from mmtwin.errors import MmtwinError
from mmtwin.oracle import initramfs

QEMU = "qemu-system-x86_64"
MIN_NODE_MIB = 64          # less and a 6.1 guest node is mostly its own struct pages
MIN_GUEST_MIB = 256        # the kernel, its initramfs copy and a little room
DEFAULT_GUEST_MIB = 2048   # the default guest size when neither --mem-mib nor --scale is given
DEFAULT_MAX_CPUS = 8
QEMU_MAX_NODES = 128       # QEMU's MAX_NODES
NODE_ALIGN_MIB = 2         # node sizes are rounded down to whole 2 MiB (a huge page)
# The guest's kernel command line: serial console, no reboot loop, quiet,
# no transparent huge pages (the twin has none: a hog's pages are 4 KiB each) and no
# automatic NUMA balancing (it migrates pages after the fact; the twin does not),
# and no boot-time crypto self-tests (cryptomgr's test threads have hung a TCG
# guest with 8 vCPUs on a 2-core host in soft lockups past the timeout; they
# touch nothing the comparison measures).
KERNEL_ARGS = "console=ttyS0 panic=-1 quiet transparent_hugepage=never numa_balancing=disable cryptomgr.notests"


def cache_dir() -> Path:
    """Where every file the oracle makes lives: $XDG_CACHE_HOME/mmtwin/oracle (default ~/.cache/mmtwin/oracle)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mmtwin" / "oracle"


@dataclass(frozen=True)
class GuestTopology:
    machine: str
    nodes: int
    cpus: list[int]             # vCPUs per node in the guest
    preset_cpus: list[int]      # CPUs per node in the preset
    memory_mib: list[int]       # per node in the guest
    preset_memory_mib: list[int]
    distance: list[list[int]]
    max_cpus: int

    @property
    def total_mib(self) -> int:
        return sum(self.memory_mib)

    @property
    def total_cpus(self) -> int:
        return sum(self.cpus)

    def cpu_ids(self, node: int) -> list[int]:
        first = sum(self.cpus[:node])
        return list(range(first, first + self.cpus[node]))

    def cut_note(self) -> Optional[str]:
        """'CPUs cut ...' when the guest has fewer CPUs than the preset, else None."""
        if self.cpus == self.preset_cpus:
            return None
        cuts = ", ".join(
            f"node {n} {p} -> {c}" for n, (p, c) in enumerate(zip(self.preset_cpus, self.cpus)) if p != c
        )
        return f"CPUs cut to fit --max-cpus {self.max_cpus}: {cuts}"


def _cap_cpus(cpus: list[int], limit: int) -> list[int]:
    """Give each node one CPU in turn (node order) until `limit` or the preset's count is reached."""
    if sum(cpus) <= limit:
        return list(cpus)
    out = [0] * len(cpus)
    left = limit
    while left > 0:
        progressed = False
        for n, want in enumerate(cpus):
            if left and out[n] < want:
                out[n] += 1
                left -= 1
                progressed = True
        if not progressed:
            break
    return out


def guest_topology(machine: Any, mem_mib: Optional[int] = None, scale: Optional[float] = None,
                   max_cpus: int = DEFAULT_MAX_CPUS) -> GuestTopology:
    """The guest for `machine` (a validated mmtwin.config.Machine) scaled to fit this host."""
    if machine.arch != "x86_64":
        raise MmtwinError(
            f"--machine: {machine.name!r} is an {machine.arch} machine; the oracle boots x86-64 guests only "
            "(arch = \"x86_64\" presets)"
        )
    topo = machine.topology
    if topo.nodes > QEMU_MAX_NODES:
        raise MmtwinError(f"--machine: {topo.nodes} nodes is not allowed; QEMU builds at most {QEMU_MAX_NODES}")
    if mem_mib is not None and scale is not None:
        raise MmtwinError("--mem-mib: give --mem-mib or --scale, not both")
    if max_cpus < 1:
        raise MmtwinError(f"--max-cpus: {max_cpus} is not allowed; expected at least 1")
    preset_mem = topo.memory()
    total = sum(preset_mem)
    if scale is not None:
        if not 0 < scale <= 1:
            raise MmtwinError(f"--scale: {scale} is not allowed; expected a number S with 0 < S <= 1")
        factor = float(scale)
    elif mem_mib is not None:
        if mem_mib < MIN_GUEST_MIB:
            raise MmtwinError(f"--mem-mib: {mem_mib} is not allowed; the guest needs at least {MIN_GUEST_MIB} MiB")
        factor = mem_mib / total
    else:
        factor = min(1.0, DEFAULT_GUEST_MIB / total)
    memory = [int(m * factor) // NODE_ALIGN_MIB * NODE_ALIGN_MIB for m in preset_mem]
    option = "--scale" if scale is not None else "--mem-mib"
    value = scale if scale is not None else (mem_mib if mem_mib is not None else f"(default {DEFAULT_GUEST_MIB})")
    for n, m in enumerate(memory):
        if m < MIN_NODE_MIB:
            raise MmtwinError(
                f"{option}: {value} gives node {n} {m} MiB; every guest node needs at least {MIN_NODE_MIB} MiB "
                f"(preset {machine.name} has {preset_mem[n]} MiB there)"
            )
    if sum(memory) < MIN_GUEST_MIB:
        raise MmtwinError(f"{option}: {value} gives a {sum(memory)} MiB guest; it needs at least {MIN_GUEST_MIB} MiB")
    cpus = _cap_cpus(topo.cpus(), max_cpus)
    return GuestTopology(
        machine=machine.name, nodes=topo.nodes, cpus=cpus, preset_cpus=topo.cpus(), memory_mib=memory,
        preset_memory_mib=preset_mem, distance=[list(r) for r in topo.distance], max_cpus=max_cpus,
    )


def host_mem_available_mib(meminfo: str = "/proc/meminfo") -> Optional[int]:
    try:
        with open(meminfo) as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        return None
    return None


def check_host_memory(topo: GuestTopology, available: Optional[int] = None) -> None:
    available = host_mem_available_mib() if available is None else available
    if available is not None and topo.total_mib > available:
        raise MmtwinError(
            f"--mem-mib: a {topo.total_mib} MiB guest is not allowed; this host has {available} MiB available "
            "(MemAvailable); give a smaller --mem-mib or --scale"
        )


def find_qemu() -> str:
    found = shutil.which(QEMU)
    if found is None:
        raise MmtwinError(f"oracle: {QEMU} not found; install it: apt-get install qemu-system-x86")
    return found


def _version_key(path: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", os.path.basename(path))]


def find_kernel(given: Optional[str] = None, boot_dir: Optional[str] = None) -> Path:
    """The kernel image: --kernel, else the newest /boot/vmlinuz-*."""
    hint = "apt-get install linux-image-cloud-amd64"
    if given is not None:
        path = Path(given)
        if not path.is_file():
            raise MmtwinError(f"--kernel: {given!r} is not a file; give a bzImage such as /boot/vmlinuz-6.1.0-*-cloud-amd64")
    else:
        boot = boot_dir or os.environ.get("MMTWIN_ORACLE_BOOT", "/boot")
        images = sorted(glob.glob(os.path.join(boot, "vmlinuz-*")), key=_version_key)
        if not images:
            raise MmtwinError(f"oracle: no kernel image {boot}/vmlinuz-*; install one: {hint}")
        path = Path(images[-1])
    if not os.access(path, os.R_OK):
        raise MmtwinError(f"oracle: kernel image {path} is not readable; run as root or make it readable")
    return path


def kvm_usable() -> bool:
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    return True


def choose_accel(accel: str) -> str:
    if accel not in ("auto", "kvm", "tcg"):
        raise MmtwinError(f"--accel: {accel!r} is not allowed; expected auto, kvm or tcg")
    if accel == "auto":
        return "kvm" if kvm_usable() else "tcg"
    if accel == "kvm" and not kvm_usable():
        raise MmtwinError("--accel: kvm is not usable here (/dev/kvm cannot be opened read-write); use --accel tcg or auto")
    return accel


def qemu_args(qemu: str, topo: GuestTopology, kernel: Path, initrd: Path, serial: Path, accel: str,
              disk: Optional[Path] = None, swap: Optional[Path] = None) -> list[str]:
    """The QEMU command line for `topo`: one RAM backend per node, the CPUs of each node, the SLIT;
    with `disk`, that raw image as a virtio-blk disk (/dev/vda in the guest); with `swap`, that one
    as the next (/dev/vdb, or /dev/vda without `disk`: PCI slots go in command-line order)."""
    args = [
        qemu, "-machine", "pc", "-accel", accel, "-cpu", "max" if accel == "tcg" else "host,-arch-capabilities",
        "-m", f"{topo.total_mib}M", "-smp", str(topo.total_cpus),
        "-nodefaults", "-no-user-config", "-nographic", "-monitor", "none", "-no-reboot",
        "-serial", f"file:{serial}",
        "-kernel", str(kernel), "-initrd", str(initrd), "-append", KERNEL_ARGS,
    ]
    for n in range(topo.nodes):
        args += ["-object", f"memory-backend-ram,id=mem{n},size={topo.memory_mib[n]}M"]
        node = f"node,nodeid={n},memdev=mem{n}"
        ids = topo.cpu_ids(n)
        if ids:
            node += f",cpus={ids[0]}" + (f"-{ids[-1]}" if len(ids) > 1 else "")
        args += ["-numa", node]
    for i in range(topo.nodes):
        for j in range(topo.nodes):
            if i != j:
                args += ["-numa", f"dist,src={i},dst={j},val={topo.distance[i][j]}"]
    if disk is not None:
        # cache=unsafe: the host never flushes the image (it is thrown away after the run); the
        # guest's own writeback and block layer are what is observed, not the host's disk. One
        # queue (QEMU 7.2 gives virtio-blk-pci one per vCPU): 6.1 then picks mq-deadline for it,
        # as for any single-queue disk, where with several it would pick none.
        args += ["-drive", f"file={disk},format=raw,if=none,id=vd0,cache=unsafe,discard=unmap",
                 "-device", "virtio-blk-pci,drive=vd0,num-queues=1"]
    if swap is not None:
        args += ["-drive", f"file={swap},format=raw,if=none,id=vd1,cache=unsafe,discard=unmap",
                 "-device", "virtio-blk-pci,drive=vd1,num-queues=1"]
    return args


# mkfs.ext4's settings for the guest's disk: fixed UUID and directory hash seed (same inputs, same
# image), and inode tables and journal written at mkfs time, so the guest kernel's lazy-init
# thread does no I/O of its own during the run.
# The features are given in full (-O none,...: ext4's defaults in e2fsprogs 1.47's mke2fs.conf, less
# metadata_csum_seed and orphan_file, which 6.1 reads but older hosts' mke2fs may not know), so the
# image does not depend on the host's mke2fs.conf.
MKFS_EXT4 = ("-q", "-F", "-t", "ext4", "-b", "4096", "-I", "256", "-i", "16384",
             "-O", "none,has_journal,ext_attr,resize_inode,dir_index,filetype,extent,64bit,flex_bg,sparse_super,"
                   "large_file,huge_file,dir_nlink,extra_isize,metadata_csum",
             "-U", "6d6d7477-696e-4f72-8163-6c6544697363",
             "-E", "hash_seed=6d6d7477-696e-4f72-8163-6c6548617368,lazy_itable_init=0,lazy_journal_init=0,nodiscard",
             "-L", "mmtwin")


# mkfs.xfs's settings: the UUID fixed; the features the host's xfsprogs chooses by default (Debian
# bookworm's xfsprogs 6.1: CRCs, free inode btree, reflink, sparse inodes, which Linux 6.1 mounts; its
# own lts_6.1.conf names an option, nrext64, that this mkfs.xfs refuses, so it is not given). A newer
# xfsprogs may turn on features an older guest kernel cannot mount: the mount then fails with one line.
# Unlike mke2fs it writes the time into the image, so two images of the same inputs differ in their
# timestamps.
MKFS_XFS = ("-q", "-f", "-m", "uuid=6d6d7477-696e-4f72-8163-6c6558667300")
# Per filesystem kind: the mkfs program, its arguments, and the Debian package that has it.
MKFS = {"ext4": ("mkfs.ext4", MKFS_EXT4, "e2fsprogs"), "xfs": ("mkfs.xfs", MKFS_XFS, "xfsprogs")}
FS_KINDS = tuple(MKFS)


def find_mkfs(fs: str = "ext4") -> str:
    prog, _, package = MKFS[fs]
    for cand in (shutil.which(prog), f"/sbin/{prog}", f"/usr/sbin/{prog}"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise MmtwinError(f"oracle: {prog} not found (a file workload's disk is made on the host); "
                      f"install it: apt-get install {package}")


def read_from_disk(image: Path, name: str, out: Path) -> None:
    """Copy file `name` out of the ext4 image (the guest wrote it there) with debugfs, without mounting."""
    debugfs = None
    for cand in (shutil.which("debugfs"), "/sbin/debugfs", "/usr/sbin/debugfs"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            debugfs = cand
            break
    if debugfs is None:
        raise MmtwinError("oracle: debugfs not found (it reads the guest's trace out of the disk image); "
                          "install it: apt-get install e2fsprogs")
    try:
        out.unlink()
    except FileNotFoundError:
        pass
    try:
        proc = subprocess.run([debugfs, "-R", f"dump -p /{name} {out}", str(image)], capture_output=True, text=True,
                              timeout=600)
    except subprocess.TimeoutExpired:
        raise MmtwinError(f"oracle: debugfs did not finish within 600 s reading {name} from {image}") from None
    if proc.returncode != 0 or not out.is_file():
        said = " ".join((proc.stderr.strip() or "no message").split())
        raise MmtwinError(f"oracle: cannot read {name} from the guest's disk image: {said[-300:]}")


def make_swap_disk(path: Path, size_mib: int, besides_mib: int = 0) -> None:
    """A sparse raw image of `size_mib` MiB for swap (the guest's mkswap writes its header), in a
    directory that also holds `besides_mib` MiB of another disk image."""
    try:
        free_mib = shutil.disk_usage(path.parent).free >> 20
    except OSError:
        free_mib = None
    if free_mib is not None and free_mib < size_mib + besides_mib + 64:
        raise MmtwinError(f"--swap-mib: {size_mib} is not allowed here; the oracle's cache directory {path.parent} "
                          f"has {free_mib} MiB free and the guest may swap that much")
    try:
        with open(path, "wb") as fh:
            fh.truncate(size_mib << 20)
    except OSError as exc:
        raise MmtwinError(f"oracle: cannot create the swap disk image {path}: {exc.strerror}") from None


def make_disk(path: Path, size_mib: int, fs: str = "ext4") -> None:
    """A sparse raw image of `size_mib` MiB with a fresh `fs` (ext4 or xfs) filesystem."""
    mkfs = find_mkfs(fs)
    prog, args, _ = MKFS[fs]
    try:
        free_mib = shutil.disk_usage(path.parent).free >> 20
    except OSError:
        free_mib = None
    if free_mib is not None and free_mib < size_mib + 64:
        raise MmtwinError(f"--disk-mib: a {size_mib} MiB disk is not allowed here (with --size-mib, it defaults to "
                          f"the files and room for ext4); the oracle's cache directory {path.parent} has {free_mib} "
                          "MiB free and the workload may fill the disk image")
    try:
        with open(path, "wb") as fh:
            fh.truncate(size_mib << 20)
    except OSError as exc:
        raise MmtwinError(f"oracle: cannot create the disk image {path}: {exc.strerror}") from None
    try:
        proc = subprocess.run([mkfs, *args, str(path)], capture_output=True, text=True, timeout=600,
                              env={**os.environ, "E2FSPROGS_FAKE_TIME": "1700000000"})
    except subprocess.TimeoutExpired:
        raise MmtwinError(f"oracle: {prog} did not finish within 600 s on {path}") from None
    if proc.returncode != 0:
        said = " ".join((proc.stderr.strip() or proc.stdout.strip() or "no message").split())
        raise MmtwinError(f"oracle: {prog} failed on the disk image (exit {proc.returncode}): {said[:300]}")


@dataclass
class GuestOutput:
    """The guest's serial output, split: sections[(phase, name)] = text; lines of kind VALUE/SYSCTL/ERROR."""
    serial: str
    sections: dict[tuple[str, str], str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    sysctls: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # Marker lines that do not pair up (a kernel message split one, or the guest stopped mid-dump).
    broken: list[str] = field(default_factory=list)
    status: dict[str, int] = field(default_factory=dict)
    done: bool = False
    started: bool = False


def split_serial(text: str) -> GuestOutput:
    """Split the guest's serial text at its marker lines. Sections nest (the
    "during" snapshot is taken inside the workload's section); a line belongs
    to the innermost open one. A marker may follow firmware output on the same line."""
    mark = initramfs.MARK
    out = GuestOutput(serial=text)
    stack: list[tuple[tuple[str, str], list[str]]] = []
    for raw in text.replace("\r", "").split("\n"):
        at = raw.find(mark + " ")
        if at >= 0:
            words = raw[at + len(mark) + 1 :].split(" ", 3)
            kind = words[0]
            if kind == "BEGIN" and len(words) >= 3:
                stack.append(((words[1], words[2].strip()), []))
            elif kind == "END" and len(words) >= 3:
                name = (words[1], words[2].strip())
                if not stack or stack[-1][0] != name:
                    open_ = f"{stack[-1][0][0]} {stack[-1][0][1]}" if stack else "none"
                    out.broken.append(f"END {name[0]} {name[1]} while the open section is {open_}")
                    continue
                _, buf = stack.pop()
                out.sections[name] = "\n".join(buf) + ("\n" if buf else "")
            elif kind == "VALUE" and len(words) >= 2:
                out.values[words[1]] = " ".join(words[2:]).strip()
            elif kind == "SYSCTL" and len(words) >= 2:
                out.sysctls[words[1]] = " ".join(words[2:]).strip()
            elif kind == "ERROR":
                out.errors.append(" ".join(words[1:]))
            elif kind == "STATUS" and len(words) >= 3:
                out.status[words[1]] = int(words[2]) if words[2].lstrip("-").isdigit() else -1
            elif kind == "DONE":
                out.done = True
            elif kind == "START":
                out.started = True
            continue
        if stack:
            stack[-1][1].append(raw)
    out.broken.extend(f"section {ph} {name} never ended" for (ph, name), _ in stack)
    return out


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill QEMU (its own process group) and reap it."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


@dataclass
class BootResult:
    output: GuestOutput
    wall_s: float
    accel: str
    kernel: Path
    command: list[str]
    note: Optional[str] = None   # e.g. why KVM was not used


# A guest under KVM prints its START line within a few seconds; one that has
# not after this long is taken as KVM not working here (seen with nested
# virtualization: the kernel's decompressor never returns), and `auto` falls
# back to TCG. The verdict is kept in the cache (kvm-verdict), keyed by the
# QEMU binary, the kernel image and the host kernel, so later runs go straight to TCG.
KVM_PROBE_S = 20.0


def _kvm_key(qemu: str, image: Path) -> str:
    def sig(p: str) -> str:
        try:
            st = os.stat(p)
            return f"{p}:{st.st_size}:{int(st.st_mtime)}"
        except OSError:
            return p
    return " ".join([sig(qemu), sig(str(image)), os.uname().release])


def _kvm_verdict(cache: Path, key: str) -> Optional[str]:
    try:
        lines = (cache / "kvm-verdict").read_text().splitlines()
    except OSError:
        return None
    return lines[1] if len(lines) == 2 and lines[0] == key else None


def _save_kvm_verdict(cache: Path, key: str, verdict: str) -> None:
    try:
        (cache / "kvm-verdict").write_text(f"{key}\n{verdict}\n")
    except OSError:
        pass


class _KvmStuck(Exception):
    pass


def _run_qemu(args: list[str], serial: Path, errlog: Path, timeout: float, probe_s: Optional[float]) -> tuple[int, float]:
    """Run QEMU until it exits; (exit status, wall seconds). Kills it on timeout, on Ctrl-C, and when
    `probe_s` is given and the guest has printed no START line by then (raises _KvmStuck)."""
    start = time.monotonic()
    with open(errlog, "wb") as err:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    # SIGTERM and SIGHUP end mmtwin as Ctrl-C does, through the `finally` that kills QEMU
    # (QEMU runs in its own session, so they never reach it).
    previous = {}

    def _terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, _terminate)
        except ValueError:  # not the main thread: Ctrl-C and the timeout still apply
            pass
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.2)
                return rc, time.monotonic() - start
            except subprocess.TimeoutExpired:
                pass
            elapsed = time.monotonic() - start
            if probe_s is not None and elapsed > probe_s:
                if (initramfs.MARK + " START").encode() not in serial.read_bytes():
                    raise _KvmStuck()
                probe_s = None
            if elapsed > timeout:
                raise subprocess.TimeoutExpired(args, timeout)
    finally:
        _kill(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def boot(topo: GuestTopology, conf: str, sysctl: str, *, kernel: Optional[str] = None, accel: str = "auto",
         timeout: float = 300.0, disk_mib: Optional[int] = None, swap_mib: Optional[int] = None,
         fetch: Optional[tuple[str, Path]] = None, fs: str = "ext4") -> BootResult:
    """Boot the guest with the settings `conf` (/oracle.conf) and `sysctl` (/oracle.sysctl) and wait for it.
    With `disk_mib`, the guest also gets a virtio disk of that size with a fresh `fs` filesystem and
    the kernel's virtio modules (the conf must say DISK=1 for /init to mount it); with `swap_mib`, a
    virtio disk of that size for swap (SWAP=1: /init makes it a swap area and switches it on). With
    `fetch` (name, host path), the file the guest left at the disk's root under that name is copied out.
    The disk images are deleted whatever happens."""
    if not (math.isfinite(timeout) and 0 < timeout <= 86400):
        raise MmtwinError(f"--timeout: {timeout:g} is not allowed; expected seconds, more than 0 and at most 86400")
    qemu = find_qemu()
    image = find_kernel(kernel)
    check_host_memory(topo)
    chosen = choose_accel(accel)
    cache = cache_dir()
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MmtwinError(f"oracle: cannot create the cache directory {cache}: {exc.strerror}") from None
    note = None
    key = _kvm_key(qemu, image)
    if chosen == "kvm" and accel == "auto" and _kvm_verdict(cache, key) == "stuck":
        chosen = "tcg"
        note = f"KVM is present but a guest never started under it on this host (cached in {cache / 'kvm-verdict'}); using TCG"
    base = initramfs.base_archive(cache)
    work = cache / "runs" / f"{os.getpid()}-{time.monotonic_ns()}"
    work.mkdir(parents=True)
    keep = False
    disk: Optional[Path] = None
    swap: Optional[Path] = None
    try:
        initrd = work / "initrd.cpio"
        extra = b""
        if disk_mib is not None or swap_mib is not None:
            extra = initramfs.modules_archive(initramfs.kernel_release(image),
                                              fs_modules=(fs,) if disk_mib is not None else ())
        if disk_mib is not None:
            disk = work / "disk.img"
            make_disk(disk, disk_mib, fs)
        if swap_mib is not None:
            swap = work / "swap.img"
            make_swap_disk(swap, swap_mib, disk_mib or 0)
        try:
            initrd.write_bytes(base.read_bytes() + initramfs.settings_archive(conf, sysctl) + extra)
        except OSError as exc:
            raise MmtwinError(f"oracle: cannot write the guest's initramfs {initrd}: {exc.strerror} "
                              "(was 'mmtwin oracle clean' run meanwhile?)") from None
        serial = work / "serial.log"
        errlog = work / "qemu.err"
        while True:
            serial.write_bytes(b"")
            args = qemu_args(qemu, topo, image, initrd, serial, chosen, disk, swap)
            try:
                rc, wall = _run_qemu(args, serial, errlog, timeout, KVM_PROBE_S if chosen == "kvm" else None)
            except _KvmStuck:
                _save_kvm_verdict(cache, key, "stuck")
                if accel == "kvm":
                    raise MmtwinError(
                        f"--accel: kvm: the guest printed nothing within {KVM_PROBE_S:g} s under KVM (nested "
                        "virtualization that cannot run this kernel?); use --accel tcg or auto"
                    ) from None
                chosen = "tcg"
                note = f"KVM is present but the guest did not start under it within {KVM_PROBE_S:g} s; using TCG"
                continue
            except subprocess.TimeoutExpired:
                keep = True
                raise MmtwinError(
                    f"--timeout: the guest did not finish within {timeout:g} s; QEMU was killed "
                    f"(serial output kept in {serial}; raise --timeout, TCG is much slower than KVM)"
                ) from None
            break
        if chosen == "kvm":
            _save_kvm_verdict(cache, key, "works")
        try:
            text = serial.read_text(errors="replace")
        except OSError as exc:
            raise MmtwinError(f"oracle: cannot read the guest's serial output {serial}: {exc.strerror} "
                              "(was 'mmtwin oracle clean' run meanwhile?)") from None
        out = split_serial(text)
        if out.broken:
            keep = True
            raise MmtwinError(f"oracle: the guest's output is garbled ({out.broken[0]}; a kernel message inside a dump?); "
                              f"serial output kept in {serial}; run again")
        if rc != 0 and not out.done:
            message = " ".join((errlog.read_text(errors="replace").strip() or "no message").split())
            if not out.started:
                raise MmtwinError(f"oracle: {QEMU} could not build this topology or boot (exit {rc}): {message[:400]}")
            keep = True
            raise MmtwinError(f"oracle: the guest stopped early (QEMU exit {rc}); serial output kept in {serial}")
        if not out.done:
            keep = True
            last = [ln for ln in text.replace("\r", "").splitlines() if ln.strip()][-1:] or ["(no output)"]
            raise MmtwinError(
                f"oracle: the guest powered off before finishing (last line: {last[0].strip()[:160]!r}); "
                f"serial output kept in {serial}"
            )
        if fetch is not None and disk is not None and not out.errors:
            read_from_disk(disk, fetch[0], fetch[1])
        return BootResult(out, wall, chosen, image, args, note)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            # A failed run keeps its serial log, never the (possibly large) disk images.
            for image_file in (disk, swap):
                if image_file is not None:
                    image_file.unlink(missing_ok=True)


def _live_runs(path: Path) -> list[str]:
    """Run directories (runs/<pid>-<ns>) whose mmtwin process is still alive: the pid exists and its
    command line names mmtwin (a directory kept after a failed run may outlive its pid, which the
    system can give to an unrelated process)."""
    live = []
    for run in sorted((path / "runs").glob("*-*")):
        pid = run.name.split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"mmtwin" in cmdline:
            live.append(pid)
    return live


def clean() -> tuple[Path, bool]:
    """Remove the cache directory; (its path, whether there was one). Refused while another
    mmtwin process has a guest running from it."""
    path = cache_dir()
    if not path.exists():
        return path, False
    live = _live_runs(path)
    if live:
        raise MmtwinError(f"oracle clean: process {live[0]} is running a guest from {path}; "
                          "wait for it to finish (or stop it), then clean")
    shutil.rmtree(path)
    return path, True
