"""The guest's initramfs: busybox-static, the workloads (memhog, filehog) and an init script.

The archive is written here in the kernel's "newc" cpio format with fixed
owners and times, so the same inputs give the same bytes. The base archive
(busybox, memhog, filehog, /init) is built once and cached under the oracle
cache directory, named by a hash of what went into it; each boot appends a
small second archive with its own settings (/oracle.conf, /oracle.sysctl),
and a boot with a disk a third with the kernel's virtio modules, which the
kernel unpacks over the first (concatenated cpio archives are allowed).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from importlib import resources
from pathlib import Path

from mmtwin.errors import MmtwinError

# Printed by the guest in front of every structured line (never by the kernel).
MARK = "@@MMTWIN-ORACLE"

# /init: mounts /proc, /sys and /dev, sets the sysctls, dumps the /proc and
# /sys files before, during (while the hog holds its memory) and after the
# workload between BEGIN/END markers, then powers off at once.
INIT_SCRIPT = r"""#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
# Only emergencies on the console from here on: kernel lines must not split ours.
dmesg -n 1
M=@@MARK@@
WORKLOAD=memhog
HOG_MIB=0
HOG_THREADS=1
HOG_CPUS=0
HOG_PASSES=1
FSMARK_ARGS=
LARGEDD_ARGS=
DISK=0
FS=ext4
SWAP=0
CALIBRATE=0
TRACE=0
WMARK_RECOMPUTE=0
[ -f /oracle.conf ] && . /oracle.conf
say() { echo "$M $*"; }
dump() {
  say BEGIN "$1" "$2"
  cat "$3"
  say END "$1" "$2"
}
snapshot() { /bin/sh /snapshot.sh "$1" pagetypeinfo; }
echo
say START
say BEGIN info uname
uname -r
say END info uname
say BEGIN info cmdline
cat /proc/cmdline
say END info cmdline
for d in /sys/devices/system/node/node[0-9]*; do
  n=${d##*/node}
  dump info cpulist-node$n $d/cpulist
  dump info meminfo-node$n $d/meminfo
  dump info distance-node$n $d/distance
done
if [ -f /oracle.sysctl ]; then
  while read key value; do
    [ -n "$key" ] || continue
    f=/proc/sys/$(echo "$key" | tr . /)
    if [ ! -f "$f" ]; then
      say ERROR sysctl "$key" no such sysctl in this kernel
      continue
    fi
    if ! echo "$value" > "$f" 2>/dev/null; then
      say ERROR sysctl "$key" the kernel refused "$value"
      continue
    fi
    say SYSCTL "$key" "$(cat $f | tr '\t\n' '  ')"
  done < /oracle.sysctl
fi
# oracle compare: write min_free_kbytes and lowmem_reserve_ratio back with their own values, so the
# kernel computes watermarks and protection again from the pages it manages now (the dumps' pages).
if [ "$WMARK_RECOMPUTE" = 1 ]; then
  for key in min_free_kbytes lowmem_reserve_ratio; do
    v=$(cat /proc/sys/vm/$key)
    echo "$v" > /proc/sys/vm/$key || say ERROR sysctl vm.$key the kernel refused "$v"
  done
fi
for key in vm.min_free_kbytes vm.zone_reclaim_mode vm.lowmem_reserve_ratio vm.watermark_scale_factor vm.watermark_boost_factor vm.numa_zonelist_order vm.dirty_ratio vm.dirty_background_ratio vm.dirty_expire_centisecs vm.dirty_writeback_centisecs vm.swappiness vm.vfs_cache_pressure vm.min_unmapped_ratio vm.min_slab_ratio; do
  f=/proc/sys/$(echo "$key" | tr . /)
  [ -f "$f" ] && say VALUE "$key" "$(cat $f | tr '\t\n' '  ')"
done
# The virtio disks: a file workload's (vda, the ext4 or xfs filesystem the host made on it, mounted
# at /mnt) and the swap disk (after it: vdb, or vda alone), made a swap area here and switched on.
# The virtio modules come from the third archive, in load order.
wait_disk() {
  i=0
  while [ ! -b "$1" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
}
# oracle compare: how fast this guest's virtio disk takes writes (O_DIRECT, so no page cache: 32 MiB in
# 1 MiB writes, 256 writes of 4 KiB), written to $1 (the raw swap disk before mkswap, or a file on the
# data disk), for the twin's disk to be as fast against the twin's CPUs as this one is against the
# guest's (docs/oracle.md, "The twin's disk").
calibrate_disk() {
  say BEGIN calib write-1m
  /bin/filehog directwrite "$1" 33554432 1048576 2>&1
  say END calib write-1m
  say BEGIN calib write-4k
  /bin/filehog directwrite "$1" 1048576 4096 2>&1
  say END calib write-4k
}
if [ "$DISK" = 1 ] || [ "$SWAP" = 1 ]; then
  for m in $(cat /modules/load); do
    insmod /modules/$m || { say ERROR disk the kernel refused module $m; HOG_MIB=0; TRACE=0; }
  done
fi
if [ "$DISK" = 1 ]; then
  wait_disk /dev/vda
  mkdir -p /mnt
  # Without its disk the workload does not run: its files would land in the guest's memory.
  mount -t $FS /dev/vda /mnt || { say ERROR disk cannot mount /dev/vda as $FS; HOG_MIB=0; TRACE=0; }
  dump info mounts /proc/mounts
fi
if [ "$SWAP" = 1 ]; then
  S=/dev/vda
  [ "$DISK" = 1 ] && S=/dev/vdb
  wait_disk $S
  [ "$CALIBRATE" = 1 ] && calibrate_disk $S
  # Without its swap the hog does not run: it would meet the OOM killer instead.
  { mkswap $S >/dev/null && swapon $S; } || { say ERROR swap cannot make or switch on a swap area on $S; HOG_MIB=0; }
fi
if [ "$CALIBRATE" = 1 ] && [ "$SWAP" != 1 ] && [ "$DISK" = 1 ] && [ "$HOG_MIB" -gt 0 ]; then
  calibrate_disk /mnt/mmtwin-calib
  rm -f /mnt/mmtwin-calib
fi
# ... and how fast its CPU faults: a 64 MiB memory hog on CPU 0, which the twin runs too.
if [ "$CALIBRATE" = 1 ]; then
  say BEGIN calib memhog
  /bin/memhog 64 1 0 1
  say END calib memhog
fi
# --trace: the kernel's vmscan tracepoints during the workload, into a 2 MiB buffer per CPU. The
# buffers are allocated before the "before" snapshot (their pages on each CPU's node would count in the
# workload's placement), the tracing switched on after it.
T=/sys/kernel/tracing
if [ "$TRACE" = 1 ]; then
  mount -t tracefs nodev $T || say ERROR trace cannot mount tracefs
  echo 0 > $T/tracing_on
  echo 2048 > $T/buffer_size_kb || say ERROR trace the kernel refused a 2048 KiB trace buffer
  echo > $T/trace
  echo 1 > $T/events/vmscan/enable || say ERROR trace the kernel has no vmscan tracepoints
fi
snapshot before
[ "$TRACE" = 1 ] && echo 1 > $T/tracing_on
if [ "$HOG_MIB" -gt 0 ]; then
  say BEGIN run workload
  if [ "$WORKLOAD" = memhog ]; then
    /bin/memhog "$HOG_MIB" "$HOG_THREADS" "$HOG_CPUS" "$HOG_PASSES" "/bin/sh /snapshot.sh during"
  elif [ "$WORKLOAD" = fsmark ]; then
    /bin/filehog fsmark /mnt "$HOG_THREADS" "$HOG_CPUS" $FSMARK_ARGS "/bin/sh /snapshot.sh during"
  elif [ "$WORKLOAD" = largedd ]; then
    /bin/filehog largedd /mnt $LARGEDD_ARGS "$HOG_CPUS" "/bin/sh /snapshot.sh during"
  else
    /bin/filehog "$WORKLOAD" /mnt "$HOG_MIB" "$HOG_THREADS" "$HOG_CPUS" "/bin/sh /snapshot.sh during"
  fi
  rc=$?
  say END run workload
  say STATUS workload $rc
  [ "$TRACE" = 1 ] && echo 0 > $T/tracing_on
  snapshot after
fi
# The trace goes to the disk (the host reads it out of the image with debugfs), after the last
# snapshot so that writing it changes no counter the run reports; the buffers' overruns to the console.
if [ "$TRACE" = 1 ]; then
  for c in $T/per_cpu/cpu[0-9]*; do
    dump trace stats-${c##*/} $c/stats
  done
  cat $T/trace > /mnt/mmtwin-trace.txt || say ERROR trace cannot write the trace to the disk
  umount /mnt || sync
fi
say DONE
poweroff -f
"""

# One snapshot of the /proc and /sys files: run by /init (before, after) and by memhog while it
# still holds its memory (during).
SNAPSHOT_SCRIPT = r"""#!/bin/busybox sh
M=@@MARK@@
say() { echo "$M $*"; }
dump() {
  say BEGIN "$1" "$2"
  cat "$3"
  say END "$1" "$2"
}
# Fold every CPU's pending counter deltas into the global counters first (vmstat_refresh);
# otherwise /proc/vmstat lags by up to stat_threshold a CPU and counter.
echo 1 > /proc/sys/vm/stat_refresh 2>/dev/null
dump "$1" vmstat /proc/vmstat
dump "$1" zoneinfo /proc/zoneinfo
dump "$1" buddyinfo /proc/buddyinfo
# /init's snapshots also dump pagetypeinfo; memhog's "during" one does not.
[ "$2" = pagetypeinfo ] && dump "$1" pagetypeinfo /proc/pagetypeinfo
dump "$1" meminfo /proc/meminfo
for d in /sys/devices/system/node/node[0-9]*; do
  n=${d##*/node}
  dump "$1" numastat-node$n $d/numastat
done
"""


def _header(ino: int, mode: int, size: int, name: bytes, rdev: tuple[int, int] = (0, 0)) -> bytes:
    fields = [ino, mode, 0, 0, 1, 0, size, 0, 0, rdev[0], rdev[1], len(name) + 1, 0]
    head = b"070701" + b"".join(b"%08X" % f for f in fields)
    return _pad(head + name + b"\0")


def _pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def cpio(entries: list[tuple[str, int, bytes | tuple[int, int] | None]]) -> bytes:
    """A newc archive of (path, mode, data) entries: data is the file's bytes,
    the symlink's target, (major, minor) for a device, or None for a directory."""
    out = bytearray()
    for ino, (path, mode, data) in enumerate(entries, start=1):
        name = path.lstrip("/").encode()
        if isinstance(data, tuple):
            out += _header(ino, mode, 0, name, data)
        else:
            body = data or b""
            out += _header(ino, mode, len(body), name) + _pad(body)
    out += _header(len(entries) + 1, 0, 0, b"TRAILER!!!")
    return bytes(out)


def settings_archive(conf: str, sysctl: str) -> bytes:
    """The per-boot archive appended to the base one."""
    return cpio([("oracle.conf", stat.S_IFREG | 0o644, conf.encode()),
                 ("oracle.sysctl", stat.S_IFREG | 0o644, sysctl.encode())])


# The modules a file workload's disk needs (virtio-blk on QEMU's PCI bus, ext4 and the crc32c its
# metadata checksums ask for by name), with what they depend on; built-in ones are skipped.
DISK_MODULES = ("virtio_pci", "virtio_blk", "crc32c_generic")
# ...of which a kernel may have none at all (another crc32c implementation serves instead).
OPTIONAL_MODULES = ("crc32c_generic",)


def kernel_release(image: Path) -> str:
    """The release of a kernel image named as Debian installs it (/boot/vmlinuz-RELEASE)."""
    name = image.resolve().name
    if not name.startswith("vmlinuz-") or len(name) == len("vmlinuz-"):
        raise MmtwinError(f"--kernel: {str(image)!r}: a virtio disk (a file workload's, or --swap-mib) needs the "
                          "kernel's modules, found by the release in the image's name; expected /boot/vmlinuz-RELEASE")
    return name[len("vmlinuz-"):]


def disk_modules(release: str, root: Path = Path("/lib/modules"), fs_modules: tuple[str, ...] = ("ext4",)) -> list[Path]:
    """DISK_MODULES and the filesystems' modules (`fs_modules`: ext4, xfs), with their dependencies from
    modules.dep, in an order insmod can load them (every module after the ones it depends on). A module
    the kernel has built in is not listed there and not needed."""
    base = root / release
    dep_file = base / "modules.dep"
    hint = f"install the kernel's package (Debian: linux-image-{release})"
    try:
        text = dep_file.read_text()
    except OSError:
        raise MmtwinError(f"oracle: a virtio disk needs the guest kernel's modules and {dep_file} is missing; "
                          f"{hint}") from None
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in text.splitlines():
        path, sep, rest = line.partition(":")
        if not sep:
            continue
        deps[path] = rest.split()
        stem = Path(path).name
        for ext in (".ko", ".ko.xz", ".ko.zst", ".ko.gz"):
            if stem.endswith(ext):
                by_name[stem[: -len(ext)].replace("-", "_")] = path
    try:
        builtin = {Path(x).name.removesuffix(".ko").replace("-", "_")
                   for x in (base / "modules.builtin").read_text().split()}
    except OSError:
        builtin = set()
    order: list[str] = []
    seen: set[str] = set()

    def visit(path: str) -> None:
        if path in seen:
            return          # loaded already, or a cycle in a malformed modules.dep
        seen.add(path)
        for d in deps.get(path, []):
            visit(d)
        order.append(path)

    for name in (*DISK_MODULES, *fs_modules):
        if name in builtin:
            continue
        if name not in by_name and name in OPTIONAL_MODULES:
            continue
        if name not in by_name:
            raise MmtwinError(f"oracle: the guest kernel {release} has no module {name} (needed for the guest's "
                              f"virtio disks) in {dep_file}; {hint}")
        visit(by_name[name])
    for path in order:
        if not path.endswith(".ko"):
            raise MmtwinError(f"oracle: module {path} of kernel {release} is compressed; busybox's insmod loads "
                              "plain .ko files only")
    return [base / p for p in order]


def modules_archive(release: str, root: Path = Path("/lib/modules"), fs_modules: tuple[str, ...] = ("ext4",)) -> bytes:
    """The archive with the disks' modules (`fs_modules`: the filesystem's): /modules/NAME.ko and
    /modules/load (their load order)."""
    entries: list[tuple[str, int, bytes | tuple[int, int] | None]] = [("modules", stat.S_IFDIR | 0o755, None)]
    names = []
    for path in disk_modules(release, root, fs_modules):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise MmtwinError(f"oracle: cannot read module {path}: {exc.strerror}") from None
        entries.append((f"modules/{path.name}", stat.S_IFREG | 0o644, data))
        names.append(path.name)
    entries.append(("modules/load", stat.S_IFREG | 0o644, "".join(f"{n}\n" for n in names).encode()))
    return cpio(entries)


# The guest's programs, each compiled from the C source of that name kept beside this file,
# with the header they share.
PROGRAMS = ("memhog", "filehog")
SHARED_HEADER = "guestlib.h"


def program_source(name: str) -> bytes:
    return resources.files("mmtwin.oracle").joinpath(f"{name}.c").read_bytes()


def shared_header() -> bytes:
    return resources.files("mmtwin.oracle").joinpath(SHARED_HEADER).read_bytes()



def _is_static_elf(path: Path) -> bool:
    """True when the ELF file has no PT_INTERP program header (no dynamic loader)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:
                return False
            order = "little" if head[5] == 1 else "big"
            phoff = int.from_bytes(head[32:40], order)
            phentsize = int.from_bytes(head[54:56], order)
            phnum = int.from_bytes(head[56:58], order)
            fh.seek(phoff)
            table = fh.read(phentsize * phnum)
    except OSError:
        return False
    for i in range(phnum):
        if int.from_bytes(table[i * phentsize : i * phentsize + 4], order) == 3:  # PT_INTERP
            return False
    return True


def find_busybox() -> Path:
    """The static busybox to put in the guest: $MMTWIN_ORACLE_BUSYBOX, else busybox on PATH, else /bin/busybox."""
    given = os.environ.get("MMTWIN_ORACLE_BUSYBOX")
    found = given or shutil.which("busybox") or ("/bin/busybox" if os.path.exists("/bin/busybox") else None)
    hint = "install it: apt-get install busybox-static"
    if not found:
        raise MmtwinError(f"oracle: busybox not found; {hint}")
    path = Path(found)
    if not path.is_file():
        raise MmtwinError(f"oracle: busybox not found at {found}; {hint}")
    if not _is_static_elf(path):
        raise MmtwinError(f"oracle: busybox at {found} is not a statically linked x86-64 program; {hint}")
    return path


def compile_program(out: Path) -> None:
    """Compile the program named ``out.name`` (memhog.c, filehog.c) statically with gcc into ``out``."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise MmtwinError("oracle: gcc not found; install it: apt-get install gcc libc6-dev")
    name = out.name
    src = out.with_suffix(".c")
    src.write_bytes(program_source(name))
    (out.parent / SHARED_HEADER).write_bytes(shared_header())
    try:
        proc = subprocess.run(
            [gcc, "-static", "-O2", "-pthread", "-Wall", "-o", str(out), str(src)],
            capture_output=True, text=True, timeout=120,
            # gcc's temporary files go to the build directory (in the cache), not /tmp.
            env={**os.environ, "TMPDIR": str(out.parent)},
        )
    except subprocess.TimeoutExpired:
        raise MmtwinError(f"oracle: gcc did not finish compiling {name}.c within 120 s") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise MmtwinError(f"oracle: gcc could not link {name}.c statically ({first}); install libc6-dev")



def _toolchain() -> bytes:
    """What the static programs also depend on: gcc's version and the static libc (size, mtime)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return b"no gcc"
    try:
        version = subprocess.run([gcc, "-dumpfullversion", "-dumpversion"], capture_output=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = b"?"
    libc = b""
    for cand in ("/usr/lib/x86_64-linux-gnu/libc.a", "/usr/lib64/libc.a", "/usr/lib/libc.a"):
        try:
            st = os.stat(cand)
            libc = f"{cand}:{st.st_size}:{int(st.st_mtime)}".encode()
            break
        except OSError:
            continue
    return version.strip() + b" " + libc


def base_archive(cache: Path) -> Path:
    """The cached base initramfs (built when missing): busybox, memhog, filehog, /init."""
    busybox = find_busybox()
    bb = busybox.read_bytes()
    init = INIT_SCRIPT.replace("@@MARK@@", MARK).encode()
    snap = SNAPSHOT_SCRIPT.replace("@@MARK@@", MARK).encode()
    sources = [program_source(name) for name in PROGRAMS] + [shared_header()]
    key = hashlib.sha256(b"\0".join([bb, *sources, init, snap, _toolchain()])).hexdigest()[:16]
    path = cache / f"initramfs-{key}.cpio"
    if path.is_file():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    work = cache / f"build-{key}-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    try:
        built = {}
        for name in PROGRAMS:
            compile_program(work / name)
            built[name] = (work / name).read_bytes()
        entries: list[tuple[str, int, bytes | tuple[int, int] | None]] = [
            ("bin", stat.S_IFDIR | 0o755, None),
            ("dev", stat.S_IFDIR | 0o755, None),
            ("dev/console", stat.S_IFCHR | 0o600, (5, 1)),
            ("proc", stat.S_IFDIR | 0o755, None),
            ("sys", stat.S_IFDIR | 0o755, None),
            ("tmp", stat.S_IFDIR | 0o1777, None),
            ("bin/busybox", stat.S_IFREG | 0o755, bb),
            ("bin/sh", stat.S_IFLNK | 0o777, b"busybox"),
            ("bin/memhog", stat.S_IFREG | 0o755, built["memhog"]),
            ("bin/filehog", stat.S_IFREG | 0o755, built["filehog"]),
            ("init", stat.S_IFREG | 0o755, init),
            ("snapshot.sh", stat.S_IFREG | 0o755, snap),
        ]
        tmp = work / "initramfs.cpio"
        tmp.write_bytes(cpio(entries))
        os.replace(tmp, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return path
