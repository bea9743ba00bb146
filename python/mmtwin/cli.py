"""The ``mmtwin`` command line (typer).

Every user error ends as one line ``mmtwin: error: ...`` on stderr and exit
status 2; usage errors (unknown option, bad number) are click's, also exit 2.
Stdout is deterministic; wall time and events/s go to stderr.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer

from mmtwin import __version__
from mmtwin.errors import MmtwinError

app = typer.Typer(
    name="mmtwin",
    help="A deterministic digital twin of the Linux kernel memory manager.",
    epilog=(
        "Presets are looked up in $XDG_CONFIG_HOME/mmtwin/presets (default ~/.config/mmtwin/presets; "
        "machines/ and kernels/ in it), then in those shipped with mmtwin; experiments in "
        "$XDG_CONFIG_HOME/mmtwin/experiments, then the shipped ones. "
        "Environment: MMTWIN_PRESETS = the only directory searched for machines/ and kernels/; "
        "MMTWIN_EXPERIMENTS = the only directory searched for experiment files; "
        "MMTWIN_DEBUG=1 shows a traceback on internal errors."
    ),
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
presets_app = typer.Typer(
    help="List machine presets, kernel profiles and experiments; 'presets show NAME' shows one.",
    invoke_without_command=True,
    rich_markup_mode=None,
)
app.add_typer(presets_app, name="presets")


# --------------------------------------------------------------------------- shell completion
#
# `mmtwin --install-completion` (bash, zsh, fish) completes preset names after -m, -k and -e, experiment
# names, reproductions and bench scenarios: the names `mmtwin presets` lists, from the same search path.


def _completions(names: Any, incomplete: str) -> list[str]:
    try:
        return sorted(n for n in names() if n.startswith(incomplete))
    except Exception:  # a broken preset directory must not break the user's shell
        return []


def _complete_machine(incomplete: str) -> list[str]:
    from mmtwin import config

    return _completions(config.machine_names, incomplete)


def _complete_kernel(incomplete: str) -> list[str]:
    from mmtwin import config

    return _completions(config.kernel_names, incomplete)


def _complete_experiment(incomplete: str) -> list[str]:
    from mmtwin import config

    return _completions(config.experiment_names, incomplete)


def _complete_any_preset(incomplete: str) -> list[str]:
    from mmtwin import config

    return _completions(lambda: {*config.machine_names(), *config.kernel_names(), *config.experiment_names()}, incomplete)


def _complete_kind(incomplete: str) -> list[str]:
    from mmtwin.config import WORKLOAD_KINDS

    return _completions(lambda: WORKLOAD_KINDS, incomplete)


def _complete_reproduction(incomplete: str) -> list[str]:
    from mmtwin import reproduce

    return _completions(lambda: reproduce.registry(), incomplete)


def _complete_scenario(incomplete: str) -> list[str]:
    from mmtwin import bench

    return _completions(lambda: bench.SCENARIOS, incomplete)


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def _version_callback(value: bool) -> None:
    if value:
        from mmtwin.engine import engine_version

        _out(f"mmtwin {__version__} (engine {engine_version() or 'not built'})")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """A deterministic digital twin of the Linux kernel memory manager."""


# --------------------------------------------------------------------------- helpers


def _id_list(text: Optional[str], option: str) -> Optional[list[int]]:
    """``--cpus``/``--mems``: ``0-11``, ``0,2,4-7`` (the kernel's list format)."""
    from mmtwin.config import parse_id_option

    return parse_id_option(text, option)


def _set_value(text: str) -> Any:
    from mmtwin.config import parse_set_value

    return parse_set_value(text)


# CLI option -> workload field; each applies only to the kinds that have the field.
_OPTION_FIELDS = (
    ("--size-gb", "size_gb"),
    ("--threads", "threads"),
    ("--stride", "stride"),
    ("--cpus", "cpus"),
    ("--mems", "mems_allowed"),
)


def _experiment_run(experiment: Optional[str], run_name: Optional[str]) -> tuple[Any, Any]:
    """(loaded experiment or None, the named run or None) for --experiment/--run."""
    if experiment is None:
        if run_name is not None:
            raise MmtwinError("--run: needs --experiment NAME|FILE (the experiment that has the run)")
        return None, None
    from mmtwin import experiment as experiments

    loaded = experiments.load(experiment)
    if run_name is None:
        names = ", ".join(r.name for r in loaded.experiment.runs or [])
        raise MmtwinError(
            f"--experiment: give --run NAME too; runs of {loaded.experiment.name}: {names or 'none (it is a [matrix])'}"
        )
    return loaded, loaded.experiment.run_named(run_name)


def _workload(
    workload: Optional[str],
    options: dict[str, Any],
    fsmark: Optional[str],
    sets: Optional[list[str]],
    run: Any = None,
) -> Any:
    """The workload from (in order) an experiment's run, --workload, --fsmark, the named options, --set."""
    from mmtwin.config import WORKLOAD_KINDS, WORKLOAD_MODELS, parse_fsmark_command, validate_workload

    if run is not None:
        data: dict[str, Any] = run.workload.model_dump()
        if workload is not None and workload != data["kind"]:
            raise MmtwinError(f"--workload: {workload!r} is not allowed; run {run.name!r} is a {data['kind']} workload")
    else:
        kind = workload if workload is not None else ("fsmark" if fsmark is not None else "memhog")
        if kind not in WORKLOAD_KINDS:
            raise MmtwinError(f"--workload: {kind!r} is not allowed; expected one of: {', '.join(WORKLOAD_KINDS)}")
        data = {"kind": kind}
    kind = data["kind"]
    fields = WORKLOAD_MODELS[kind].model_fields
    if fsmark is not None:
        if kind != "fsmark":
            raise MmtwinError(f"--fsmark: only for the fsmark workload, not {kind!r}")
        data.update(parse_fsmark_command(fsmark))
    for option, field in _OPTION_FIELDS:
        value = options.get(field)
        if value is None:
            continue
        if field not in fields:
            raise MmtwinError(f"{option}: not an option of the {kind} workload (its fields: {', '.join(f for f in fields if f != 'kind')})")
        data[field] = value
    for item in sets or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise MmtwinError(f"--set: {item!r} is not allowed; expected KEY=VALUE, a field of the workload (e.g. files=20)")
        if key == "kind":
            raise MmtwinError("--set: kind is chosen with --workload")
        data[key] = _set_value(text.strip())
    # A required field not given: name the option that gives it (an
    # unknown key, usually a typo of it, is reported first, by validation).
    missing = [f for f, info in fields.items() if info.is_required() and f not in data]
    if missing and all(k in fields for k in data):
        if kind == "fsmark" and fsmark is None:
            raise MmtwinError("--fsmark: missing; the fsmark workload needs fs_mark's command line, e.g. --fsmark "
                              "'-d /tmp/x -D 100 -N 5000 -n 208 -L 35 -t 24 -S0 -s 524288' (or --set "
                              + " --set ".join(f"{f}=VALUE" for f in missing) + ", or -e EXPERIMENT -r RUN)")
        flags = dict((field, option) for option, field in _OPTION_FIELDS)
        names = [flags.get(f, f"--set {f}=VALUE") for f in missing]
        wanted = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
        raise MmtwinError(f"{names[0]}: missing; the {kind} workload needs {wanted}"
                          " (or -e EXPERIMENT -r RUN for an experiment's workload)")
    return validate_workload(data, "command line")


def _scale(value: float) -> Any:
    from mmtwin.resolve import parse_scale

    return parse_scale(value)


def _dir_option(text: Optional[str], option: str) -> Optional[Path]:
    from mmtwin.results import dir_option

    return dir_option(text, option)


def _plot_dir(path: Optional[Path]) -> Optional[Path]:
    """Create --plot's directory before any work, so a bad path fails at once (exit 2)."""
    from mmtwin.results import make_writable_dir

    return None if path is None else make_writable_dir(path, "--plot", "give a directory for the PNGs")


def _output_dir(path: Optional[Path]) -> Optional[Path]:
    """--output-dir: checked (and created) before any work, so a bad path fails at once (exit 2)."""
    from mmtwin.results import check_output_dir

    return check_output_dir(path, "--output-dir")


@dataclass(frozen=True)
class _ProcOptions:
    at_ms: tuple[int, ...] = ()
    every_ms: Optional[int] = None
    max_periodic: Optional[int] = None

    def apply(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``spec`` with its ``snapshots`` table set from these options (checked against the machine)."""
        from mmtwin.reports.procfs import snapshots_spec

        return {**spec, "snapshots": snapshots_spec(spec, self.at_ms, self.every_ms, self.max_periodic)}


def _proc_options(proc_at: Optional[str], proc_every: Optional[str], proc_max: Optional[int],
                  output_dir: Optional[Path], json_out: Optional[bool]) -> _ProcOptions:
    """--proc-at, --proc-every, --proc-max: they need somewhere to go (--output-dir, or --json where
    ``json_out`` is not None); with --output-dir the monitors sample every 10 s unless told otherwise."""
    from mmtwin.reports.procfs import parse_time_ms, parse_times_ms

    given = [o for o, v in (("--proc-at", proc_at), ("--proc-every", proc_every), ("--proc-max", proc_max)) if v is not None]
    if given and output_dir is None and not json_out:
        where = "--output-dir DIR (the snapshots are written there)" + (" or --json" if json_out is not None else "")
        raise MmtwinError(f"{given[0]}: needs {where}")
    at = tuple(parse_times_ms(proc_at, "--proc-at")) if proc_at is not None else ()
    every = None
    if proc_every is not None:
        every = parse_time_ms(proc_every, "--proc-every")
        if every == 0:
            raise MmtwinError(f"--proc-every: {proc_every!r} is not allowed; 1ms to 86400s")
    elif output_dir is not None:
        every = MONITOR_EVERY_MS
    if proc_max is not None and proc_every is None and output_dir is None:
        raise MmtwinError("--proc-max: needs --proc-every TIME (it caps the periodic snapshots)")
    return _ProcOptions(at, every, proc_max)


def _note_missed(proc: _ProcOptions, results: Sequence[Mapping[str, Any]]) -> None:
    """One stderr line per --proc-at time a run ended before (no snapshot then)."""
    from mmtwin.reports.procfs import format_ms

    for r in results:
        taken = {int(s["t_ns"]) for s in r.get("snapshots") or [] if s.get("kind") == "at"}
        missed = [t for t in proc.at_ms if t * 1_000_000 not in taken]
        if missed:
            _err(f"note: --proc-at {','.join(format_ms(t) for t in missed)}: after the run of {r.get('kernel')} ended "
                 f"({float(r['times']['elapsed_s']):.3f} s simulated); no snapshot then")


def _jobs(value: Optional[int]) -> Optional[int]:
    if value is not None and value < 1:
        raise MmtwinError(f"--jobs: {value} is not allowed; expected an integer >= 1")
    return value


def _ids_text(ids: Optional[list[int]]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    if not ids:
        return "all"
    parts: list[str] = []
    start = ids[0]
    for i, cur in enumerate(ids):
        last = i + 1 == len(ids)
        if last or ids[i + 1] != cur + 1:
            parts.append(str(start) if start == cur else f"{start}-{cur}")
            if not last:
                start = ids[i + 1]
    return ",".join(parts)


def describe_workload(w: Any) -> str:
    """One phrase for the summary line."""
    where = f"cpus {_ids_text(w.cpus)}" + (f", mems {_ids_text(w.mems_allowed)}" if w.mems_allowed is not None else "")
    if w.kind == "memhog":
        return f"memhog {w.size_gb:g} GB, {w.threads} threads, stride {w.stride}"
    if w.kind == "fsmark":
        return (
            f"fsmark -t {w.threads} -D {w.subdirs} -N {w.files_per_subdir} -n {w.files} -L {w.iterations} "
            f"-S{w.sync_method} -s {w.file_bytes} -w {w.write_bytes} ({w.dirs} dir{'s' if w.dirs > 1 else ''}), {where}"
        )
    if w.kind == "largedd":
        return (
            f"largedd {w.tar_mib:g} MiB tarfile at {w.download_mib_s:g} MiB/s, {w.copies} dd copies "
            f"(bs {int(w.dd_kib * 1024)}, {w.threads} at a time), {where}"
        )
    line = f"mmapstream {w.size_mib:g} MiB mapped file, {w.threads} thread{'s' if w.threads > 1 else ''}"
    if w.mixed_size_mib:
        line += (f", then {w.mixed_size_mib:g} MiB mixed ({w.mixed_anon_percent}% anonymous, {w.mixed_threads}+{w.mixed_threads} "
                 f"processes, {2 * w.mixed_iter}/{w.mixed_iter} passes)")
    return f"{line}, {where}"


def _summary_line(machine: Any, kernels: str, w: Any, seed: int, scale: Any) -> str:
    mem_gib = machine.total_memory_mib() / 1024
    return (
        f"{describe_workload(w)} on {machine.name} "
        f"({machine.topology.nodes} nodes, {machine.total_cpus()} CPUs, {mem_gib:.2f} GiB, {machine.page_size}-byte pages); "
        f"{kernels}; seed {seed}; scale {float(scale):g}"
    )


def _machine_name(machine: Optional[str], loaded: Any) -> str:
    if machine is not None:
        return machine
    if loaded is not None:
        return str(loaded.where)
    raise MmtwinError("--machine: missing; give -m NAME (or --experiment NAME --run RUN to use the experiment's machine)")


def _load_machine(machine: Optional[str], loaded: Any) -> Any:
    from mmtwin.config import load_machine

    if machine is None and loaded is not None:
        return loaded.machine
    return load_machine(_machine_name(machine, loaded))


WORKLOAD_HELP = "Workload kind: memhog, fsmark, largedd or mmapstream (default memhog, or the --run's kind)."
SIZE_HELP = "memhog: bytes the hog touches in total, in GB of 2^30 bytes (before --scale)."
THREADS_HELP = "Threads (memhog: one per CPU, CPUs 0..N-1 or as the machine's fork_balance places them, unless --cpus; fs_mark: -t)."
STRIDE_HELP = "memhog: one store every STRIDE bytes; must divide the page size."
CPUS_HELP = "CPU ids, e.g. 0-11 or 0,2,4 (memhog: one per thread; other kinds: the affinity of every thread)."
MEMS_HELP = "Node ids the workload may allocate from, e.g. 0 or 0-1 (cpuset mems; default all)."
FSMARK_HELP = "fs_mark's own command line, e.g. '-d /tmp/x -D 100 -N 5000 -n 208 -L 35 -t 24 -S0 -s 524288' (implies -w fsmark)."
SET_HELP = "Set a workload field as in an experiment's [runs.workload] table, e.g. files=20 or tar_mib=512 (repeatable)."
EXPERIMENT_HELP = "Take the workload (and, without -m, the machine) from this experiment file's --run."
RUN_HELP = "The [[runs]] entry of --experiment to run (e.g. fsmark)."
SCALE_HELP = "Multiply node memory, reserved memory, zone boundaries and the workload's size by S (0 < S <= 1)."
SEED_HELP = ("Seed of the run: the memory hog's unknowns come from it (the timer phase; with fork_balance "
             "ia64-2.6.18 the shell's CPU and which idle CPU pulls a thread, and when), and fs_mark's wall clock "
             "(which subdirectory each iteration starts in). Same seed, same output.")
CHECK_HELP = "Run the engine's full invariant checks (slower)."
OUTPUT_DIR_HELP = (
    "Also write the run(s) as a results tree in DIR: MMTests' work/log layout plus mmtwin-results.json "
    "(docs/results.md); read back by 'mmtwin report' and 'mmtwin compare --results'. DIR must be new, empty "
    "or an earlier results tree (replaced)."
)
JOBS_HELP = "Worker processes (default: the number of CPUs). Results do not depend on it."
TRACE_FORMAT_HELP = ("Layout of the --trace file: 'kernel' (default; what the kernel's era prints) or 'postprocess-6.1' "
                     "(what Linux 6.1's trace-vmscan-postprocess.pl parses; docs/ftrace.md).")
FTRACE_HELP = ("With the 2011 report of 3.0/3.1 kernels whose run reclaimed, print MMTests' 'FTrace Reclaim Statistics' "
               "blocks (vmscan, congestion_wait) from the engine's tracepoint statistics (default on; docs/ftrace.md).")
PROC_AT_HELP = ("Also record /proc/vmstat, zoneinfo, buddyinfo, pagetypeinfo, diskstats and the nodes' numastat at these simulated "
                "times (comma-separated: 10s, 2.5s, 500ms; a bare number is seconds), written under --output-dir "
                "(docs/results.md) or shown by --json; print one with 'mmtwin report DIR --proc FILE --at TIME'.")
PROC_EVERY_HELP = ("Period of the /proc monitors in --output-dir (proc-vmstat, proc-buddyinfo, proc-zoneinfo, "
                   "proc-pagetypeinfo, numa-numastat), a simulated time as MMTests' MONITOR_UPDATE_FREQUENCY "
                   "(default with --output-dir: 10s).")
PROC_MAX_HELP = ("The most periodic /proc snapshots kept (default 256, less on a machine too large for it): when full, "
                 "every other one is dropped and the period doubles.")
# MMTests' configs mostly set MONITOR_UPDATE_FREQUENCY=10 (seconds).
MONITOR_EVERY_MS = 10_000
ITERATIONS_HELP = ("Run N iterations: iteration 0 with --seed, the others with seeds derived from it (SplitMix64, "
                   "docs/sweep.md); MMTests summary rows over them, or a line saying they came out identical.")


# --------------------------------------------------------------------------- run


def _benchmark_lines(kind: str, spec: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """What the benchmark itself printed: fs_mark's iteration lines, largedd.result, the mapped writer's time."""
    bench = (result.get("benchmark") or {}).get(kind) or {}
    w = spec["workload"]
    if kind == "fsmark":
        fs = spec["machine"]["storage"]["fs"]
        per_iter = w["threads"] * w["files"]
        lines = ["FSUse%        Count         Size    Files/sec     App Overhead"]
        for i, it in enumerate(bench.get("iterations", [])):
            used = (i + 1) * per_iter * w["file_bytes"] * 100 // (fs["size_mib"] * 2**20)
            lines.append(f"{used:6d} {per_iter * (i + 1):12d} {w['file_bytes']:12d} "
                         f"{float(it['files_per_sec']):12.1f} {int(it['overhead_us']):16d}")
        return lines
    if kind == "largedd":
        return [f"{i}:Time to {p['name']}:{int(p['seconds'])}" for i, p in zip((1, 3, 5), bench.get("phases", []))]
    if kind == "mmapstream":
        return [f"Elapsed Time mmap-strm {float(bench.get('elapsed_s', 0.0)):.2f}"]
    return []


@app.command()
def run(
    machine: Optional[str] = typer.Option(None, "--machine", "-m", metavar="NAME", help="Machine preset name or path to a .toml file.",
                                         autocompletion=_complete_machine),
    kernel: Optional[str] = typer.Option(
        None, "--kernel", "-k", metavar="NAME", help="Kernel profile name or path (default with --experiment: its baseline).",
        autocompletion=_complete_kernel,
    ),
    workload: Optional[str] = typer.Option(None, "--workload", "-w", metavar="KIND", help=WORKLOAD_HELP, autocompletion=_complete_kind),
    size_gb: Optional[float] = typer.Option(None, "--size-gb", metavar="GB", help=SIZE_HELP),
    threads: Optional[int] = typer.Option(None, "--threads", "-t", metavar="N", help=THREADS_HELP),
    stride: Optional[int] = typer.Option(None, "--stride", metavar="BYTES", help=STRIDE_HELP),
    cpus: Optional[str] = typer.Option(None, "--cpus", metavar="LIST", help=CPUS_HELP),
    mems: Optional[str] = typer.Option(None, "--mems", metavar="LIST", help=MEMS_HELP),
    fsmark: Optional[str] = typer.Option(None, "--fsmark", metavar="ARGS", help=FSMARK_HELP),
    sets: Optional[list[str]] = typer.Option(None, "--set", metavar="KEY=VALUE", help=SET_HELP),
    experiment: Optional[str] = typer.Option(None, "--experiment", "-e", metavar="NAME|FILE", help=EXPERIMENT_HELP,
                                              autocompletion=_complete_experiment),
    run_name: Optional[str] = typer.Option(None, "--run", "-r", metavar="NAME", help=RUN_HELP),
    scale: float = typer.Option(1.0, "--scale", metavar="S", help=SCALE_HELP),
    seed: Optional[int] = typer.Option(None, "--seed", metavar="N", help=SEED_HELP + " Default 1, or the experiment's."),
    check: bool = typer.Option(False, "--check", help=CHECK_HELP),
    iterations: int = typer.Option(1, "--iterations", metavar="N", help=ITERATIONS_HELP),
    trace: Optional[str] = typer.Option(None, "--trace", metavar="FILE", help="Have the engine write a trace of kernel events to FILE."),
    trace_events: Optional[str] = typer.Option(
        None, "--trace-events", metavar="LIST", help="Comma-separated tracepoints for --trace (default: all)."
    ),
    trace_format: Optional[str] = typer.Option(None, "--trace-format", metavar="FORMAT", help=TRACE_FORMAT_HELP),
    ftrace: bool = typer.Option(True, "--ftrace/--no-ftrace", help=FTRACE_HELP),
    json_out: bool = typer.Option(
        False, "--json", help="Print the spec and the result as JSON (without the non-deterministic 'perf' part)."
    ),
    vmstat: bool = typer.Option(False, "--vmstat", help="Also print /proc/vmstat and the per-zone free-pages timeline."),
    plot_text: Optional[str] = typer.Option(None, "--plot", help="Write a PNG of per-zone free pages over time into DIR.", metavar="DIR"),
    output_dir_text: Optional[str] = typer.Option(None, "--output-dir", metavar="DIR", help=OUTPUT_DIR_HELP),
    proc_at: Optional[str] = typer.Option(None, "--proc-at", metavar="TIMES", help=PROC_AT_HELP),
    proc_every: Optional[str] = typer.Option(None, "--proc-every", metavar="TIME", help=PROC_EVERY_HELP),
    proc_max: Optional[int] = typer.Option(None, "--proc-max", metavar="N", help=PROC_MAX_HELP),
) -> None:
    """Run one workload on one machine with one kernel and print times, counters and zones."""
    plot, output_dir = _dir_option(plot_text, "--plot"), _dir_option(output_dir_text, "--output-dir")
    from mmtwin.config import load_kernel
    from mmtwin.experiment import with_experiment_sysctl
    from mmtwin.engine import perf_line, run_spec, strip_perf
    from mmtwin.reports import mmtests2011 as mt
    from mmtwin.reports import vmstat as vm
    from mmtwin.resolve import resolve_spec, trace_spec

    loaded, exp_run = _experiment_run(experiment, run_name)
    options = {"size_gb": size_gb, "threads": threads, "stride": stride,
               "cpus": _id_list(cpus, "--cpus"), "mems_allowed": _id_list(mems, "--mems")}
    params = _workload(workload, options, fsmark, sets, exp_run)
    events = None if trace_events is None else [e.strip() for e in trace_events.split(",") if e.strip()]
    tr = trace_spec(trace, events)
    from mmtwin.reports import ftrace as ft

    tr = ft.with_trace_format(tr, trace_format)
    frac = _scale(scale)
    m = _load_machine(machine, loaded)
    if kernel is None and loaded is None:
        raise MmtwinError("--kernel: missing; give -k NAME (or --experiment to default to its baseline kernel)")
    if kernel is None:
        k = loaded.kernels[0]
    else:
        k = load_kernel(kernel) if loaded is None else with_experiment_sysctl(loaded.experiment, load_kernel(kernel))
    seed_value = seed if seed is not None else (loaded.experiment.seed if loaded is not None else 1)
    proc = _proc_options(proc_at, proc_every, proc_max, output_dir, json_out)
    spec = proc.apply(resolve_spec(m, k, params, seed=seed_value, scale=frac, check=check, trace=tr))
    from mmtwin import iterations as its_mod

    if its_mod.check_iterations(iterations) > 1 and tr is not None:
        raise MmtwinError(f"--trace: not allowed with --iterations {iterations}; trace one iteration (--iterations 1)")
    _plot_dir(plot)
    _output_dir(output_dir)
    started = time.perf_counter()
    its = its_mod.run_iterations([spec], iterations, label="run")[0] if iterations > 1 else None
    result = its.first if its is not None else run_spec(spec)
    wall = time.perf_counter() - started
    _note_missed(proc, [result])
    if json_out and its is not None:
        _out(_dumps({"spec": spec, "result": strip_perf(result), "identical": its.identical,
                     "iterations": its_mod.iterations_json(its, spec)}))
    elif json_out:
        _out(_dumps({"spec": spec, "result": strip_perf(result)}))
    else:
        t = result["times"]
        sim = result.get("sim", {})
        lines = [
            _summary_line(m, f"kernel {k.name}", params, seed_value, frac),
            f"times: sys {t['sys_s']:.2f} s, user {t['user_s']:.2f} s, real {t['elapsed_s']:.2f} s",
            f"page events: {result.get('events', 0)}; oom: {'yes' if sim.get('oom') else 'no'}",
            "sim: " + ", ".join(f"{key}={sim[key]}" for key in sim if key != "oom"),
            "",
        ]
        if params.kind != "memhog":
            lines += _benchmark_lines(params.kind, spec, result)
            col = mt.column_from_result(k.name, params.kind, result)
            lines += ["", mt.duration_block([col]), "", mt.vmstat_block([col]), ""]
            if ftrace and ft.shows_ftrace([result]):
                lines += [ft.ftrace_blocks([result], [k.name]).rstrip("\n"), ""]
            from mmtwin.reports.procfs import jbd2_info_lines

            lines += jbd2_info_lines(result)
        lines.append(vm.zone_table(result))
        if vmstat:
            lines += ["/proc/vmstat", vm.proc_vmstat(result), vm.timeline_table(result)]
        if its is not None:
            era_its = "2017" if params.kind == "memhog" else "2011"
            lines += ["", its_mod.iterations_block([k.name], [spec], [its], era_its)]
        _out("\n".join(lines))
    if plot is not None:
        from mmtwin.reports import plots

        plot.mkdir(parents=True, exist_ok=True)
        if params.kind == "memhog":
            name = f"run-{k.name}-{params.size_gb:g}g-{params.threads}t-zones.png"
        else:
            name = f"run-{k.name}-{params.kind}-zones.png"
        path = plots.plot_zone_timeline(result, plot / name)
        _err(f"wrote {path}")
    if output_dir is not None:
        from mmtwin import results as saved

        summary = _summary_line(m, f"kernel {k.name}", params, seed_value, frac)
        runs = saved.iteration_runs(k.name, spec, its.seeds if its is not None else [spec["seed"]],
                                    its.results if its is not None else [result])
        _err(f"wrote {saved.write_tree(output_dir, 'run', runs, summary_line=summary, ftrace=ftrace)}")
    _err(perf_line(its.results, wall) if its is not None else perf_line([result], result.get("perf", {}).get("wall_s", wall)))


# --------------------------------------------------------------------------- compare


@app.command()
def compare(
    machine: Optional[str] = typer.Option(None, "--machine", "-m", metavar="NAME", help="Machine preset name or path to a .toml file.",
                                         autocompletion=_complete_machine),
    kernels: Optional[list[str]] = typer.Option(
        None, "--kernel", "-k", metavar="NAME", autocompletion=_complete_kernel,
        help="Kernel profile; give it twice or more (the first is the baseline). Commas also separate. "
        "Default with --experiment: the experiment's kernels.",
    ),
    workload: Optional[str] = typer.Option(None, "--workload", "-w", metavar="KIND", help=WORKLOAD_HELP, autocompletion=_complete_kind),
    size_gb: Optional[float] = typer.Option(None, "--size-gb", metavar="GB", help=SIZE_HELP),
    threads: Optional[int] = typer.Option(None, "--threads", "-t", metavar="N", help=THREADS_HELP),
    stride: Optional[int] = typer.Option(None, "--stride", metavar="BYTES", help=STRIDE_HELP),
    cpus: Optional[str] = typer.Option(None, "--cpus", metavar="LIST", help=CPUS_HELP),
    mems: Optional[str] = typer.Option(None, "--mems", metavar="LIST", help=MEMS_HELP),
    fsmark: Optional[str] = typer.Option(None, "--fsmark", metavar="ARGS", help=FSMARK_HELP),
    sets: Optional[list[str]] = typer.Option(None, "--set", metavar="KEY=VALUE", help=SET_HELP),
    experiment: Optional[str] = typer.Option(None, "--experiment", "-e", metavar="NAME|FILE", help=EXPERIMENT_HELP,
                                              autocompletion=_complete_experiment),
    run_name: Optional[str] = typer.Option(None, "--run", "-r", metavar="NAME", help=RUN_HELP),
    era: Optional[str] = typer.Option(
        None, "--era", metavar="2011|2012|2017",
        help="Report style: 2011 (shell scripts), 2012 or 2017 (Perl Compare). Default 2017 for memhog; "
        "fsmark, largedd and mmapstream have the 2011 reports only.",
    ),
    scale: float = typer.Option(1.0, "--scale", metavar="S", help=SCALE_HELP),
    seed: Optional[int] = typer.Option(None, "--seed", metavar="N", help=SEED_HELP + " Default 1, or the experiment's."),
    check: bool = typer.Option(False, "--check", help=CHECK_HELP),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", metavar="N", help=JOBS_HELP),
    iterations: int = typer.Option(1, "--iterations", metavar="N", help=ITERATIONS_HELP),
    ftrace: bool = typer.Option(True, "--ftrace/--no-ftrace", help=FTRACE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the results as JSON instead of the report."),
    output_dir_text: Optional[str] = typer.Option(None, "--output-dir", metavar="DIR", help=OUTPUT_DIR_HELP),
    results_dirs: Optional[list[Path]] = typer.Option(
        None, "--results", metavar="DIR",
        help="Compare saved results instead of running: every run of each results tree written by --output-dir "
        "(repeatable; the first run is the baseline). Takes no machine, kernel or workload options.",
    ),
    proc_at: Optional[str] = typer.Option(None, "--proc-at", metavar="TIMES", help=PROC_AT_HELP),
    proc_every: Optional[str] = typer.Option(None, "--proc-every", metavar="TIME", help=PROC_EVERY_HELP),
    proc_max: Optional[int] = typer.Option(None, "--proc-max", metavar="N", help=PROC_MAX_HELP),
) -> None:
    """Run the same workload on two or more kernels and print an MMTests-style comparison."""
    output_dir = _dir_option(output_dir_text, "--output-dir")
    from mmtwin.config import load_kernel
    from mmtwin.experiment import with_experiment_sysctl
    from mmtwin.engine import perf_line, strip_perf
    from mmtwin.reports import mmtests2011 as mt
    from mmtwin.reports.mmtests import check_era, compare_report
    from mmtwin.resolve import resolve_spec

    if results_dirs:
        given = {"--machine": machine, "--kernel": kernels, "--workload": workload, "--size-gb": size_gb, "--threads": threads,
                 "--stride": stride, "--cpus": cpus, "--mems": mems, "--fsmark": fsmark, "--set": sets,
                 "--experiment": experiment, "--run": run_name, "--seed": seed, "--jobs": jobs,
                 "--check": check or None, "--scale": None if scale == 1.0 else scale,
                 "--iterations": None if iterations == 1 else iterations,
                 "--proc-at": proc_at, "--proc-every": proc_every, "--proc-max": proc_max}
        _compare_saved(results_dirs, era, json_out, output_dir, [k for k, v in given.items() if v is not None], ftrace)
        return
    loaded, exp_run = _experiment_run(experiment, run_name)
    options = {"size_gb": size_gb, "threads": threads, "stride": stride,
               "cpus": _id_list(cpus, "--cpus"), "mems_allowed": _id_list(mems, "--mems")}
    params = _workload(workload, options, fsmark, sets, exp_run)
    if era is None:
        era = "2017" if params.kind == "memhog" else "2011"
    check_era(era)
    if params.kind != "memhog" and era != "2011":
        raise MmtwinError(f"--era: {era!r} is not allowed for {params.kind}; its MMTests report exists in the 2011 style only")
    names = [n.strip() for item in kernels or [] for n in item.split(",") if n.strip()]
    if not names and loaded is not None:
        names = [k.name for k in loaded.kernels]
    if len(names) < 2:
        raise MmtwinError(f"--kernel: {len(names)} given; a comparison needs at least two (the first is the baseline)")
    if len(set(names)) != len(names):
        raise MmtwinError(f"--kernel: {', '.join(names)} names a kernel twice")
    frac = _scale(scale)
    m = _load_machine(machine, loaded)
    by_name = {k.name: k for k in (loaded.kernels if loaded is not None else [])}
    ks = [
        by_name[n] if n in by_name else load_kernel(n) if loaded is None else with_experiment_sysctl(loaded.experiment, load_kernel(n))
        for n in names
    ]
    seed_value = seed if seed is not None else (loaded.experiment.seed if loaded is not None else 1)
    proc = _proc_options(proc_at, proc_every, proc_max, output_dir, json_out)
    specs = [proc.apply(resolve_spec(m, k, params, seed=seed_value, scale=frac, check=check)) for k in ks]
    from mmtwin import iterations as its_mod

    _output_dir(output_dir)
    started = time.perf_counter()
    its = its_mod.run_iterations(specs, its_mod.check_iterations(iterations), _jobs(jobs), label="compare")
    results = [its_mod.report_result(it, params.kind) for it in its]
    wall = time.perf_counter() - started
    _note_missed(proc, [it.first for it in its])
    if json_out:
        extra = {} if iterations == 1 else {"iterations": [
            {"kernel": n, "identical": it.identical, "runs": its_mod.iterations_json(it, s)} for n, s, it in zip(names, specs, its)]}
        _out(_dumps({"era": era, "kernels": names, "specs": specs, "results": [strip_perf(it.first) for it in its], **extra}))
    else:
        _out(_summary_line(m, f"kernels {', '.join(names)} (the first is the baseline)", params, seed_value, frac))
        _out("")
        if params.kind == "memhog":
            runs = [its_mod.memhog_samples(k.name, it, params.threads) for k, it in zip(ks, its)]
            _out(compare_report(runs, era, params.kind))
        else:
            cols = [mt.column_from_result(k.name, params.kind, r) for k, r in zip(ks, results)]
            command = mt.fsmark_command(specs[0]["workload"]) if params.kind == "fsmark" else None
            _out(mt.report(params.kind, cols, command))
            from mmtwin.reports import ftrace as ft

            if ftrace and ft.shows_ftrace(results):
                _out("")
                _out(ft.ftrace_blocks(results, names))
        if iterations > 1:
            _out(its_mod.compare_block(names, specs, its, era))
    if output_dir is not None:
        from mmtwin import results as saved

        summary = _summary_line(m, f"kernels {', '.join(names)} (the first is the baseline)", params, seed_value, frac)
        runs = saved.make_runs([(n, s, it.seeds, it.results) for n, s, it in zip(names, specs, its)])
        _err(f"wrote {saved.write_tree(output_dir, 'compare', runs, era=era, summary_line=summary, ftrace=ftrace)}")
    _err(perf_line([r for it in its for r in it.results], wall))


def _compare_saved(dirs: list[Path], era: Optional[str], json_out: bool, output_dir: Optional[Path], given: list[str],
                   ftrace: bool = True) -> None:
    """``mmtwin compare --results DIR ...``: the comparison of saved results (docs/results.md)."""
    from mmtwin import results as saved

    if given:
        raise MmtwinError(f"{given[0]}: not allowed with --results; the saved results fix the machine, kernels and workload")
    _output_dir(output_dir)
    trees = [saved.load(d, "--results") for d in dirs]
    runs, text = saved.compare_saved(trees, era, ftrace)
    if json_out:
        _out(_dumps({"era": era, "kernels": [r.kernel for r in runs if r.iteration == 0],
                     "specs": [r.spec for r in runs if r.iteration == 0],
                     "results": [r.result for r in runs if r.iteration == 0]}))
    else:
        _out(text)
    if output_dir is not None:
        header = text.split("\n", 1)[0]
        _err(f"wrote {saved.write_tree(output_dir, 'compare', runs, era=era, summary_line=header, ftrace=ftrace)}")


# --------------------------------------------------------------------------- sweep


@app.command()
def sweep(
    experiment: Optional[str] = typer.Argument(
        None, metavar="EXPERIMENT", autocompletion=_complete_experiment,
        help="Experiment name or file: its kernels and runs (or matrix) are axes unless -k/-r fix them. "
        "Without it, give -m, -k and the workload as for 'run'.",
    ),
    vary: Optional[list[str]] = typer.Option(
        None, "--vary", metavar="KEY=V1,V2,...",
        help="An axis (repeatable; the cross product is swept, the last --vary fastest). KEY: machine, kernel, run, "
        "scale, seed; sysctl.NAME or NAME (dirty_ratio, swappiness, ...); workload.NAME or NAME (files, threads, ...); "
        "machine.FIELD.PATH or kernel.FIELD.PATH (e.g. machine.storage.devices.0.bandwidth_mib_s, kernel.policy.zlc). "
        "Values in TOML syntax; commas inside [...] or quotes do not split.",
    ),
    out: Path = typer.Option(..., "--out", "-o", metavar="FILE", help="Tidy table, one row per run: FILE.csv or FILE.parquet. "
                             "Finished runs are kept in FILE.state.jsonl beside it, so a killed sweep resumes."),
    iterations: int = typer.Option(1, "--iterations", metavar="N", help=ITERATIONS_HELP),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", metavar="N", help=JOBS_HELP),
    ray_address: Optional[str] = typer.Option(
        None, "--ray", metavar="ADDRESS|auto",
        help="Run the runs as Ray tasks on an existing cluster (host:port, ray://host:port, or auto); "
        "needs pip install 'mmtwin[ray]' and mmtwin on every node. The rows are the same as on the local pool.",
    ),
    machine: Optional[str] = typer.Option(None, "--machine", "-m", metavar="NAME", help="Machine preset name or path to a .toml file.",
                                         autocompletion=_complete_machine),
    kernel: Optional[str] = typer.Option(None, "--kernel", "-k", metavar="NAME", help="One kernel profile (vary several with --vary kernel=A,B).",
                                        autocompletion=_complete_kernel),
    workload: Optional[str] = typer.Option(None, "--workload", "-w", metavar="KIND", help=WORKLOAD_HELP, autocompletion=_complete_kind),
    size_gb: Optional[float] = typer.Option(None, "--size-gb", metavar="GB", help=SIZE_HELP),
    threads: Optional[int] = typer.Option(None, "--threads", "-t", metavar="N", help=THREADS_HELP),
    stride: Optional[int] = typer.Option(None, "--stride", metavar="BYTES", help=STRIDE_HELP),
    cpus: Optional[str] = typer.Option(None, "--cpus", metavar="LIST", help=CPUS_HELP),
    mems: Optional[str] = typer.Option(None, "--mems", metavar="LIST", help=MEMS_HELP),
    fsmark: Optional[str] = typer.Option(None, "--fsmark", metavar="ARGS", help=FSMARK_HELP),
    sets: Optional[list[str]] = typer.Option(None, "--set", metavar="KEY=VALUE", help=SET_HELP),
    run_name: Optional[str] = typer.Option(None, "--run", "-r", metavar="NAME", help="Only this [[runs]] entry of EXPERIMENT."),
    scale: float = typer.Option(1.0, "--scale", metavar="S", help=SCALE_HELP),
    seed: Optional[int] = typer.Option(None, "--seed", metavar="N", help=SEED_HELP + " Default 1, or the experiment's."),
    check: bool = typer.Option(False, "--check", help=CHECK_HELP),
) -> None:
    """Sweep the cross product of --vary values, N iterations each, and write one tidy row per run.

    Runs go to a local process pool (both cores busy) or, with --ray, to Ray
    tasks; the rows are identical whichever ran them. Prints MMTests summary
    rows over the iterations of each cell (docs/sweep.md).
    """
    from mmtwin import sweep as sw
    from mmtwin.engine import perf_line

    options = {"size_gb": size_gb, "threads": threads, "stride": stride,
               "cpus": _id_list(cpus, "--cpus"), "mems_allowed": _id_list(mems, "--mems")}
    base = sw.Base(experiment=experiment, machine=machine, kernel=kernel, run=run_name, workload=workload,
                   options=options, fsmark=fsmark, sets=list(sets or []), scale=_scale(scale), seed=seed, check=check)
    outcome = sw.sweep(base, list(vary or []), iterations=iterations, out=out, jobs=_jobs(jobs), ray_address=ray_address)
    _out(outcome.text)
    _err(f"sweep: {outcome.runs_text}: {outcome.reused} from {sw.state_path(out)}, {outcome.executed} run now "
         f"on {sw.describe_executor(jobs, ray_address)}"
         + (f"; {outcome.unreadable} unreadable state line(s) ignored" if outcome.unreadable else ""))
    _err(perf_line([{"events": outcome.events}], outcome.wall_s))
    _err(f"wrote {out}")


# --------------------------------------------------------------------------- reproduce


@app.command()
def reproduce(
    name: Optional[str] = typer.Argument(None, metavar="NAME", help="Reproduction to run (default: every registered one "
                                         "not marked 'by name only' in --list).",
                                         autocompletion=_complete_reproduction),
    list_only: bool = typer.Option(False, "--list", help="List the registered reproductions and exit."),
    json_out: bool = typer.Option(
        False, "--json", help="Print the claims and table cells as JSON (a list of reports when no NAME is given)."
    ),
    scale: Optional[float] = typer.Option(
        None,
        "--scale",
        metavar="S",
        help=SCALE_HELP + " Default: each reproduction's own (see --list); --full for published scale.",
    ),
    full: bool = typer.Option(False, "--full", help="Run at published scale (scale 1) whatever the reproduction's default."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", metavar="N", help=JOBS_HELP),
    check: bool = typer.Option(False, "--check", help=CHECK_HELP),
    plot_text: Optional[str] = typer.Option(None, "--plot", help="Write PNG plots of the table into DIR.", metavar="DIR"),
    experiment: Optional[str] = typer.Option(
        None, "--experiment", metavar="NAME|FILE", help="Use this experiment file (name or path) instead of the reproduction's own.",
        autocompletion=_complete_experiment,
    ),
    output_dir_text: Optional[str] = typer.Option(None, "--output-dir", metavar="DIR", help=OUTPUT_DIR_HELP),
    proc_at: Optional[str] = typer.Option(None, "--proc-at", metavar="TIMES", help=PROC_AT_HELP),
    proc_every: Optional[str] = typer.Option(None, "--proc-every", metavar="TIME", help=PROC_EVERY_HELP),
    proc_max: Optional[int] = typer.Option(None, "--proc-max", metavar="N", help=PROC_MAX_HELP),
    iterations: int = typer.Option(
        1, "--iterations", metavar="N",
        help="Run every run N times: iteration 0 with the experiment's seed, the others with seeds derived from it "
        "(SplitMix64, docs/sweep.md); the tables show each figure's Amean and its Stddev, the claims are judged on the "
        "Amean and say in how many iterations each held alone. Not zlcfirst (its MMTests reports are per run), "
        "nor with --output-dir.",
    ),
) -> None:
    """Run a published experiment, print it beside the published figures and judge each claim.

    Without --scale or --full each reproduction runs at its own default
    scale (--list shows it): published scale for zonelist-cache and
    zlcfirst, 3/4 for reclaim-writeback, 1/2 for reclaim-writeback-fake8.
    Without NAME it runs the other three (about five minutes on two cores);
    reclaim-writeback-fake8 (seed 004's fake-NUMA rows, 48 runs) runs by
    name only. Exits with status 1 when any claim does not hold in the
    simulation.
    """
    from mmtwin import reproduce as repro

    output_dir = _dir_option(output_dir_text, "--output-dir")
    reg = repro.registry()
    if list_only:
        w = max(len(n) for n in reg)
        _out("".join(f"{n:<{w}}  scale {str(r.default_scale):>5}  {r.description}{'' if r.in_all else ' (by name only)'}\n"
                     for n, r in sorted(reg.items())))
        return
    chosen = [repro.get(name)] if name else [reg[n] for n in sorted(reg) if reg[n].in_all]
    if experiment is not None and len(chosen) != 1:
        raise MmtwinError("--experiment needs a reproduction name")
    if full and scale is not None:
        raise MmtwinError("--full and --scale: give one of them (--full is --scale 1)")
    from mmtwin import iterations as its_mod

    if its_mod.check_iterations(iterations) > 1:
        refused = [r.name for r in chosen if not r.iterations]
        if refused:
            allowed = ", ".join(n for n in sorted(reg) if reg[n].iterations)
            raise MmtwinError(f"--iterations: {iterations} is not allowed for {', '.join(refused)}; "
                              f"only {allowed} repeat their runs (give one by name)")
        if output_dir is not None:
            raise MmtwinError(f"--iterations: {iterations} is not allowed with --output-dir; "
                              "a results tree holds one run of each cell (--iterations 1)")
    plot = _plot_dir(_dir_option(plot_text, "--plot"))
    proc = _proc_options(proc_at, proc_every, proc_max, output_dir, None)
    _output_dir(output_dir)
    captured: list[Any] = []
    started = time.perf_counter()
    outcomes = []
    for r in chosen:
        chosen_scale = Fraction(1) if full else (_scale(scale) if scale is not None else r.default_scale)
        options = repro.Options(
            scale=chosen_scale, jobs=_jobs(jobs), check=check, json=json_out, plot_dir=plot, experiment=experiment,
            iterations=iterations,
        )
        if output_dir is not None:
            from mmtwin.results import capture_engine_runs

            with capture_engine_runs(proc.apply) as seen:
                outcome = r.run(options)
            captured += seen
        else:
            outcome = r.run(options)
        outcomes.append(outcome)
        if not json_out:
            _out(outcome.text)
    if json_out:
        data = [o.data for o in outcomes]
        _out(_dumps(data[0] if name else data))
    if output_dir is not None:
        from mmtwin import results as saved

        _note_missed(proc, [res for _, res in captured])
        runs = saved.make_runs([(sp["kernel"]["name"], sp, [sp["seed"]], [res]) for sp, res in captured])
        repros = [{"name": r.name, "held": o.held, "text": o.text, "data": o.data} for r, o in zip(chosen, outcomes)]
        _err(f"wrote {saved.write_tree(output_dir, 'reproduce', runs, reproductions=repros)}")
    for o in outcomes:
        if o.perf:
            _err(o.perf)
    _err(f"reproduce: {len(outcomes)} experiment(s) in {time.perf_counter() - started:.1f} s")
    if not all(o.held for o in outcomes):
        raise typer.Exit(1)


# --------------------------------------------------------------------------- report


@app.command()
def report(
    results_dirs: list[Path] = typer.Argument(..., metavar="RESULTS", help="Results trees written by --output-dir (one or more directories)."),
    html_text: Optional[str] = typer.Option(
        None, "--html", metavar="DIR",
        help="Also write DIR/index.html: a self-contained HTML report (tables and PNG plots embedded as data: URIs; "
        "the PNGs are written beside it).",
    ),
    proc: Optional[str] = typer.Option(
        None, "--proc", metavar="FILE",
        help="Print /proc/FILE of each saved run instead of the report: vmstat, zoneinfo, buddyinfo, pagetypeinfo, "
        "diskstats or numastat (every node's, as MMTests' numa-numastat monitor logs them), in the kernel's format of its era.",
    ),
    at: Optional[str] = typer.Option(
        None, "--at", metavar="WHEN",
        help="With --proc: start, end (the default), or a simulated time a snapshot was taken at (--proc-at, "
        "--proc-every), e.g. 10s or 500ms.",
    ),
) -> None:
    """Print the MMTests text of saved results (what the command that wrote them printed); --html adds a report page."""
    from mmtwin import results as saved

    html_dir = _dir_option(html_text, "--html")
    if at is not None and proc is None:
        raise MmtwinError("--at: needs --proc FILE")
    if proc is not None:
        from mmtwin.reports.procfs import FILES

        if proc not in FILES:
            raise MmtwinError(f"--proc: {proc!r} is not allowed; one of {', '.join(FILES)}")
        if html_dir is not None:
            raise MmtwinError("--proc: not allowed with --html; print a /proc file or write the HTML report")
        trees = [saved.load(d, "RESULTS") for d in results_dirs]
        texts = [saved.proc_text(t, proc, at if at is not None else "end") for t in trees]
        for t, text in zip(trees, texts):
            if len(trees) > 1:
                _out(f"==> {t.path} <==")
            sys.stdout.write(text)
        return
    out = None
    if html_dir is not None:
        from mmtwin.reports.html import check_html_dir

        out = check_html_dir(html_dir)
    trees = [saved.load(d, "RESULTS") for d in results_dirs]
    texts = [saved.saved_text(t) for t in trees]
    for t, text in zip(trees, texts):
        if len(trees) > 1:
            _out(f"==> {t.path} <==")
        sys.stdout.write(text)
    if out is not None:
        from mmtwin.reports.html import render

        _err(f"wrote {render(trees, texts, out)}")


# --------------------------------------------------------------------------- presets


def _try_load(loader: Any, name: str, problems: list[str]) -> Any:
    try:
        return loader(name)
    except MmtwinError as exc:
        problems.append(exc.message)
        return None


@presets_app.callback()
def presets_list(ctx: typer.Context) -> None:
    """List machine presets, kernel profiles and experiments with their descriptions."""
    if ctx.invoked_subcommand is not None:
        return
    from mmtwin import config

    problems: list[str] = []
    sections = (
        ("machines", config.machine_names(), config.load_machine),
        ("kernels", config.kernel_names(), config.load_kernel),
        ("experiments", config.experiment_names(), config.load_experiment),
    )
    for title, names, loader in sections:
        _out(f"{title}:")
        loaded = [(n, _try_load(loader, n, problems)) for n in names]
        w = max([len(n) for n in names] or [0])
        for n, obj in loaded:
            desc = obj.description if obj is not None else "(invalid, see error below)"
            _out(f"  {n:<{w}}  {desc}")
        if not names:
            _out("  (none)")
    # Nothing to run without a machine and a kernel: a broken installation or a wrong MMTWIN_PRESETS.
    (_, machines, _), (_, kernels, _), _ = sections
    missing = [
        (what, sub)
        for what, sub, names in (("machine presets", "machines", machines), ("kernel profiles", "kernels", kernels))
        if not names
    ]
    if missing:
        what = " or ".join(w for w, _ in missing)
        files = " or ".join(f"{sub}/*.toml" for _, sub in missing)
        problems.append(f"no {what} found: no {files} in {config.describe_dirs(config.presets_dirs())}")
    for p in problems:
        _err(f"mmtwin: error: {p}")
    if problems:
        raise typer.Exit(2)


@presets_app.command("show")
def presets_show(
    name: str = typer.Argument(..., metavar="NAME", help="Machine preset, kernel profile or experiment name (or a .toml path).",
                               autocompletion=_complete_any_preset),
    scale: float = typer.Option(1.0, "--scale", metavar="S", help="Show the machine's memory layout at this scale."),
) -> None:
    """Show one preset: its validated contents and, for a machine, the node and zone layout."""
    from mmtwin import config
    from mmtwin.reports.presets import describe_experiment, describe_kernel, describe_machine

    found = []
    if name.endswith(".toml") or "/" in name:
        # A file: its keys tell what it is.
        keys = set(config.read_toml(Path(name)))
        kinds = ["machine" if "topology" in keys else "kernel" if "era" in keys else "experiment"]
    else:
        kinds = [
            kind
            for kind, names in (
                ("machine", config.machine_names()),
                ("kernel", config.kernel_names()),
                ("experiment", config.experiment_names()),
            )
            if name in names
        ]
    for kind in kinds:
        if kind == "machine":
            found.append(describe_machine(config.load_machine(name), _scale(scale)))
        elif kind == "kernel":
            found.append(describe_kernel(config.load_kernel(name)))
        else:
            exp = config.load_experiment(name)
            # The machine and kernels it names must load too: it cannot run otherwise.
            config.load_experiment_parts(exp, config.display_path(config.experiment_file(name)))
            found.append(describe_experiment(exp))
    if not found:
        available = sorted({*config.machine_names(), *config.kernel_names(), *config.experiment_names()})
        raise MmtwinError(f"unknown preset {name!r}; available: {', '.join(available) or 'none'}")
    _out("\n".join(found))


# --------------------------------------------------------------------------- bench


@app.command()
def bench(
    scenarios: Optional[list[str]] = typer.Option(
        None, "--scenario", "-s", metavar="NAME", help="Scenario to run (repeatable; default: all). See --list.",
        autocompletion=_complete_scenario,
    ),
    list_only: bool = typer.Option(False, "--list", help="List the scenarios and exit."),
    quick: bool = typer.Option(False, "--quick", help="Run each scenario scaled down (for tests and smoke checks)."),
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print a JSON list of {scenario, page_ops, faults, wall_s, page_ops_per_s, faults_per_s, peak_rss_bytes}.",
    ),
) -> None:
    """Measure engine throughput on one core (page operations and faults per second) and peak memory.

    A page operation is a page-level state change: allocate, free, LRU
    add/move/isolate/putback, a reclaim decision, dirtying, writeback start
    or end. Each scenario runs in a fresh subprocess, so peak_rss_bytes is its own.
    """
    from mmtwin import bench as b

    if list_only:
        w = max(len(n) for n in b.SCENARIOS)
        _out("".join(f"{n:<{w}}  {s.description}\n" for n, s in b.SCENARIOS.items()))
        return
    names = scenarios or list(b.SCENARIOS)
    for n in names:
        if n not in b.SCENARIOS:
            raise MmtwinError(f"--scenario: unknown scenario {n!r}; available: {', '.join(b.SCENARIOS)}")
    rows = [b.run_scenario(b.SCENARIOS[n], quick) for n in names]
    _out(_dumps(rows) if json_out else b.format_table(rows))


# --------------------------------------------------------------------------- oracle

oracle_app = typer.Typer(
    help=(
        "Boot a real Linux kernel under QEMU with a machine preset's NUMA topology, run a memory hog, fs_mark or a mapped "
        "file writer in it and print its /proc counters (docs/oracle.md). Needs qemu-system-x86_64, a /boot/vmlinuz-* "
        "(with its modules for a file workload's virtio disk), busybox-static, gcc with a static libc (libc6-dev), "
        "and mkfs.ext4 (e2fsprogs) for a file workload."
    ),
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode=None,
)
app.add_typer(oracle_app, name="oracle")

ORACLE_MEM_HELP = ("Guest memory in MiB, split over the nodes in the preset's proportions (rounded down to 2 MiB per "
                   "node; default: the preset's memory, scaled down to at most 2048 MiB).")
ORACLE_SCALE_HELP = "Guest memory = the preset's memory per node times S (0 < S <= 1); instead of --mem-mib."
ORACLE_MAX_CPUS_HELP = ("At most this many vCPUs in all (default 8): the preset's CPUs are cut, one node at a time, "
                        "and the output says which.")
ORACLE_KERNEL_HELP = "Kernel image to boot (default: the newest /boot/vmlinuz-*)."
ORACLE_ACCEL_HELP = ("auto (default: KVM when /dev/kvm opens and a guest starts under it, else TCG), kvm or tcg. "
                     "Emulated times are not physical: compare counters, never times.")
ORACLE_TIMEOUT_HELP = "Kill QEMU and fail when the guest has not powered off after this many seconds (default 300)."

# Options shared by oracle run, capture and compare (one definition each).
_O_MACHINE = typer.Option(..., "--machine", "-m", metavar="PRESET", help="x86-64 machine preset name or .toml file.",
                          autocompletion=_complete_machine)
_O_MEM = typer.Option(None, "--mem-mib", metavar="N", help=ORACLE_MEM_HELP)
_O_SCALE = typer.Option(None, "--scale", metavar="S", help=ORACLE_SCALE_HELP)
_O_THREADS = typer.Option(1, "--threads", "-t", metavar="N",
                          help="memhog threads or mmapstream processes, one per CPU (CPUs 0..N-1 unless --cpus); "
                               "fsmark takes -t in --fsmark; largedd runs one process.")
_O_CPUS = typer.Option(None, "--cpus", metavar="LIST",
                       help="Guest CPU of each thread, e.g. 0-3 or 0,4 (fsmark, largedd: the CPUs its processes may run "
                            "on, default all).")
_O_SIZE = typer.Option(None, "--size-mib", metavar="N",
                       help="MiB the workload touches in all, one store per 4 KiB page (default: memhog half of node 0, "
                            "mmapstream 1.5 x the guest's memory; fsmark: from --fsmark; largedd: from --set).")
_O_WORKLOAD = typer.Option("memhog", "--workload", "-w", metavar="KIND",
                           help="memhog (anonymous memory; default), mmapstream (shared file mappings written page by "
                                "page on ext4 (or --fs xfs) on a virtio disk, then removed: the twin's workload of that name, stage 1) "
                                "fsmark (fs_mark's files written on that disk, --fsmark) or largedd (LARGE DD: a tarfile "
                                "downloaded, dd'd several times, the copies deleted; --set).")
_O_TRACE = typer.Option(None, "--trace", metavar="FILE",
                        help="Write the guest kernel's vmscan tracepoints during the workload (ftrace text, read out of "
                             "its disk; the memory hog gets an ext4 disk for it, 64 MiB and 8 MiB a CPU; not with --fs "
                             "xfs) to FILE and count them; with compare, "
                             "the twin's trace goes to FILE.twin and the counts are printed side by side.")
_O_FSMARK = typer.Option(None, "--fsmark", metavar="ARGS",
                         help="--workload fsmark: fs_mark's command line as 'mmtwin run --fsmark' takes it (-d -D -N -n -L "
                              "-t -s -w, -S0); its processes may run on every CPU of --cpus (default: all).")
_O_DISK = typer.Option(None, "--disk-mib", metavar="N",
                       help="mmapstream, fsmark, largedd: the virtio disk's size in MiB (default: the files, a quarter more and 256 MiB). "
                            "A sparse image in the oracle's cache, formatted on the host (ext4, or --fs).")
_O_SWAP = typer.Option(None, "--swap-mib", metavar="N",
                       help="Give the guest N MiB of swap on a virtio disk of its own (a sparse image in the oracle's "
                            "cache; the guest's mkswap and swapon), and the twin a swap area of that size; the memory "
                            "hog may then be larger than the guest's memory.")
_O_PASSES = typer.Option(1, "--passes", metavar="N",
                         help="memhog: touch the memory N times over (1..1000); with --swap-mib the later passes fault "
                              "back in what reclaim swapped out.")
_O_SET = typer.Option(None, "--set", metavar="KEY=VALUE",
                      help="--workload largedd: tar_mib=N (required), copies=N (required), dd_kib=K (dd's bs, default "
                           "1024) and download_mib_s=N (required), as the twin's largedd takes them (repeatable).")
_O_FS = typer.Option(None, "--fs", metavar="ext4|xfs",
                     help="mmapstream, fsmark, largedd: the filesystem on the virtio disk, made on the host (default ext4; "
                          "xfs needs mkfs.xfs, Debian's xfsprogs). The twin gets the same kind.")
_O_MAX_CPUS = typer.Option(8, "--max-cpus", metavar="N", help=ORACLE_MAX_CPUS_HELP)
_O_KERNEL = typer.Option(None, "--kernel", metavar="FILE", help=ORACLE_KERNEL_HELP)
_O_ACCEL = typer.Option("auto", "--accel", metavar="auto|kvm|tcg", help=ORACLE_ACCEL_HELP)
_O_TIMEOUT = typer.Option(300.0, "--timeout", metavar="SECONDS", help=ORACLE_TIMEOUT_HELP)


@oracle_app.callback()
def oracle_root(
    ctx: typer.Context,
    clean_cache: bool = typer.Option(False, "--clean", help="Remove the oracle's cache directory (same as 'oracle clean')."),
) -> None:
    """Boot a real Linux kernel beside the twin. Every file it makes lives under $XDG_CACHE_HOME/mmtwin/oracle
    (default ~/.cache/mmtwin/oracle)."""
    if clean_cache:
        _oracle_clean()
        raise typer.Exit()
    if ctx.invoked_subcommand is None:
        _out(ctx.get_help())


def _oracle_clean() -> None:
    from mmtwin.oracle import guest

    try:
        path, existed = guest.clean()
    except OSError as exc:
        raise MmtwinError(f"oracle clean: cannot remove {guest.cache_dir()}: {exc.strerror}") from None
    _out(f"removed {path}" if existed else f"nothing to remove: {path} does not exist")


@oracle_app.command("clean")
def oracle_clean() -> None:
    """Remove the oracle's cache directory ($XDG_CACHE_HOME/mmtwin/oracle): initramfs, KVM verdict, kept serial logs."""
    _oracle_clean()


def _oracle_machine(machine: str) -> Any:
    from mmtwin.config import load_machine

    try:
        return load_machine(machine)
    except MmtwinError as exc:
        text = str(exc)
        raise MmtwinError(text if text.startswith("--machine") else f"--machine: {text}") from None


@oracle_app.command("run")
def oracle_run_cmd(
    machine: str = _O_MACHINE,
    mem_mib: Optional[int] = _O_MEM,
    scale: Optional[float] = _O_SCALE,
    threads: int = _O_THREADS,
    cpus: Optional[str] = _O_CPUS,
    size_mib: Optional[int] = _O_SIZE,
    workload: str = _O_WORKLOAD,
    disk_mib: Optional[int] = _O_DISK,
    fsmark: Optional[str] = _O_FSMARK,
    trace: Optional[str] = _O_TRACE,
    swap_mib: Optional[int] = _O_SWAP,
    passes: int = _O_PASSES,
    fs: Optional[str] = _O_FS,
    sets: Optional[list[str]] = _O_SET,
    sysctl: Optional[list[str]] = typer.Option(None, "--sysctl", metavar="KEY=VALUE",
                                               help="Set a sysctl in the guest before the workload, e.g. vm.zone_reclaim_mode=1 (repeatable)."),
    max_cpus: int = _O_MAX_CPUS,
    kernel: Optional[str] = _O_KERNEL,
    accel: str = _O_ACCEL,
    timeout: float = _O_TIMEOUT,
    json_out: bool = typer.Option(False, "--json", help="Print everything parsed (per-phase snapshots, summary) as JSON."),
    output_dir_text: Optional[str] = typer.Option(None, "--output-dir", metavar="DIR",
                                                  help="Also write the raw /proc and /sys files per phase, the serial log and oracle.json in DIR."),
) -> None:
    """Boot the preset's topology, run the workload, and print zone watermarks, placement and vmstat counters.

    The guest dumps /proc/vmstat, zoneinfo, buddyinfo, pagetypeinfo, meminfo and each node's numastat
    before the workload, when it has touched all its memory (during: the hog still holds it; the mapped
    files are still cached) and after it exits (the files removed).
    """
    from mmtwin.oracle import guest, run as orun

    out_dir = orun.check_output_dir(_dir_option(output_dir_text, "--output-dir"))
    m = _oracle_machine(machine)
    # Check the settings before the (slow) boot.
    topo = guest.guest_topology(m, mem_mib, scale, max_cpus)
    orun.parse_sysctls(sysctl)
    orun.check_trace(trace, orun.workload(topo, size_mib, threads, cpus, workload, disk_mib, fsmark, swap_mib, passes,
                                          fs, sets))
    doc, result = orun.oracle_run(m, mem_mib=mem_mib, scale=scale, max_cpus=max_cpus, size_mib=size_mib,
                                  threads=threads, cpus=cpus, sysctls=sysctl, kernel=kernel, accel=accel,
                                  timeout=timeout, kind=workload, disk_mib=disk_mib, trace=trace, fsmark=fsmark,
                                  swap_mib=swap_mib, passes=passes, fs=fs, sets=sets)
    if result.note:
        _err(f"oracle: {result.note}")
    _err(f"oracle: guest booted, ran and powered off in {result.wall_s:.1f} s wall ({result.accel}); "
         "emulated times are not physical: compare counters, never times")
    if out_dir is not None:
        orun.write_raw(out_dir, doc, result)
    _out(_dumps(doc) if json_out else orun.format_summary(doc))


@oracle_app.command("capture")
def oracle_capture_cmd(
    machine: str = _O_MACHINE,
    out: Path = typer.Option(..., "--out", metavar="FILE.toml", help="The machine preset to write; its stem becomes its name."),
    mem_mib: Optional[int] = _O_MEM,
    scale: Optional[float] = _O_SCALE,
    max_cpus: int = _O_MAX_CPUS,
    kernel: Optional[str] = _O_KERNEL,
    accel: str = _O_ACCEL,
    timeout: float = _O_TIMEOUT,
) -> None:
    """Boot the preset's topology (no workload) and write a machine preset with the real kernel's zone layout.

    Node memory, CPUs and distances as the guest reported them; reserved_mib per node = memory less the
    pages the kernel manages. What a preset cannot express (per-zone reserve split, watermarks) is written
    in the file's source text (docs/oracle.md). Check it with 'mmtwin presets show FILE.toml'.
    """
    from mmtwin.oracle import capture, guest, run as orun

    path = capture.check_out(out)
    m = _oracle_machine(machine)
    guest.guest_topology(m, mem_mib, scale, max_cpus)
    doc, result = orun.oracle_run(m, mem_mib=mem_mib, scale=scale, max_cpus=max_cpus, kernel=kernel, accel=accel,
                                  timeout=timeout, workload_on=False)
    if result.note:
        _err(f"oracle: {result.note}")
    _err(f"oracle: guest booted and powered off in {result.wall_s:.1f} s wall ({result.accel})")
    capture.write_preset(path, capture.preset_toml(path.stem, m, doc))
    _out(f"wrote {path}: {doc['guest']['nodes']} nodes, memory {'+'.join(map(str, doc['guest']['memory_mib']))} MiB, "
         f"Linux {doc['kernel']['release']}")


@oracle_app.command("compare")
def oracle_compare_cmd(
    machine: str = _O_MACHINE,
    mem_mib: Optional[int] = _O_MEM,
    scale: Optional[float] = _O_SCALE,
    threads: int = _O_THREADS,
    cpus: Optional[str] = _O_CPUS,
    size_mib: Optional[int] = _O_SIZE,
    workload: str = _O_WORKLOAD,
    disk_mib: Optional[int] = _O_DISK,
    fsmark: Optional[str] = _O_FSMARK,
    trace: Optional[str] = _O_TRACE,
    swap_mib: Optional[int] = _O_SWAP,
    passes: int = _O_PASSES,
    fs: Optional[str] = _O_FS,
    sets: Optional[list[str]] = _O_SET,
    sysctl: Optional[list[str]] = typer.Option(None, "--sysctl", metavar="KEY=VALUE",
                                               help="Set a sysctl in the guest (and so in the twin, for min_free_kbytes, "
                                                    "lowmem_reserve_ratio, zone_reclaim_mode and the vm sysctls it has: dirty "
                                                    "ratios and intervals, swappiness, vfs_cache_pressure, min_unmapped_ratio, "
                                                    "min_slab_ratio, watermark_boost_factor) before the workload (repeatable)."),
    tolerance: float = typer.Option(0.05, "--tolerance", metavar="FRACTION",
                                    help="How far the twin's held counters may be from the real ones (default 0.05)."),
    max_cpus: int = _O_MAX_CPUS,
    kernel: Optional[str] = _O_KERNEL,
    accel: str = _O_ACCEL,
    timeout: float = _O_TIMEOUT,
    json_out: bool = typer.Option(False, "--json", help="Print the real run, the twin's result and the comparison as JSON."),
) -> None:
    """Run the workload on the real kernel and on the twin with the guest's own layout, side by side.

    Zone watermarks and protection must agree exactly; the held counters within --tolerance: for the memory
    hog its placement (numastat per node, pgalloc per zone) and pgfault (under swap its faults of one
    pass only), for mmapstream pgfault and nr_dirtied, for fsmark and largedd nr_dirtied, with what reclaim
    and writeback did printed beside them and not held. Exits 1 when either does not agree
    (docs/oracle.md, "compare").
    """
    from mmtwin.engine import run_spec, strip_perf
    from mmtwin.oracle import compare as ocmp, guest, run as orun

    if not 0 < tolerance < 1:
        raise MmtwinError(f"--tolerance: {tolerance:g} is not allowed; expected a fraction between 0 and 1, e.g. 0.05")
    m = _oracle_machine(machine)
    topo = guest.guest_topology(m, mem_mib, scale, max_cpus)
    ocmp.check_twin_sysctls(orun.parse_sysctls(sysctl))
    orun.check_trace(trace, orun.workload(topo, size_mib, threads, cpus, workload, disk_mib, fsmark, swap_mib, passes,
                                          fs, sets))
    doc, result = orun.oracle_run(m, mem_mib=mem_mib, scale=scale, max_cpus=max_cpus, size_mib=size_mib,
                                  threads=threads, cpus=cpus, sysctls=sysctl, kernel=kernel, accel=accel,
                                  timeout=timeout, extra_conf=ocmp.WMARK_RECOMPUTE, kind=workload,
                                  disk_mib=disk_mib, trace=trace, fsmark=fsmark, swap_mib=swap_mib, passes=passes,
                                  calibrate=True, fs=fs, sets=sets)
    if result.note:
        _err(f"oracle: {result.note}")
    _err(f"oracle: guest booted, ran and powered off in {result.wall_s:.1f} s wall ({result.accel})")
    spec, disk = ocmp.twin_spec(m, doc)
    if trace is not None:
        from mmtwin.resolve import trace_spec

        spec["trace"] = trace_spec(f"{trace}.twin")
    twin = strip_perf(run_spec(spec))
    cmp = ocmp.compare(doc, twin, tolerance)
    cmp["twin_disk"] = disk
    if trace is not None:
        cmp["trace"] = ocmp.compare_traces(doc["trace"], orun.trace_summary(Path(f"{trace}.twin").read_text()),
                                           f"{trace}.twin")
    if json_out:
        _out(_dumps({"real": doc, "twin": twin, "compare": cmp}))
    else:
        _out(ocmp.format_compare(doc, cmp))
    if not (cmp["watermarks_exact"] and cmp["placement_within"]):
        raise typer.Exit(1)


# --------------------------------------------------------------------------- entry point


def _usage_error_types() -> tuple[type[BaseException], ...]:
    """Click's usage-error base class: vendored inside typer (>= 0.2x) or the click package."""
    found: list[type[BaseException]] = []
    try:
        from typer._click.exceptions import ClickException as Vendored

        found.append(Vendored)
    except ImportError:
        pass
    try:
        from click.exceptions import ClickException as Click

        found.append(Click)
    except ImportError:
        pass
    return tuple(found)


def _abort_types() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = [typer.Abort]
    try:
        from click.exceptions import Abort as ClickAbort

        found.append(ClickAbort)
    except ImportError:
        pass
    return tuple(found)


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: run the CLI, turning user errors into one line and exit status 2."""
    command = typer.main.get_command(app)
    try:
        rv = command.main(args=argv, prog_name="mmtwin", standalone_mode=False)
    except MmtwinError as exc:
        _err(f"mmtwin: error: {exc.message}")
        sys.exit(2)
    except _usage_error_types() as exc:
        exc.show()  # type: ignore[attr-defined]
        sys.exit(getattr(exc, "exit_code", 2))
    except _abort_types():
        _err("mmtwin: aborted")
        sys.exit(1)
    except KeyboardInterrupt:
        _err("mmtwin: interrupted")
        sys.exit(130)
    except BrokenPipeError:
        # Output piped into e.g. `head`: stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except Exception as exc:  # an mmtwin bug, not a user error
        if os.environ.get("MMTWIN_DEBUG"):
            raise
        _err(f"mmtwin: internal error: {type(exc).__name__}: {exc} (set MMTWIN_DEBUG=1 for a traceback)")
        sys.exit(3)
    sys.exit(rv if isinstance(rv, int) else 0)
