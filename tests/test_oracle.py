"""mmtwin oracle: a real Linux kernel under QEMU beside the twin (docs/oracle.md).

Parsing tests read text a real 6.1 guest printed (tests/fixtures/oracle/,
recorded with `mmtwin oracle run -m x86-64-2node-24cpu --mem-mib 2048
--size-mib 1400 --cpus 0 --output-dir DIR`). Error tests use fake programs
and paths. Boot tests boot the real kernel; they skip when QEMU, a
/boot/vmlinuz-* or busybox is missing, except under CI, where they fail.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import FIXTURES

from mmtwin import cli
from mmtwin.oracle import capture, guest, procfs, run as orun
from mmtwin.errors import MmtwinError

FIX = FIXTURES / "oracle"
MACHINE = "x86-64-2node-24cpu"  # 2 nodes, distance 31


def fixture(name: str) -> str:
    return (FIX / f"6.1-2node-2g-{name}").read_text()


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


@pytest.fixture(autouse=True)
def own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Each test gets its own $XDG_CACHE_HOME (boot tests share one, below)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


# --------------------------------------------------------------------------- parsing


def test_zoneinfo_fixture() -> None:
    zones = procfs.parse_zoneinfo(fixture("before-zoneinfo"))
    assert [(z["node"], z["zone"]) for z in zones] == [
        (n, z) for n in (0, 1) for z in ("DMA", "DMA32", "Normal", "Movable", "Device")
    ]
    populated = [z for z in zones if z["present"]]
    assert [(z["node"], z["zone"]) for z in populated] == [(0, "DMA"), (0, "DMA32"), (1, "DMA32")]
    dma = populated[0]
    assert (dma["spanned"], dma["present"], dma["managed"]) == (4095, 3998, 3840)
    assert dma["start_pfn"] == 1
    assert len(dma["protection"]) == 5 and dma["protection"][0] == 0 and dma["protection"][1] > 0
    for z in populated:
        assert 0 < z["min"] < z["low"] < z["high"] < z["managed"] <= z["present"] <= z["spanned"]
        assert z["stats"]["nr_free_pages"] == z["free"]
        assert len(z["pagesets"]) == 8 and all("batch" in p and "vm_stats_threshold" in p for p in z["pagesets"])
    # Per-node stats print with the first populated zone of each node.
    assert populated[0]["node_stats"] and not populated[1]["node_stats"] and populated[2]["node_stats"]
    # The two nodes are 1 GiB each: node 1 starts at pfn 262144.
    assert populated[2]["start_pfn"] == 262144
    assert sum(z["spanned"] for z in zones if z["node"] == 1) == 262112
    # Unpopulated zones: only their header fields.
    assert zones[2]["managed"] == 0 and zones[2]["stats"] == {}


def test_vmstat_numastat_buddyinfo_pagetypeinfo_fixtures() -> None:
    before, after = procfs.parse_counters(fixture("before-vmstat")), procfs.parse_counters(fixture("after-vmstat"))
    assert after["pgfault"] - before["pgfault"] >= 1400 * 256  # one fault per page touched
    assert {"pgalloc_dma", "pgalloc_dma32", "pgalloc_normal", "numa_miss", "nr_free_pages"} <= set(before)
    n1b, n1a = procfs.parse_counters(fixture("before-numastat-node1")), procfs.parse_counters(fixture("after-numastat-node1"))
    assert set(n1b) == set(orun.NUMASTAT)
    assert n1a["numa_miss"] - n1b["numa_miss"] > 50_000  # the 1400 MiB hog on CPU 0 spilled into node 1
    buddy = procfs.parse_buddyinfo(fixture("before-buddyinfo"))
    assert [(b["node"], b["zone"]) for b in buddy] == [(0, "DMA"), (0, "DMA32"), (1, "DMA32")]
    assert all(len(b["free"]) == 11 for b in buddy)
    pt = procfs.parse_pagetypeinfo(fixture("before-pagetypeinfo"))
    assert (pt["pageblock_order"], pt["pages_per_block"]) == (9, 512)
    assert {"Unmovable", "Movable", "Reclaimable"} <= {f["type"] for f in pt["free"]}
    assert len(pt["blocks"]) == 3 and all("Movable" in b["blocks"] for b in pt["blocks"])


def test_serial_split_summary_and_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = guest.split_serial(fixture("serial.log"))
    assert out.started and out.done and not out.errors
    assert out.status == {"workload": 0}
    assert out.sections[("run", "workload")].startswith("memhog: touched 358400 pages (1400 MiB)")
    assert out.sections[("info", "uname")].strip().startswith("6.1.")
    assert {ph for ph, _ in out.sections} == {"info", "before", "run", "during", "after"}
    snaps = orun.snapshots(out)
    summary = orun.summarize(snaps)
    assert summary["numastat"]["1"]["numa_miss"]["delta"] > 50_000
    assert summary["numastat"]["0"]["numa_foreign"]["delta"] == summary["numastat"]["1"]["numa_miss"]["delta"]
    assert summary["pgalloc"]["dma32"] > 300_000
    # During the hog node 0 is down to its watermarks; after it exits, free again.
    z0 = [z for z in summary["zones"] if (z["node"], z["zone"]) == (0, "DMA32")][0]
    assert z0["free_during"] < 4 * z0["high"] and z0["free_after"] > 0.9 * z0["managed"]
    # A preset from the same guest output loads and keeps the node memory.
    from mmtwin.config import load_machine

    doc = {
        "machine": MACHINE, "accel": "tcg",
        "guest": {"nodes": 2, "cpus_per_node": [4, 4], "memory_mib": [1024, 1024], "distance": [[10, 31], [31, 10]]},
        "kernel": orun.guest_info(out), "snapshots": snaps,
    }
    path = tmp_path / "captured-2n.toml"
    capture.write_preset(path, capture.preset_toml(path.stem, load_machine(MACHINE), doc))
    m = load_machine(str(path))
    assert m.topology.memory() == [1024, 1024] and m.topology.cpus() == [4, 4]
    assert m.topology.distance == [[10, 31], [31, 10]]
    zones = snaps["before"]["zoneinfo"]
    for n in (0, 1):
        # zone_pages: exactly the managed pages of each band; reserved_mib: the managed pages in use.
        assert m.topology.zone_pages[n] == [sum(z["managed"] for z in zones if z["node"] == n and z["zone"] == b)
                                           for b in ("DMA", "DMA32", "Normal")]
        in_use = sum(z["managed"] - z["free"] for z in zones if z["node"] == n and z["managed"])
        assert m.topology.reserved()[n] == in_use // 256
    # The twin on the captured machine has the kernel's zones, page for page.
    from mmtwin.engine import run_spec
    from mmtwin.config import WorkloadParams, load_kernel
    from mmtwin.resolve import resolve_spec

    res = run_spec(resolve_spec(m, load_kernel("6.1-boot"), WorkloadParams(size_gb=0.25, threads=1)))
    assert [(z["node"], z["zone"], z["present"]) for z in res["zones"]] == \
        [(z["node"], z["zone"], z["managed"]) for z in zones if z["managed"]]
    code, text, err = call(capsys, "presets", "show", str(path))
    assert code == 0, err
    assert "machine captured-2n:" in text


def test_cpio_is_deterministic_newc() -> None:
    from mmtwin.oracle import initramfs

    a = initramfs.settings_archive("HOG_MIB=1\n", "vm.x 1\n")
    assert a.startswith(b"070701") and b"TRAILER!!!" in a and len(a) % 4 == 0
    # newc header of the first entry: inode 1, mode 0100644, uid/gid 0, mtime 0.
    assert a[6:14] == b"00000001" and a[14:22] == b"000081A4" and a[22:38] == b"0" * 16 and a[46:54] == b"0" * 8


@pytest.mark.skipif(bool(shutil.which("gcc") is None or not (os.path.exists("/bin/busybox") or shutil.which("busybox"))),
                    reason="needs gcc and busybox")
def test_base_initramfs_same_bytes_in_two_caches(tmp_path: Path) -> None:
    """The base initramfs (busybox, memhog compiled then, /init) built twice from nothing is the same bytes."""
    from mmtwin.oracle import initramfs

    first = initramfs.base_archive(tmp_path / "a").read_bytes()
    second = initramfs.base_archive(tmp_path / "b").read_bytes()
    assert first == second
    assert not list((tmp_path / "a").glob("build-*"))  # the build directory (and gcc's temporaries) went away


# --------------------------------------------------------------------------- topology


def test_topology_scaling_and_cpu_cut() -> None:
    from mmtwin.config import load_machine

    m = load_machine(MACHINE)
    t = guest.guest_topology(m)
    assert t.memory_mib == [1024, 1024] and t.cpus == [4, 4]
    assert t.cut_note() == "CPUs cut to fit --max-cpus 8: node 0 12 -> 4, node 1 12 -> 4"
    assert guest.guest_topology(m, scale=0.25).memory_mib == [1536, 1536]
    t = guest.guest_topology(m, mem_mib=1000, max_cpus=3)
    assert t.memory_mib == [500, 500] and t.cpus == [2, 1] and t.cpu_ids(1) == [2]
    args = guest.qemu_args("qemu", t, Path("/k"), Path("/i"), Path("/s"), "tcg")
    line = " ".join(args)
    assert "-numa node,nodeid=0,memdev=mem0,cpus=0-1" in line and "-numa node,nodeid=1,memdev=mem1,cpus=2" in line
    assert "memory-backend-ram,id=mem1,size=500M" in line
    assert "-numa dist,src=0,dst=1,val=31" in line and "-numa dist,src=1,dst=0,val=31" in line
    assert "-m 1000M" in line and "-smp 3" in line


# --------------------------------------------------------------------------- errors


@pytest.fixture
def fake_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake qemu-system-x86_64 first on PATH (its behaviour from $FAKE_QEMU) and a fake /boot."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    qemu = bindir / "qemu-system-x86_64"
    qemu.write_text(
        "#!/bin/sh\necho $$ > \"$FAKE_QEMU_PID\"\n"
        "case \"$FAKE_QEMU\" in\n"
        "  hang) sleep 60 ;;\n"
        "  numa) echo 'qemu-system-x86_64: -numa node,nodeid=0: cannot build this' >&2; exit 1 ;;\n"
        "esac\nexit 0\n"
    )
    qemu.chmod(0o755)
    boot = tmp_path / "boot"
    boot.mkdir()
    (boot / "vmlinuz-6.1.0-0-fake").write_bytes(b"not a kernel")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("MMTWIN_ORACLE_BOOT", str(boot))
    monkeypatch.setenv("FAKE_QEMU_PID", str(tmp_path / "qemu.pid"))
    monkeypatch.setattr(guest, "host_mem_available_mib", lambda meminfo="/proc/meminfo": 16384)
    return tmp_path


RUN = ["oracle", "run", "-m", MACHINE, "--accel", "tcg"]


def test_error_qemu_missing(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = call(capsys, *RUN)
    assert code == 2 and out == ""
    assert err == "mmtwin: error: oracle: qemu-system-x86_64 not found; install it: apt-get install qemu-system-x86\n"


def test_error_no_kernel(capsys: pytest.CaptureFixture[str], fake_tools: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = fake_tools / "noboot"
    empty.mkdir()
    monkeypatch.setenv("MMTWIN_ORACLE_BOOT", str(empty))
    code, _, err = call(capsys, *RUN)
    assert code == 2
    assert err == f"mmtwin: error: oracle: no kernel image {empty}/vmlinuz-*; install one: apt-get install linux-image-cloud-amd64\n"
    code, _, err = call(capsys, *RUN, "--kernel", str(empty / "nope"))
    assert code == 2 and err.startswith("mmtwin: error: --kernel: ") and err.count("\n") == 1


def test_error_busybox_missing(capsys: pytest.CaptureFixture[str], fake_tools: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMTWIN_ORACLE_BUSYBOX", str(fake_tools / "no-busybox"))
    code, _, err = call(capsys, *RUN)
    assert code == 2
    assert err == (f"mmtwin: error: oracle: busybox not found at {fake_tools / 'no-busybox'}; "
                   "install it: apt-get install busybox-static\n")
    dynamic = fake_tools / "busybox-dyn"
    shutil.copy("/bin/sh" if os.path.exists("/bin/sh") else "/usr/bin/env", dynamic)
    monkeypatch.setenv("MMTWIN_ORACLE_BUSYBOX", str(dynamic))
    code, _, err = call(capsys, *RUN)
    assert code == 2 and "is not a statically linked x86-64 program; install it: apt-get install busybox-static" in err


def test_error_non_x86_preset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capsys, "oracle", "run", "-m", "sgi-altix-28node")
    assert code == 2 and out == ""
    assert err == ("mmtwin: error: --machine: 'sgi-altix-28node' is an ia64 machine; the oracle boots x86-64 guests "
                   "only (arch = \"x86_64\" presets)\n")
    code, _, err = call(capsys, "oracle", "capture", "-m", "sgi-altix-28node", "--out", "/tmp/x.toml")
    assert code == 2 and "is an ia64 machine" in err


def test_error_more_memory_than_host(capsys: pytest.CaptureFixture[str], fake_tools: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guest, "host_mem_available_mib", lambda meminfo="/proc/meminfo": 3000)
    code, _, err = call(capsys, *RUN, "--mem-mib", "4096", "--size-mib", "100")
    assert code == 2
    assert err == ("mmtwin: error: --mem-mib: a 4096 MiB guest is not allowed; this host has 3000 MiB available "
                   "(MemAvailable); give a smaller --mem-mib or --scale\n")


def test_error_topology_qemu_rejects(capsys: pytest.CaptureFixture[str], fake_tools: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_QEMU", "numa")
    code, _, err = call(capsys, *RUN, "--size-mib", "100")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("mmtwin: error: oracle: qemu-system-x86_64 could not build this topology or boot (exit 1): "
                          "qemu-system-x86_64: -numa node,nodeid=0: cannot build this")


def test_error_timeout_kills_qemu(capsys: pytest.CaptureFixture[str], fake_tools: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_QEMU", "hang")
    start = time.monotonic()
    code, _, err = call(capsys, *RUN, "--size-mib", "100", "--timeout", "1")
    assert time.monotonic() - start < 30
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("mmtwin: error: --timeout: the guest did not finish within 1 s; QEMU was killed")
    pid = int((fake_tools / "qemu.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--size-mib", "5000"], "--size-mib: 5000 is not allowed; the 2048 MiB guest has no swap, so the hog must be at most 1856 MiB"),
        (["--size-mib", "5000", "--swap-mib", "1024"],
         "--size-mib: 5000 is not allowed; with 1024 MiB of swap the 2048 MiB guest holds a hog of at most 2880 MiB"),
        (["--swap-mib", "32"], "--swap-mib: 32 is not allowed; expected 64 to 1048576 MiB"),
        (["--passes", "0"], "--passes: 0 is not allowed; expected 1 to 1000"),
        (["--passes", "1001"], "--passes: 1001 is not allowed; expected 1 to 1000"),
        (["-w", "largedd", "--set", "copies=2", "--set", "download_mib_s=50"], "--set: tar_mib: missing; this key is required"),
        (["-w", "largedd", "--set", "tar_mib=0", "--set", "copies=2", "--set", "download_mib_s=50"],
         "--set: tar_mib: 0 is not allowed; expected the tarfile's size in MiB > 0"),
        (["-w", "largedd", "--set", "tar_mib=10", "--set", "copies=2", "--set", "download_mib_s=50", "--set", "dd_kib=3"],
         "--set: dd_kib=3 is not allowed in the guest; expected a divisor of 4 KiB (0.5, 1, 2, 4) or a multiple of 4 KiB"),
        (["-w", "largedd", "--set", "tar_mib=10", "--set", "copies=2", "--set", "download_mib_s=50", "--set", "dd_kib=2048"],
         "--set: dd_kib=2048 is not allowed in the guest"),
        (["-w", "largedd", "--set", "tar_mib=0.001", "--set", "copies=2", "--set", "download_mib_s=50"],
         "--set: tar_mib=0.001 is not allowed; the tarfile must be at least one 4 KiB page"),
        (["-w", "largedd", "--set", "tar_mib=0.004", "--set", "copies=2000000", "--set", "download_mib_s=50"],
         "--set: copies=2000000 is not allowed in the guest; expected 1 to 1048576"),
        (["-w", "largedd", "--fsmark", "-d /x -D 2 -N 2 -L 1", "--set", "tar_mib=10"],
         "--fsmark: not allowed with --workload largedd; give --workload fsmark"),
        (["-w", "mmapstream", "--fs", "xfs", "--size-mib", "250", "--disk-mib", "300"],
         "--disk-mib: 300 is not allowed for a 250 MiB workload; its files need at least 344 MiB with xfs's own metadata"),
        (["-w", "largedd", "--set", "files=2"], "--set: 'files=2' is not allowed; expected KEY=VALUE with KEY one of tar_mib, copies"),
        (["-w", "largedd", "--size-mib", "100"], "--size-mib: 100 is not allowed with --workload largedd; give the tarfile's size"),
        (["--set", "tar_mib=10"], "--set: 'tar_mib=10' is not allowed with --workload memhog; only largedd takes --set"),
        (["--fs", "btrfs", "-w", "mmapstream"], "--fs: 'btrfs' is not allowed; expected one of ext4, xfs"),
        (["--fs", "xfs"], "--fs: xfs is not allowed with the memhog workload, which writes no files"),
        (["--fs", "xfs", "-w", "mmapstream", "--disk-mib", "200", "--size-mib", "10"],
         "--disk-mib: 200 is not allowed with --fs xfs; mkfs.xfs makes filesystems of 300 MiB or more"),
        (["--fs", "xfs", "-w", "mmapstream", "--trace", "/tmp/t.txt"],
         "--trace: '/tmp/t.txt' is not allowed with --fs xfs; the host reads the trace out of an ext4 disk"),
        (["-w", "mmapstream", "--passes", "2"],
         "--passes: 2 is not allowed with --workload mmapstream; only the memory hog makes several passes"),
        (["--threads", "9"], "--threads: 9 is not allowed; the guest has 8 CPUs and each thread gets its own"),
        (["--threads", "2", "--cpus", "0"], "--cpus: 1 CPUs for 2 threads is not allowed; give one CPU per thread"),
        (["--threads", "2", "--cpus", "0,0"], "--cpus: CPU 0 twice is not allowed; each thread gets its own CPU"),
        (["--timeout", "nan"], "--timeout: nan is not allowed; expected seconds, more than 0 and at most 86400"),
        (["--timeout", "inf"], "--timeout: inf is not allowed; expected seconds"),
        (["--cpus", "8"], "--cpus: CPU 8 is not allowed; the guest has CPUs 0-7"),
        (["--sysctl", "zone_reclaim_mode"], "--sysctl: 'zone_reclaim_mode' is not allowed; expected KEY=VALUE"),
        (["--sysctl", "vm.min_free_kbytes=1;reboot"], "--sysctl: vm.min_free_kbytes: value '1;reboot' is not allowed"),
        (["--mem-mib", "100"], "--mem-mib: 100 is not allowed; the guest needs at least 256 MiB"),
        (["--scale", "0.001"], "--scale: 0.001 gives node 0 6 MiB; every guest node needs at least 64 MiB"),
        (["--scale", "2"], "--scale: 2.0 is not allowed; expected a number S with 0 < S <= 1"),
        (["--mem-mib", "1024", "--scale", "0.5"], "--mem-mib: give --mem-mib or --scale, not both"),
        (["--accel", "xen"], "--accel: 'xen' is not allowed; expected auto, kvm or tcg"),
        (["--max-cpus", "0"], "--max-cpus: 0 is not allowed; expected at least 1"),
        (["-w", "dd"], "--workload: 'dd' is not allowed; expected one of memhog, mmapstream"),
        (["--disk-mib", "512"], "--disk-mib: 512 is not allowed with the memhog workload, which uses no disk"),
        (["-w", "mmapstream", "--disk-mib", "10"], "--disk-mib: 10 is not allowed; expected 64 to 1048576 MiB"),
        (["-w", "mmapstream", "--size-mib", "1000", "--disk-mib", "1024"],
         "--disk-mib: 1024 is not allowed for a 1000 MiB workload; its files need at least 1100 MiB"),
        (["-w", "mmapstream", "--size-mib", "0"], "--size-mib: 0 is not allowed; expected at least 1"),
        (["-w", "mmapstream", "--size-mib", "900000"],
         "--size-mib: 900000 is not allowed; a file workload writes at most 838656 MiB"),
        (["-w", "fsmark"], "--fsmark: missing; --workload fsmark needs fs_mark's command line"),
        (["-w", "fsmark", "--fsmark", "-d /x -D 2 -N 2 -n 10 -L 1", "--size-mib", "10"],
         "--size-mib: 10 is not allowed with --workload fsmark; its size follows from --fsmark"),
        (["-w", "fsmark", "--fsmark", "-d /x -D 2 -N 2 -n 10 -L 1", "-t", "2"],
         "--threads: 2 is not allowed with --workload fsmark; give -t in --fsmark"),
        (["-w", "fsmark", "--fsmark", "-d /x -D 2 -N 2 -n 10 -L 1 -S 1"], "--fsmark: sync_method: 1 is not simulated"),
        (["-w", "fsmark", "--fsmark", "-d /x -D 2 -N 2 -n 0 -L 1"], "--fsmark: files: 0 is not allowed"),
        (["--fsmark", "-d /x -D 2 -N 2 -L 1"], "--fsmark: not allowed with --workload memhog; give --workload fsmark"),
        (["-w", "fsmark", "--fsmark", "-d /x -D 2 -N 2 -n 10 -L 1", "--cpus", "9"],
         "--cpus: CPU 9 is not allowed; the guest has CPUs 0-7"),
        (["-w", "mmapstream", "--trace", "/nonexistent-dir/t.txt"],
         "--trace: '/nonexistent-dir/t.txt': directory '/nonexistent-dir' does not exist"),
    ],
)
def test_bad_input_one_line(capsys: pytest.CaptureFixture[str], fake_tools: Path, args: list[str], message: str) -> None:
    code, out, err = call(capsys, *RUN, *args)
    assert code == 2 and out == ""
    assert err.startswith(f"mmtwin: error: {message}"), err
    assert err.count("\n") == 1


def test_sigterm_kills_qemu(fake_tools: Path) -> None:
    """SIGTERM (or SIGHUP) to mmtwin takes QEMU down with it, as Ctrl-C and the timeout do."""
    import signal
    import subprocess
    import sys

    env = {**os.environ, "FAKE_QEMU": "hang"}
    proc = subprocess.Popen([sys.executable, "-m", "mmtwin", *RUN, "--size-mib", "100", "--timeout", "60"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pidfile = fake_tools / "qemu.pid"
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    qemu_pid = int(pidfile.read_text())
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) != 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(qemu_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(qemu_pid, 9)
        raise AssertionError("QEMU outlived mmtwin after SIGTERM")


def test_garbled_serial_is_an_error() -> None:
    """A kernel message that splits a marker line must not pass as a shorter dump."""
    text = fixture("serial.log")
    mark = "@@MMTWIN-ORACLE END before vmstat"
    assert mark in text
    broken = text.replace(mark, "@@MMTWIN-ORA[   12.345678] printk\nCLE END before vmstat", 1)
    out = guest.split_serial(broken)
    assert out.broken, "a split END marker went unnoticed"
    assert ("before", "vmstat") not in out.sections
    assert not guest.split_serial(text).broken


def test_failed_hog_is_an_error(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A hog the guest killed (OOM: exit 137) is reported, not summarised as a run."""
    text = fixture("serial.log").replace("@@MMTWIN-ORACLE STATUS workload 0", "@@MMTWIN-ORACLE STATUS workload 137")
    out = guest.split_serial(text)
    assert out.status == {"workload": 137}
    monkeypatch.setattr(guest, "boot", lambda *a, **k: guest.BootResult(out, 1.0, "tcg", Path("/boot/x"), ["qemu"]))
    monkeypatch.setattr(guest, "host_mem_available_mib", lambda meminfo="/proc/meminfo": 16384)
    code, _, err = call(capsys, "oracle", "run", "-m", MACHINE, "--mem-mib", "2048", "--size-mib", "1400", "--cpus", "0")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("mmtwin: error: --size-mib: the hog of 1400 MiB failed in the guest, exit status 137 (137: killed")


def test_clean_refused_while_a_guest_runs(capsys: pytest.CaptureFixture[str], own_cache: Path) -> None:
    import subprocess
    import sys

    # A live process that is not mmtwin (a pid reused after a failed run kept its directory) does not count.
    other = subprocess.Popen(["sleep", "30"])
    # One whose command line names mmtwin does.
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "mmtwin"])
    try:
        stale = own_cache / "mmtwin" / "oracle" / "runs" / f"{other.pid}-1"
        stale.mkdir(parents=True)
        run = own_cache / "mmtwin" / "oracle" / "runs" / f"{sleeper.pid}-1"
        run.mkdir(parents=True)
        code, _, err = call(capsys, "oracle", "clean")
        assert code == 2 and f"process {sleeper.pid} is running a guest" in err
        assert run.exists()
        run.rmdir()
        code, out, _ = call(capsys, "oracle", "clean")
        assert code == 0 and out.startswith("removed ")
    finally:
        for p in (other, sleeper):
            p.kill()
            p.wait()


def test_capture_writes_only_a_preset_that_loads(tmp_path: Path) -> None:
    target = tmp_path / "cap.toml"
    target.write_text("keep me\n")
    with pytest.raises(MmtwinError, match=r"does not load \(an mmtwin bug\), nothing written"):
        capture.write_preset(target, 'name = "cap"\narch = "x86_64"\n')
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.toml"]  # no scratch left behind


def test_capture_out_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = call(capsys, "oracle", "capture", "-m", MACHINE, "--out", str(tmp_path / "x.txt"))
    assert code == 2 and "--out: " in err and "ends in .toml" in err
    code, _, err = call(capsys, "oracle", "capture", "-m", MACHINE, "--out", str(tmp_path / "no" / "x.toml"))
    assert code == 2 and "does not exist" in err


def test_clean(capsys: pytest.CaptureFixture[str], own_cache: Path) -> None:
    code, out, _ = call(capsys, "oracle", "clean")
    assert code == 0 and out.startswith("nothing to remove: ")
    (own_cache / "mmtwin" / "oracle" / "runs").mkdir(parents=True)
    (own_cache / "mmtwin" / "oracle" / "initramfs-x.cpio").write_text("x")
    code, out, _ = call(capsys, "oracle", "--clean")
    assert code == 0 and out == f"removed {own_cache / 'mmtwin' / 'oracle'}\n"
    assert not (own_cache / "mmtwin" / "oracle").exists()
    assert (own_cache / "mmtwin").exists()


def test_help_is_true(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = call(capsys, "oracle", "--help")
    assert code == 0 and all(c in out for c in ("run", "capture", "clean", "--clean"))
    code, out, _ = call(capsys, "oracle", "run", "--help")
    for opt in ("--mem-mib", "--scale", "--threads", "--cpus", "--size-mib", "--sysctl", "--max-cpus", "--kernel",
                "--accel", "--timeout", "--json", "--output-dir", "--workload", "--disk-mib"):
        assert opt in out
    code, out, _ = call(capsys, "oracle", "compare", "--help")
    assert code == 0 and "--workload" in out and "--disk-mib" in out


def test_compare_twin_from_fixture() -> None:
    """The twin built from a recorded 6.1 run: its layout is the guest's, and it places the hog as the guest did.
    The recorded guest did not recompute its watermarks (oracle run does not), so they come from the managed
    counts of early boot and the comparison must report them as different."""
    from mmtwin.config import load_machine
    from mmtwin.engine import run_spec, strip_perf
    from mmtwin.oracle import compare as ocmp

    out = guest.split_serial(fixture("serial.log"))
    snaps = orun.snapshots(out)
    doc = {
        "machine": MACHINE, "accel": "tcg",
        "guest": {"nodes": 2, "cpus_per_node": [4, 4], "memory_mib": [1024, 1024], "distance": [[10, 31], [31, 10]]},
        "kernel": orun.guest_info(out), "snapshots": snaps, "summary": orun.summarize(snaps),
        "workload": {"size_mib": 1400, "threads": 1, "cpus": [0]},
    }
    spec, disk = ocmp.twin_spec(load_machine(MACHINE), doc)
    assert disk is None and spec["machine"]["storage"] is None  # the memory hog has no disk
    zones = [z for z in snaps["before"]["zoneinfo"] if z["managed"]]
    assert [[z["present_pages"] for z in n["zones"]] for n in spec["machine"]["nodes"]] == \
        [[z["managed"] for z in zones if z["node"] == 0], [z["managed"] for z in zones if z["node"] == 1]]
    assert spec["kernel"]["min_free_kbytes"] == int(doc["kernel"]["sysctl"]["vm.min_free_kbytes"])
    twin = strip_perf(run_spec(spec))
    cmp = ocmp.compare(doc, twin)
    assert cmp["placement_within"], cmp["placement"]
    faults = [r for r in cmp["placement"] if r["what"] == "pgfault"][0]
    assert faults["twin"] == 1400 * 256 and 0 <= faults["real"] - faults["twin"] < 3584
    assert not cmp["watermarks_exact"]  # boot-time watermarks, from other managed counts
    row = [z for z in cmp["zones"] if (z["node"], z["zone"]) == (0, "DMA32")][0]
    assert row["min"]["real"] != row["min"]["twin"] and abs(row["min"]["real"] - row["min"]["twin"]) < 20
    # 6.1 prints the watermarks with the zone's boost added: compared under it.
    import copy

    boosted = copy.deepcopy(doc)
    tz = {(z["node"], z["zone"]): z for z in twin["zones"]}
    for z in boosted["snapshots"]["before"]["zoneinfo"]:
        t = tz.get((z["node"], ocmp.TWIN_ZONE.get(z["zone"], z["zone"])))
        if z["managed"] and t is not None:
            z.update(min=t["min"] + 512, low=t["low"] + 512, high=t["high"] + 512, boost=512)
    rows = {(r["node"], r["zone"]): r for r in ocmp.compare(boosted, twin)["zones"]}
    assert rows[(0, "DMA32")]["boost"] == 512 and rows[(0, "DMA32")]["min"] == {"real": tz[(0, "DMA32")]["min"],
                                                                              "twin": tz[(0, "DMA32")]["min"]}
    for z in boosted["snapshots"]["before"]["zoneinfo"]:
        z["boost"] = 0
    assert ocmp.compare(boosted, twin)["zones"][1]["min"]["real"] == ocmp.compare(boosted, twin)["zones"][1]["min"]["twin"] + 512
    # A twin that placed the hog elsewhere would be caught.
    for z in twin["zones"]:
        z["numa_miss"] = z["numa_miss"] * 2
    assert not ocmp.compare(doc, twin)["placement_within"]
    text = ocmp.format_compare(doc, cmp)
    assert "watermarks, protection and per-cpu lists: DIFFERENT; placement: within 5% (or within the guest's own 3584 pages" in text
    # The per-cpu lists: the 6.1-boot profile sizes them as 6.1 did; 4.11's sizing would not.
    assert (row["pcp_batch"], row["pcp_high"]) == ({"real": 63, "twin": 63}, {"real": 252, "twin": 252})
    spec["kernel"]["pcp_sizing"] = "6x-batch"
    old = ocmp.compare(doc, strip_perf(run_spec(spec)))
    row = [z for z in old["zones"] if (z["node"], z["zone"]) == (0, "DMA32")][0]
    assert (row["pcp_batch"]["twin"], row["pcp_high"]["twin"]) == (31, 186)


def test_file_workload_settings() -> None:
    """mmapstream's defaults: 1.5 x the guest's memory, on a disk with room for ext4's metadata."""
    from mmtwin.config import load_machine

    topo = guest.guest_topology(load_machine(MACHINE), 1024, None, 8)
    wl = orun.workload(topo, None, 2, None, "mmapstream")
    assert wl == {"kind": "mmapstream", "size_mib": 1536, "threads": 2, "cpus": [0, 1], "disk_mib": 2176, "fs": "ext4"}
    # Larger than the guest is the point of a file workload; the memory hog may not be.
    assert orun.workload(topo, 3000, 1, "3", "mmapstream", 4096)["disk_mib"] == 4096
    conf, _ = orun._settings(wl, [])
    assert "WORKLOAD=mmapstream\n" in conf and "DISK=1\n" in conf and "HOG_MIB=1536\n" in conf and "FS=ext4\n" in conf
    # xfs: the same, on a disk of at least 300 MiB (mkfs.xfs's smallest).
    x = orun.workload(topo, 20, 1, None, "mmapstream", fs="xfs")
    assert (x["fs"], x["disk_mib"]) == ("xfs", 300) and "FS=xfs\n" in orun._settings(x, [])[0]
    assert orun.describe_workload(x).endswith("files on xfs on a 300 MiB virtio disk")
    conf, _ = orun._settings(orun.workload(topo, 100, 1, None), [])
    assert "WORKLOAD=memhog\n" in conf and "DISK=0\n" in conf
    with pytest.raises(MmtwinError, match="the 1024 MiB guest has no swap"):
        orun.workload(topo, 3000, 1, None)


def test_swap_settings_and_disks() -> None:
    """--swap-mib: the memory hog may outgrow the guest; /init gets SWAP=1 and the passes; QEMU a second
    virtio disk after the file workload's (vdb), or the only one (vda)."""
    from mmtwin.config import load_machine

    topo = guest.guest_topology(load_machine(MACHINE), 1024, None, 8)
    wl = orun.workload(topo, 1200, 1, "0", swap_mib=768, passes=2)
    assert wl == {"kind": "memhog", "size_mib": 1200, "threads": 1, "cpus": [0], "swap_mib": 768, "passes": 2}
    conf, _ = orun._settings(wl, [])
    assert "SWAP=1\n" in conf and "HOG_PASSES=2\n" in conf and "DISK=0\n" in conf
    assert "SWAP=0\n" in orun._settings(orun.workload(topo, 100, 1, None), [])[0]
    assert orun.workload(topo, None, 1, None, "mmapstream", swap_mib=64)["swap_mib"] == 64
    assert orun.describe_workload(wl) == "memhog 1200 MiB, 2 passes, 1 thread(s) on CPU 0, 768 MiB of swap on a virtio disk"
    args = guest.qemu_args("qemu", topo, Path("/k"), Path("/i"), Path("/s"), "tcg", Path("/d.img"), Path("/w.img"))
    drives = [a for a in args if a.startswith("file=")]
    assert [d.split(",")[0] for d in drives] == ["file=/d.img", "file=/w.img"]
    args = guest.qemu_args("qemu", topo, Path("/k"), Path("/i"), Path("/s"), "tcg", None, Path("/w.img"))
    assert [a.split(",")[0] for a in args if a.startswith("file=")] == ["file=/w.img"]
    assert args.count("virtio-blk-pci,drive=vd1,num-queues=1") == 1
    # --trace: the hog gets a disk for the trace (vda, DISK=1), the swap disk is then vdb; a file
    # workload keeps its own.
    hog = orun.workload(topo, 100, 1, "0")
    orun.add_trace_disk(hog, 24)
    assert (hog["disk_mib"], hog["fs"]) == (64 + 8 * 24, "ext4") and "DISK=1\n" in orun._settings(hog, [])[0]
    assert not orun.uses_disk(hog)  # the trace's disk is not the workload's: no calibration, no twin disk
    orun.add_trace_disk(wl, 8)
    assert orun.uses_disk(wl) and wl["disk_mib"] == 128
    assert orun.describe_workload(wl).endswith(", 768 MiB of swap on a virtio disk, a 128 MiB ext4 virtio disk for the trace")
    from mmtwin.oracle import compare as ocmp

    st = ocmp.twin_storage(wl)
    assert [d["name"] for d in st["devices"]] == ["vda"] and st["swap"] == {"device": 0, "size_mib": 768}
    assert ocmp.twin_storage(hog) is None
    ms = orun.workload(topo, None, 2, None, "mmapstream")
    orun.add_trace_disk(ms, 8)
    assert ms["disk_mib"] == 2176 and "disk_for" not in ms and orun.uses_disk(ms)


def test_calibration_parsed_and_the_twins_disk_derived() -> None:
    """The guest's O_DIRECT writes and calibration hog give the twin's disk: its rate times F and its access
    over F, F the guest's hog time over the twin's for the same hog on the same layout."""
    from mmtwin.config import load_machine
    from mmtwin.oracle import compare as ocmp

    out = guest.GuestOutput(serial="", sections={
        ("calib", "write-1m"): "directwrite: 33554432 bytes in 32 writes in 0.064000 s\n",
        ("calib", "write-4k"): "directwrite: 1048576 bytes in 256 writes in 0.128000 s\n",
        ("calib", "memhog"): "memhog: touched 16384 pages (64 MiB, 1 pass) with 1 threads in 0.500 s\n"})
    cal = orun.calibration(out)
    assert cal == {"write_1m": {"bytes": 33554432, "writes": 32, "seconds": 0.064},
                   "write_4k": {"bytes": 1048576, "writes": 256, "seconds": 0.128},
                   "memhog": {"pages": 16384, "seconds": 0.5}}
    assert orun.calibration(guest.GuestOutput(serial="")) is None
    out.sections[("calib", "write-4k")] = "filehog: directwrite: write 3 to /dev/vda: No space left on device\n"
    with pytest.raises(MmtwinError, match="calibration is incomplete \\(write_4k: filehog: directwrite: write 3 to "
                                          "/dev/vda: No space left on device\\)"):
        orun.calibration(out)
    snaps = orun.snapshots(guest.split_serial(fixture("serial.log")))
    doc = {
        "machine": MACHINE, "accel": "tcg",
        "guest": {"nodes": 2, "cpus_per_node": [4, 4], "memory_mib": [1024, 1024], "distance": [[10, 31], [31, 10]]},
        "kernel": orun.guest_info(guest.split_serial(fixture("serial.log"))), "snapshots": snaps,
        "workload": {"kind": "memhog", "size_mib": 2400, "threads": 1, "cpus": [0], "swap_mib": 1024, "passes": 2},
        "calibration": cal,
    }
    spec, disk = ocmp.twin_spec(load_machine(MACHINE), doc)
    f = disk["calibration"]["factor"]
    assert f == pytest.approx(0.5 / disk["calibration"]["twin_hog_s"]) and f > 1  # an emulated guest is slower
    assert disk["bandwidth_mib_s"] == round(500 * f) and disk["access_us"] == round(500 / f)
    st = spec["machine"]["storage"]
    assert [(d["name"], d["size_mib"], d["bandwidth_mib_s"]) for d in st["devices"]] == [("vda", 1025, disk["bandwidth_mib_s"])]
    assert st["swap"] == {"device": 0, "size_mib": 1024} and st["fs"]["size_mib"] == 1
    assert spec["workload"]["passes"] == 2 and spec["workload"]["bytes"] == 2400 << 20
    # With a file workload's disk too, the swap disk is the second one; a guest that measured nothing
    # leaves the twin the stand-in's own figures.
    doc["workload"] = {"kind": "mmapstream", "size_mib": 1536, "threads": 2, "cpus": [0, 1], "disk_mib": 2176,
                       "fs": "ext4", "swap_mib": 256}
    doc["calibration"] = None
    spec, disk = ocmp.twin_spec(load_machine(MACHINE), doc)
    assert [d["name"] for d in spec["machine"]["storage"]["devices"]] == ["vda", "vdb"]
    assert spec["machine"]["storage"]["swap"] == {"device": 1, "size_mib": 256}
    assert disk["calibration"] is None and disk["bandwidth_mib_s"] == ocmp.VIRTIO_DISK["bandwidth_mib_s"]


def _one_node_run(pages: int, vmstat_delta: dict, workload: dict) -> dict:
    """A real run's record on a one-node guest of 1 GiB whose `pages` all came from node 0's DMA32."""
    numa = {k: {"delta": 0} for k in orun.NUMASTAT}
    return {
        "machine": MACHINE, "accel": "tcg",
        "guest": {"nodes": 1, "cpus_per_node": [2], "memory_mib": [1024], "distance": [[10]]},
        "kernel": {"release": "6.1.0-test"},
        "snapshots": {"before": {"zoneinfo": []}},
        "summary": {"numastat": {"0": {**numa, "numa_hit": {"delta": pages}}}, "pgalloc": {"dma32": pages},
                    "vmstat_delta": vmstat_delta},
        "workload": workload,
    }


def test_compare_memory_hog_under_swap_holds_only_its_faults() -> None:
    """With swap the hog is under reclaim: one pass holds its faults (one a page) and reports the rest,
    placement included; several passes hold nothing."""
    from mmtwin.oracle import compare as ocmp

    pages = 1200 * 256
    doc = _one_node_run(pages, {"pgfault": pages + 2000, "pswpout": 90_000, "pgscan_kswapd": 300_000},
                        {"kind": "memhog", "size_mib": 1200, "threads": 1, "cpus": [0], "swap_mib": 768, "passes": 1})
    twin = {"zones": [{"node": 0, "zone": "DMA32", "numa_hit": pages // 3, "numa_miss": 0, "numa_foreign": 0,
                       "numa_local": pages // 3, "numa_other": 0, "pgalloc": pages // 3}],
            "vmstat_start": {}, "vmstat": {"pgfault": pages, "pswpout": 10, "pgscan_kswapd": 5}}
    cmp = ocmp.compare(doc, twin)
    assert [r["what"] for r in cmp["placement"]] == ["pgfault"] and cmp["placement_within"]
    rep = {r["what"]: r for r in cmp["reported"]}
    assert (rep["pswpout"]["real"], rep["pswpout"]["twin"]) == (90_000, 10)
    assert rep["node 0 numa_hit"]["twin"] == pages // 3 and "pgalloc_dma32" in rep
    twin["vmstat"]["pgfault"] = pages // 2  # a twin whose hog stopped half way is caught
    assert not ocmp.compare(doc, twin)["placement_within"]
    doc["workload"]["passes"] = 2
    cmp = ocmp.compare(doc, twin)
    assert cmp["placement"] == [] and cmp["placement_within"]
    assert "(none: with several passes under swap" in ocmp.format_compare(doc, cmp)


def _fake_modules(root: Path, release: str, dep: str, builtin: str = "kernel/fs/ext4/ext4.ko\n") -> None:
    base = root / release
    base.mkdir(parents=True)
    (base / "modules.dep").write_text(dep)
    (base / "modules.builtin").write_text(builtin)
    for line in dep.splitlines():
        path = line.partition(":")[0]
        (base / path).parent.mkdir(parents=True, exist_ok=True)
        (base / path).write_bytes(b"\x7fELF " + path.encode())


def test_disk_modules_in_load_order(tmp_path: Path) -> None:
    from mmtwin.oracle import initramfs

    dep = ("kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_modern_dev.ko "
           "kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n"
           "kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko\n"
           "kernel/drivers/virtio/virtio_ring.ko:\n"
           "kernel/drivers/virtio/virtio_pci_modern_dev.ko:\n"
           "kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n"
           "kernel/fs/xfs/xfs.ko: kernel/lib/libcrc32c.ko\n")
    _fake_modules(tmp_path, "6.1.0-9-test", dep)
    names = [p.name for p in initramfs.disk_modules("6.1.0-9-test", tmp_path)]
    assert names == ["virtio_pci_modern_dev.ko", "virtio_ring.ko", "virtio.ko", "virtio_pci.ko", "virtio_blk.ko"]
    for i, name in enumerate(names):  # every module after what it depends on
        for line in dep.splitlines():
            head, _, rest = line.partition(":")
            if head.endswith("/" + name):
                assert all(names.index(Path(d).name) < i for d in rest.split())
    archive = initramfs.modules_archive("6.1.0-9-test", tmp_path)
    assert b"modules/load" in archive and b"virtio_ring.ko\nvirtio.ko\n" in archive
    # xfs and what it needs, for --fs xfs; a swap disk alone needs no filesystem.
    assert [p.name for p in initramfs.disk_modules("6.1.0-9-test", tmp_path, ("xfs",))][-2:] == ["libcrc32c.ko", "xfs.ko"]
    assert [p.name for p in initramfs.disk_modules("6.1.0-9-test", tmp_path, ())] == names
    # A driver the kernel has built in is not loaded; one it lacks is a one-line error.
    _fake_modules(tmp_path, "6.1.0-8-test", dep, builtin="kernel/drivers/block/virtio_blk.ko\nkernel/fs/ext4/ext4.ko\n")
    assert [p.name for p in initramfs.disk_modules("6.1.0-8-test", tmp_path)][-1] == "virtio_pci.ko"
    # ext4 as a module comes after what it needs; a cycle in a broken modules.dep ends.
    _fake_modules(tmp_path, "6.1.0-5-test", dep + "kernel/fs/ext4/ext4.ko: kernel/fs/jbd2/jbd2.ko kernel/lib/crc16.ko\n"
                  "kernel/fs/jbd2/jbd2.ko: kernel/fs/ext4/ext4.ko\nkernel/lib/crc16.ko:\n", builtin="")
    names = [p.name for p in initramfs.disk_modules("6.1.0-5-test", tmp_path)]
    assert names[-3:] == ["jbd2.ko", "crc16.ko", "ext4.ko"] and len(names) == len(set(names))
    _fake_modules(tmp_path, "6.1.0-7-test", "kernel/drivers/virtio/virtio_pci.ko:\n")
    with pytest.raises(MmtwinError, match="has no module virtio_blk"):
        initramfs.disk_modules("6.1.0-7-test", tmp_path)
    with pytest.raises(MmtwinError, match="modules.dep is missing; install the kernel's package"):
        initramfs.disk_modules("6.1.0-6-missing", tmp_path)
    assert initramfs.kernel_release(Path("/boot/vmlinuz-6.1.0-56-cloud-amd64")) == "6.1.0-56-cloud-amd64"
    with pytest.raises(MmtwinError, match="expected /boot/vmlinuz-RELEASE"):
        initramfs.kernel_release(Path("/tmp/bzImage"))


def test_largedd_settings_for_the_guest_and_the_twin() -> None:
    """--workload largedd --set ...: the twin's fields and checks; the disk holds the tarfile and every copy;
    the twin runs the same workload on the guest's layout."""
    from mmtwin.config import load_machine
    from mmtwin.oracle import compare as ocmp

    topo = guest.guest_topology(load_machine(MACHINE), 1024, None, 8)
    wl = orun.workload(topo, None, 1, "0-3", "largedd",
                       sets=["tar_mib=300", "copies=3", "dd_kib=0.5", "download_mib_s=40"])
    assert wl["largedd"] == {"tar_mib": 300, "copies": 3, "dd_kib": 0.5, "download_mib_s": 40,
                             "tar_bytes": 300 << 20, "dd_bytes": 512}
    assert (wl["size_mib"], wl["disk_mib"], wl["cpus"]) == (1200, 1200 + 300 + 256, [0, 1, 2, 3])
    conf, _ = orun._settings(wl, [])
    assert "WORKLOAD=largedd\n" in conf and f"LARGEDD_ARGS='{300 << 20} 3 512 40'\n" in conf and "DISK=1\n" in conf
    assert orun.describe_workload(wl).startswith("largedd 300 MiB tarfile at 40 MiB/s, 3 dd copies with bs=512")
    snaps = orun.snapshots(guest.split_serial(fixture("serial.log")))
    doc = {"machine": MACHINE, "accel": "tcg",
           "guest": {"nodes": 2, "cpus_per_node": [4, 4], "memory_mib": [1024, 1024], "distance": [[10, 31], [31, 10]]},
           "kernel": orun.guest_info(guest.split_serial(fixture("serial.log"))), "snapshots": snaps, "workload": wl}
    spec, disk = ocmp.twin_spec(load_machine(MACHINE), doc)
    w = spec["workload"]
    assert (w["kind"], w["tar_bytes"], w["copies"], w["dd_bytes"], w["download_mib_s"], w["cpus"]) == \
        ("largedd", 300 << 20, 3, 512, 40, [0, 1, 2, 3])
    assert spec["machine"]["storage"]["fs"] == {"kind": "ext4", "device": 0, "size_mib": 1756}
    assert ocmp.FILE_HELD["largedd"] == ("nr_dirtied",)


def test_filehog_largedd_on_the_host(tmp_path: Path) -> None:
    """filehog largedd: the tarfile written at the download rate, copied, the copies deleted after COMMAND."""
    import subprocess

    exe = tmp_path / "filehog"
    src = Path(orun.__file__).with_name("filehog.c")
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True)
    work = tmp_path / "d"
    work.mkdir()
    t0 = time.monotonic()
    out = subprocess.run([str(exe), "largedd", str(work), str(2 << 20), "2", "4096", "10", "0",
                          f"ls {work} > {tmp_path / 'during'}"], capture_output=True, text=True, check=True).stdout
    assert time.monotonic() - t0 >= 0.15  # 2 MiB at 10 MiB/s: the download is paced
    assert "largedd copied 2097152 bytes 2 times with 4096-byte calls" in out and "deleted the copies" in out
    assert (tmp_path / "during").read_text().split() == ["copy-0", "copy-1", "tarfile"]
    assert sorted(p.name for p in work.iterdir()) == ["tarfile"] and (work / "tarfile").stat().st_size == 2 << 20
    bad = subprocess.run([str(exe), "largedd", str(work), "0", "2", "4096", "10", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "out of range" in bad.stderr


def test_fsmark_settings_for_the_guest() -> None:
    """--fsmark as the twin reads it; the guest's processes may run on every CPU; size and disk follow."""
    from mmtwin.config import load_machine

    topo = guest.guest_topology(load_machine(MACHINE), 1024, None, 8)
    wl = orun.workload(topo, None, 1, None, "fsmark", None, "./fs_mark -d /a -d /b -D 10 -N 200 -n 200 -L 3 -t 4 -S0 -s 524288")
    assert wl["fsmark"] == {"threads": 4, "dirs": 2, "subdirs": 10, "files_per_subdir": 200, "files": 200,
                            "iterations": 3, "file_bytes": 524288, "write_bytes": 16384}
    assert (wl["size_mib"], wl["cpus"], wl["disk_mib"]) == (1200, list(range(8)), 1238 + 1238 // 4 + 256)
    conf, _ = orun._settings(wl, [])
    assert "WORKLOAD=fsmark\n" in conf and "HOG_THREADS=4\n" in conf
    assert "FSMARK_ARGS='2 10 200 200 3 524288 16384'\n" in conf
    assert orun.describe_workload(wl).startswith("fsmark -d x 2 -D 10 -N 200 -n 200 -L 3 -t 4 -S0 -s 524288 -w 16384")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_filehog_fsmark_on_the_host(tmp_path: Path) -> None:
    """The guest's fs_mark, run here: each process's files in its -d directory, -N a subdirectory, -s bytes each."""
    import subprocess

    from mmtwin.oracle import initramfs

    prog = tmp_path / "filehog"
    initramfs.compile_program(prog)
    files = tmp_path / "files"
    files.mkdir()
    proc = subprocess.run([str(prog), "fsmark", str(files), "3", "0", "2", "2", "3", "4", "2", "10000", "4096"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("filehog: fsmark wrote 24 files of 10000 bytes with 3 processes in 2 iterations")
    made = sorted(str(p.relative_to(files)) for p in files.rglob("*") if p.is_file())
    assert len(made) == 24 and all((files / m).stat().st_size == 10000 for m in made)
    # Process 2 goes to d0 (2 % 2 dirs). As fs_mark 3.3, each iteration's process starts at subdirectory
    # (wall-clock seconds % 2) and moves to the other after 3 (-N) files of the iteration: files 0-2 in
    # one, 3 in the other; 4-6 in one, 7 in the other.
    where = {int(m.rsplit("-f", 1)[1]): m.split("/")[1] for m in made if "/t2-" in m}
    assert sorted(where) == list(range(8)) and all(m.startswith("d0/") for m in made if "/t2-" in m)
    for first in (0, 4):
        assert where[first] == where[first + 1] == where[first + 2] != where[first + 3], where
    bad = subprocess.run([str(prog), "fsmark", str(files), "3", "0", "2", "2", "3", "x", "2", "10000", "4096"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "out of range or not a number" in bad.stderr


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_filehog_mmapstream_on_the_host(tmp_path: Path) -> None:
    """The guest's mapped writer, run here: each process's sparse file has its share of the pages, written
    (every page's first word numbered), seen by the command while it exists, and removed afterwards."""
    import subprocess

    from mmtwin.oracle import initramfs

    prog = tmp_path / "filehog"
    initramfs.compile_program(prog)
    files = tmp_path / "files"
    files.mkdir()
    seen = tmp_path / "seen"
    cmd = (f"for f in {files}/sparse-*; do od -A n -t u8 -j 4096 -N 8 $f | tr -d ' '; "
           f"stat -c %s $f; done > {seen}")
    proc = subprocess.run([str(prog), "mmapstream", str(files), "3", "2", "0,0", cmd],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("filehog: mmapstream wrote 768 pages (3 MiB) through 2 shared mappings in ")
    # 384 pages each; the word of page 1 is 2 (page i holds i + 1).
    assert seen.read_text().split() == ["2", str(384 * 4096), "2", str(384 * 4096)]
    assert list(files.iterdir()) == []
    bad = subprocess.run([str(prog), "mmapstream", str(files), "3", "2", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "one cpu per process" in bad.stderr
    gone = subprocess.run([str(prog), "mmapstream", str(tmp_path / "nodir"), "1", "1", "0"], capture_output=True,
                          text=True)
    assert gone.returncode == 1 and "cannot create" in gone.stderr


def test_compare_file_workload_holds_only_what_the_workload_decides() -> None:
    """For a file workload the twin must agree on the faults and dirtied pages; reclaim's counters and the
    placement are printed beside the real ones and do not decide the verdict."""
    from mmtwin.oracle import compare as ocmp

    pages = 1536 * 256
    doc = _one_node_run(pages, {"pgfault": pages + 3000, "nr_dirtied": pages, "pgscan_kswapd": 500_000,
                                "allocstall_normal": 70, "allocstall_movable": 700},
                        {"kind": "mmapstream", "size_mib": 1536, "threads": 2, "cpus": [0, 1], "disk_mib": 2176,
                         "fs": "ext4"})
    twin = {"zones": [{"node": 0, "zone": "DMA32", "numa_hit": pages // 2, "numa_miss": 0, "numa_foreign": 0,
                       "numa_local": pages // 2, "numa_other": 0, "pgalloc": pages // 2}],
            "vmstat_start": {"pgfault": 10}, "vmstat": {"pgfault": pages + 10, "nr_dirtied": pages,
                                                          "pgscan_kswapd": 100, "allocstall_normal": 2}}
    cmp = ocmp.compare(doc, twin)
    assert [r["what"] for r in cmp["placement"]] == ["pgfault", "nr_dirtied"]
    assert cmp["placement_within"]  # placement off by half and kswapd's scanning by 5000 x: reported only
    rep = {r["what"]: r for r in cmp["reported"]}
    assert (rep["allocstall"]["real"], rep["allocstall"]["twin"]) == (770, 2)
    assert rep["node 0 numa_hit"]["twin"] == pages // 2 and rep["pgalloc_dma32"]["real"] == pages
    text = ocmp.format_compare(doc, cmp)
    assert "held (change over the workload)" in text and "reported, not held (the twin's own reclaim)" in text
    assert "mmapstream 1536 MiB through shared file mappings, 2 process(es) on CPU 0,1, files on ext4" in text
    assert "held counters: within 5%" in text
    # A twin that dirtied a page twice would be caught.
    twin["vmstat"]["nr_dirtied"] = 2 * pages
    assert not ocmp.compare(doc, twin)["placement_within"]


def test_compare_refuses_a_sysctl_the_twin_cannot_take(capsys: pytest.CaptureFixture[str]) -> None:
    """6.1 takes vm.swappiness up to 200; the twin, with 3.0's bounds, up to 100: refused before the boot."""
    code, out, err = call(capsys, "oracle", "compare", "-m", MACHINE, "--sysctl", "vm.swappiness=150")
    assert code == 2 and out == ""
    assert err == ("mmtwin: error: --sysctl: vm.swappiness=150 is not allowed with oracle compare; the twin takes "
                   "swappiness as an integer 0..100 (0 = reclaim file pages only, 100 = anonymous as readily as file)\n")


def test_trace_counts_and_side_by_side() -> None:
    """The guest's ftrace text (6.1: a flags column) and the twin's (3.0/4.11 layout) counted per event;
    6.1's mm_vmscan_write_folio is the twin's mm_vmscan_writepage."""
    from mmtwin.oracle import compare as ocmp

    real = orun.trace_summary(
        "# tracer: nop\n#\n"
        "       filehog-97      [001] d..1.    12.345678: mm_vmscan_wakeup_kswapd: nid=0 order=0 gfp_flags=GFP_USER\n"
        "      kswapd0-36      [000] .....    12.345700: mm_vmscan_kswapd_wake: nid=0 order=0\n"
        "      kswapd0-36      [000] .....    12.345800: mm_vmscan_write_folio: page=0x1 pfn=0x2 flags=RECLAIM_WB_FILE\n"
        "  <...>-12345 [003] .N.1. 99.000001: mm_vmscan_kswapd_wake: nid=1 order=0\n"
        "CPU:3 [LOST 12 EVENTS]\n")
    assert real == {"events": {"mm_vmscan_kswapd_wake": 2, "mm_vmscan_wakeup_kswapd": 1, "mm_vmscan_write_folio": 1},
                    "total": 4, "unparsed_lines": 1}
    twin = orun.trace_summary(
        "       mmap-strm-4     [000] ....     3.714074: mm_vmscan_writepage: page=ffffea0000000000 pfn=0 flags=x\n"
        "       mmap-strm-4     [000] ....     3.714075: writeback_congestion_wait: usec_timeout=100000\n"
        "       kswapd0-1     [000]     3.714076: mm_vmscan_kswapd_wake: nid=0 order=0\n")
    rows = {r["event"]: (r["real"], r["twin"]) for r in
            ocmp.compare_traces({**real, "path": "r", "overruns": 0}, twin, "t")["rows"]}
    assert rows == {"mm_vmscan_kswapd_wake": (2, 1), "mm_vmscan_wakeup_kswapd": (1, 0), "mm_vmscan_write_folio": (1, 1)}


# --------------------------------------------------------------------------- boots


def _tools_missing() -> list[str]:
    missing = []
    if shutil.which("qemu-system-x86_64") is None:
        missing.append("qemu-system-x86 (qemu-system-x86_64)")
    if not glob.glob("/boot/vmlinuz-*"):
        missing.append("linux-image-cloud-amd64 (/boot/vmlinuz-*)")
    if shutil.which("busybox") is None and not os.path.exists("/bin/busybox"):
        missing.append("busybox-static")
    if shutil.which("gcc") is None:
        missing.append("gcc")
    if not any(os.path.exists(p) for p in ("/sbin/mkfs.ext4", "/usr/sbin/mkfs.ext4")) and not shutil.which("mkfs.ext4"):
        missing.append("e2fsprogs (mkfs.ext4)")
    return missing


def _xfs_missing() -> list[str]:
    if any(os.path.exists(p) for p in ("/sbin/mkfs.xfs", "/usr/sbin/mkfs.xfs")) or shutil.which("mkfs.xfs"):
        return []
    return ["xfsprogs (mkfs.xfs)"]


MISSING = _tools_missing()
XFS_MISSING = MISSING + _xfs_missing()
if os.environ.get("CI") and XFS_MISSING:
    # In CI the boot tests must run: .ci/run installs these packages.
    raise RuntimeError(f"CI: the oracle's boot tests need {', '.join(XFS_MISSING)}; .ci/run must install them")
requires_vm = pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)}")
requires_xfs = pytest.mark.skipif(bool(XFS_MISSING), reason=f"needs {', '.join(XFS_MISSING)}")


@pytest.fixture(scope="module")
def boot_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the boot tests: the initramfs is built once and a KVM verdict is kept."""
    return tmp_path_factory.mktemp("oracle-cache")


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code, out, err = call(capsys, "oracle", "run", "-m", MACHINE, "--mem-mib", "2048", "--json", *args)
    assert code == 0, err
    return json.loads(out)


@requires_vm
def test_boot_hog_below_and_above_node0(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                         boot_cache: Path, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    small = _run_json(capsys, "--size-mib", "256", "--cpus", "0")
    zones = small["snapshots"]["before"]["zoneinfo"]
    assert sorted({z["node"] for z in zones}) == [0, 1]
    assert small["kernel"]["release"].startswith("6.")
    assert [n["cpus"] for n in small["kernel"]["nodes"]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [n["distance"] for n in small["kernel"]["nodes"]] == [[10, 31], [31, 10]]
    assert small["workload"]["status"] == 0
    s = small["summary"]["numastat"]
    assert s["0"]["local_node"]["delta"] >= 256 * 256 * 0.9  # the hog's pages came from node 0
    assert s["1"]["numa_miss"]["delta"] < 1000
    big = _run_json(capsys, "--size-mib", "1400", "--cpus", "0", "--output-dir", str(tmp_path / "raw"))
    b = big["summary"]["numastat"]
    assert b["1"]["numa_miss"]["delta"] > 50_000  # node 0 is 1 GiB: the rest spilled into node 1
    assert b["0"]["numa_foreign"]["delta"] == b["1"]["numa_miss"]["delta"]
    assert big["summary"]["vmstat_delta"]["pgfault"] >= 1400 * 256
    for f in ("before/zoneinfo", "after/vmstat", "during/numastat-node1", "serial.log", "oracle.json", "qemu-cmdline"):
        assert (tmp_path / "raw" / f).is_file(), f
    assert not list((boot_cache / "mmtwin" / "oracle" / "runs").iterdir())  # nothing left behind


@requires_vm
def test_boot_sysctl_applied(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, boot_cache: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    doc = _run_json(capsys, "--size-mib", "64", "--sysctl", "vm.min_free_kbytes=16384", "--sysctl", "vm.zone_reclaim_mode=1")
    assert doc["kernel"]["sysctl"]["vm.min_free_kbytes"] == "16384"
    assert doc["kernel"]["sysctl"]["vm.zone_reclaim_mode"] == "1"
    code, _, err = call(capsys, "oracle", "run", "-m", MACHINE, "--mem-mib", "2048", "--size-mib", "64",
                        "--sysctl", "vm.no_such_knob=1")
    assert code == 2 and err == "mmtwin: error: --sysctl: the guest kernel said: sysctl vm.no_such_knob no such sysctl in this kernel\n"


@requires_vm
def test_boot_capture(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, boot_cache: Path, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    path = tmp_path / "real-2node.toml"
    code, out, err = call(capsys, "oracle", "capture", "-m", MACHINE, "--mem-mib", "2048", "--out", str(path))
    assert code == 0, err
    assert out.startswith(f"wrote {path}: 2 nodes, memory 1024+1024 MiB")
    code, text, err = call(capsys, "presets", "show", str(path))
    assert code == 0, err
    from mmtwin.config import load_machine

    m = load_machine(str(path))
    assert m.topology.memory() == [1024, 1024]
    assert m.topology.distance == [[10, 31], [31, 10]]
    assert all(0 < r < 128 for r in m.topology.reserved())
    assert "managed" in m.source


@requires_vm
def test_boot_compare_exact_watermarks_and_placement(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                                     boot_cache: Path) -> None:
    """oracle compare: with the watermarks computed again from the managed pages the dump shows, the twin's
    min/low/high and protection equal the real kernel's, and the hog's placement agrees within 5%."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    code, out, err = call(capsys, "oracle", "compare", "-m", MACHINE, "--mem-mib", "2048", "--size-mib", "1400",
                          "--cpus", "0", "--json")
    assert code == 0, err + out
    doc = json.loads(out)
    cmp = doc["compare"]
    assert cmp["watermarks_exact"] and cmp["placement_within"]
    miss = [r for r in cmp["placement"] if r["what"] == "node 1 numa_miss"][0]
    assert miss["real"] > 50_000 and abs(miss["twin"] - miss["real"]) <= 0.05 * miss["real"]
    code, _, err = call(capsys, "oracle", "compare", "-m", MACHINE, "--tolerance", "2")
    assert code == 2 and "--tolerance: 2 is not allowed" in err


@requires_vm
@pytest.mark.parametrize(
    ("machine", "mem", "size", "threads"),
    [
        ("x86-64-2node-24cpu", "2048", "1400", "8"),            # 2 nodes, distance 31, one thread per CPU
        ("x86-64-2node-24cpu", "5120", "3000", "1"),            # above 4 GiB: node 1 has DMA32 and Normal
        (str(FIX / "x86-64-4node-d20.toml"), "2048", "800", "1"),  # 4 nodes, distance 20: spills past node 0
        (str(FIX / "x86-64-4node-d31.toml"), "2048", "800", "1"),  # the same at distance 31
        (str(FIX / "x86-64-4node-d31.toml"), "2048", "1200", "8"),  # one per CPU, every node near full
    ],
)
def test_boot_compare_topologies(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, boot_cache: Path,
                                 machine: str, mem: str, size: str, threads: str) -> None:
    """oracle compare on 2 and 4 nodes, distances 20 and 31, one thread and one per CPU (issue 9, item 5)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    code, out, err = call(capsys, "oracle", "compare", "-m", machine, "--mem-mib", mem, "--size-mib", size,
                          "--threads", threads, "--json")
    assert code == 0, err + out
    doc = json.loads(out)
    assert len(doc["real"]["kernel"]["nodes"]) == len(doc["real"]["guest"]["distance"])
    cmp = doc["compare"]
    assert cmp["watermarks_exact"] and cmp["placement_within"], cmp
    if threads == "1":
        # Node 0 holds 512 MiB: the rest of the hog came from other nodes.
        miss = sum(r["real"] for r in cmp["placement"] if r["what"].endswith("numa_miss"))
        assert miss > 50_000


@requires_vm
def test_boot_compare_mapped_writer_on_a_virtio_disk(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch, boot_cache: Path) -> None:
    """oracle compare -w mmapstream: 1.5 GiB written through shared mappings on ext4 by a 1 GiB guest, so the
    real kernel reclaims; faults and dirtied pages agree with the twin's, reclaim's counters are reported."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    trace = boot_cache / "mapped-writer.trace"
    code, out, err = call(capsys, "oracle", "compare", "-m", MACHINE, "--mem-mib", "1024", "-w", "mmapstream",
                          "--size-mib", "1536", "--threads", "2", "--trace", str(trace), "--json")
    assert code == 0, err + out
    doc = json.loads(out)
    # The guest's vmscan tracepoints came back from its disk: kswapd woke and scanned, nothing was lost.
    tr = doc["real"]["trace"]
    assert tr["overruns"] == 0 and tr["unparsed_lines"] == 0, tr
    assert tr["events"]["mm_vmscan_kswapd_wake"] > 0 and tr["events"]["mm_vmscan_lru_shrink_inactive"] > 0
    rows = {r["event"]: r for r in doc["compare"]["trace"]["rows"]}
    # Every direct reclaim the twin began, it ended (a reclaim a task slept in runs to its end).
    assert rows["mm_vmscan_direct_reclaim_begin"]["twin"] == rows["mm_vmscan_direct_reclaim_end"]["twin"]
    assert rows["mm_vmscan_direct_reclaim_begin"]["real"] == rows["mm_vmscan_direct_reclaim_end"]["real"]
    real = doc["real"]["summary"]["vmstat_delta"]
    pages = 1536 * 256
    assert doc["real"]["workload"]["status"] == 0 and "wrote 393216 pages" in doc["real"]["workload"]["output"]
    assert pages <= real["nr_dirtied"] < pages * 1.01
    assert real["pgscan_kswapd"] + real["pgscan_direct"] > pages // 4  # 1.5 x its memory: the guest reclaimed
    assert real["pgpgout"] > 512 * 1024  # KiB: at least a third went to the disk before the files went
    cmp = doc["compare"]
    assert cmp["watermarks_exact"] and cmp["placement_within"], cmp
    assert {r["what"] for r in cmp["reported"]} >= {"pgscan_kswapd", "pgsteal_direct", "pgpgout", "node 1 numa_miss"}
    assert not list((boot_cache / "mmtwin" / "oracle" / "runs").iterdir())  # the disk image went with the run


@requires_vm
def test_boot_compare_memory_hog_with_swap(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                          boot_cache: Path) -> None:
    """oracle compare --swap-mib: a 600 MiB hog in a 512 MiB guest with 384 MiB of swap on its own virtio disk;
    both kernels swap, the hog's faults agree, and the twin's disk comes from the guest's calibration."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    code, out, err = call(capsys, "oracle", "compare", "-m", MACHINE, "--mem-mib", "512", "--size-mib", "600",
                          "--swap-mib", "384", "--cpus", "0", "--json")
    assert code == 0, err + out
    doc = json.loads(out)
    real, twin, cmp = doc["real"], doc["twin"], doc["compare"]
    assert real["workload"]["status"] == 0 and "touched 153600 pages (600 MiB, 1 pass)" in real["workload"]["output"]
    during = real["snapshots"]["during"]["meminfo"]
    assert during["SwapTotal"] > 380 * 1024 and during["SwapFree"] < during["SwapTotal"]  # the guest swapped
    assert real["summary"]["vmstat_delta"]["pswpout"] > 10_000
    assert twin["sim"]["oom"] is False and twin["vmstat"]["pswpout"] > 10_000
    assert cmp["watermarks_exact"] and cmp["placement_within"], cmp
    assert [r["what"] for r in cmp["placement"]] == ["pgfault"]
    cal = cmp["twin_disk"]["calibration"]
    assert cal["factor"] > 0 and cal["guest_mib_s"] > 0
    assert not list((boot_cache / "mmtwin" / "oracle" / "runs").iterdir())  # the swap image went with the run


@requires_xfs
def test_boot_compare_mapped_writer_on_xfs(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                          boot_cache: Path) -> None:
    """oracle compare -w mmapstream --fs xfs: the disk made by mkfs.xfs, mounted as xfs in the guest, the
    twin's filesystem xfs too; faults and dirtied pages agree."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    code, out, err = call(capsys, "oracle", "compare", "-m", MACHINE, "--mem-mib", "512", "-w", "mmapstream",
                          "--size-mib", "768", "--threads", "2", "--fs", "xfs", "--json")
    assert code == 0, err + out
    doc = json.loads(out)
    real = doc["real"]
    assert real["workload"]["fs"] == "xfs" and real["workload"]["status"] == 0
    assert "/dev/vda /mnt xfs " in real["kernel"]["mounts"], real["kernel"]["mounts"]
    assert 768 * 256 <= real["summary"]["vmstat_delta"]["nr_dirtied"] < 768 * 256 * 1.01
    cmp = doc["compare"]
    assert cmp["watermarks_exact"] and cmp["placement_within"], cmp
    assert [r["what"] for r in cmp["placement"]] == ["pgfault", "nr_dirtied"]


@requires_vm
def test_boot_compare_largedd(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                              boot_cache: Path) -> None:
    """oracle compare -w largedd: a 256 MiB tarfile and 2 copies in a 512 MiB guest; the dirtied pages agree,
    the copies were written back and deleted, the tarfile stayed."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    code, out, err = call(capsys, "oracle", "compare", "-m", MACHINE, "--mem-mib", "512", "-w", "largedd",
                          "--set", "tar_mib=256", "--set", "copies=2", "--set", "dd_kib=64", "--set",
                          "download_mib_s=200", "--json")
    assert code == 0, err + out
    doc = json.loads(out)
    real = doc["real"]
    assert real["workload"]["status"] == 0 and "largedd copied 268435456 bytes 2 times" in real["workload"]["output"]
    assert "deleted the copies" in real["workload"]["output"]
    pages = 3 * 256 * 256
    assert pages <= real["summary"]["vmstat_delta"]["nr_dirtied"] < pages * 1.01
    assert real["summary"]["vmstat_delta"]["pgpgout"] > 256 * 1024  # KiB: the copies outgrew the guest
    cmp = doc["compare"]
    assert cmp["watermarks_exact"] and cmp["placement_within"], cmp
    assert [r["what"] for r in cmp["placement"]] == ["nr_dirtied"]
    assert doc["twin"]["benchmark"]["largedd"]["phases"][1]["name"] == "dd source files"


@requires_vm
def test_boot_compare_fsmark_on_a_virtio_disk(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                              boot_cache: Path) -> None:
    """oracle compare -w fsmark: 1.2 GB of 512 KiB files by 4 processes in a 1 GiB guest; the dirtied pages agree
    with the twin's, kswapd reclaimed in the guest, and the files stayed (fs_mark keeps them)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(boot_cache))
    code, out, err = call(capsys, "oracle", "compare", "-m", MACHINE, "--mem-mib", "1024", "-w", "fsmark",
                          "--fsmark", "-d /x -D 10 -N 200 -n 200 -L 3 -t 4 -S0 -s 524288", "--json")
    assert code == 0, err + out
    doc = json.loads(out)
    real = doc["real"]["summary"]["vmstat_delta"]
    assert doc["real"]["workload"]["status"] == 0 and "wrote 2400 files of 524288 bytes" in doc["real"]["workload"]["output"]
    assert 2400 * 128 <= real["nr_dirtied"] < 2400 * 128 * 1.01
    assert real["pgscan_kswapd"] > 10_000
    cmp = doc["compare"]
    assert cmp["watermarks_exact"] and cmp["placement_within"], cmp
    assert [r["what"] for r in cmp["placement"]] == ["nr_dirtied"]
