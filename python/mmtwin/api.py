"""The Python API: run the engine from a script or a notebook and get pandas objects.

    import mmtwin
    r = mmtwin.run(experiment="reclaim-writeback-xfs", run="fsmark-512M", scale=0.1)
    r.vmstat_delta["nr_vmscan_write"]       # a pandas Series of /proc/vmstat deltas
    r.timeline                              # DataFrame: free pages per zone, dirty, writeback, counters
    print(r.mmtests())                      # the MMTests 2011 report of this run
    mmtwin.compare(experiment="reclaim-writeback-xfs", run="fsmark-512M", scale=0.1)  # DataFrame

Bad arguments raise MmtwinError with one line naming the argument, the value
and what is allowed; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmtwin.errors import MmtwinError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - pandas is a dependency
        raise MmtwinError(f"the Python API needs pandas ({exc}); install it with pip install pandas") from None
    return pandas


@dataclass(frozen=True)
class Result:
    """One run: its engine specification and result, with pandas views."""

    kernel: str
    spec: dict[str, Any]
    raw: dict[str, Any]  # the engine's result (docs/engine-api.md), without the non-deterministic perf

    @property
    def vmstat(self) -> "pd.Series":
        """/proc/vmstat at the end of the run, in the era's order."""
        return _pandas().Series(self.raw["vmstat"], name=self.kernel, dtype="int64")

    @property
    def vmstat_delta(self) -> "pd.Series":
        """/proc/vmstat at the end less at the start (what MMTests reports from)."""
        start = self.raw.get("vmstat_start") or {}
        return _pandas().Series({k: int(v) - int(start.get(k, 0)) for k, v in self.raw["vmstat"].items()},
                                name=self.kernel, dtype="int64")

    @property
    def zones(self) -> "pd.DataFrame":
        """One row per zone (node, zone, present, watermarks, counters at the end)."""
        pd = _pandas()
        rows = [{k: v for k, v in z.items() if not isinstance(v, list)} for z in self.raw.get("zones", [])]
        frame = pd.DataFrame(rows)
        return frame.set_index(["node", "zone"]) if not frame.empty else frame

    @property
    def timeline(self) -> "pd.DataFrame":
        """Samples over simulated time: free pages per zone ("free N<node>/<zone>"), nr_dirty,
        nr_writeback, then the sampled event counters (``mmtwin.results.TIMELINE_COUNTERS``),
        each counted from the start of the run; ``.diff()`` over the index's differences
        gives rates."""
        from mmtwin.results import timeline_frame

        _pandas()
        return timeline_frame(self.raw).set_index("t_s")

    @property
    def tasks(self) -> "pd.DataFrame":
        """One row per task: comm, kind, user, sys and iowait seconds, wakeups."""
        pd = _pandas()
        frame = pd.DataFrame(self.raw.get("tasks", []))
        return frame.set_index("pid") if not frame.empty else frame

    @property
    def times(self) -> dict[str, float]:
        return dict(self.raw["times"])

    @property
    def benchmark(self) -> dict[str, Any]:
        return dict(self.raw.get("benchmark") or {})

    @property
    def snapshots(self) -> list[str]:
        """When the run's /proc snapshots were taken, as ``proc(at=...)`` names them: ``start``, the
        ``proc_at``/``proc_every`` times (``10s``, ``500ms``) and ``end``, in time order."""
        from mmtwin.reports.procfs import snapshot_label

        return list(dict.fromkeys(snapshot_label(sn) for sn in self.raw.get("snapshots") or []))

    def proc(self, file: str, at: str = "end") -> str:
        """The text of /proc/``file`` (vmstat, zoneinfo, buddyinfo, pagetypeinfo, diskstats, or numastat: every
        node's after ``node: N``) at snapshot ``at``, as the kernel of the run's era prints it."""
        from mmtwin.reports import procfs

        if file not in procfs.FILES:
            raise MmtwinError(f"file: {file!r} is not allowed; one of {', '.join(procfs.FILES)}")
        snap = procfs.find_snapshot(self.raw.get("snapshots") or [], at, "at")
        try:
            return procfs.render(file, snap, procfs.Machine.of(self.spec, self.raw))
        except MmtwinError as err:
            raise MmtwinError(err.message.replace("--proc", "file", 1)) from None

    def mmtests(self) -> str:
        """The MMTests 2011 report of this run alone (file workloads) or its vmstat text (memory hog)."""
        kind = self.spec["workload"]["kind"]
        if kind == "memhog":
            from mmtwin.reports import vmstat

            return vmstat.proc_vmstat(self.raw)
        from mmtwin.reports import mmtests2011 as mt

        command = mt.fsmark_command(self.spec["workload"]) if kind == "fsmark" else None
        return mt.report(kind, [mt.column_from_result(self.kernel, kind, self.raw)], command)


def _name(value: Any, argument: str, what: str) -> str | None:
    """A preset, profile, experiment or run name (or a file path, str or os.PathLike), or None."""
    import os

    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)  # type: ignore[return-value]
    raise MmtwinError(f"{argument}: {value!r} is not allowed; expected {what}")


def _check_arguments(seed: Any, check: Any, jobs: Any = None) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
        raise MmtwinError(f"seed: {seed!r} is not allowed; expected an integer 0 <= seed < 2^64, or None for the default")
    if not isinstance(check, bool):
        raise MmtwinError(f"check: {check!r} is not allowed; expected True or False")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise MmtwinError(f"jobs: {jobs!r} is not allowed; expected an integer >= 1, or None for the number of CPUs")


def _scale(scale: Any) -> Any:
    from mmtwin.resolve import parse_scale

    try:
        return parse_scale(scale)
    except MmtwinError as err:
        raise MmtwinError(err.message.replace("--scale", "scale", 1)) from None


def _snapshots(spec: dict[str, Any], proc_at: Any, proc_every: Any) -> dict[str, Any]:
    """``spec`` with the /proc snapshots ``proc_at`` (times: "10s", "500ms", or seconds as numbers) and
    ``proc_every`` (a time) ask for; the start and the end are always recorded."""
    from mmtwin.reports import procfs

    if proc_at is None and proc_every is None:
        return spec

    def ms(value: Any, name: str) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise MmtwinError(f"{name}: {value!r} is not allowed; expected a simulated time such as '10s', '500ms' or 2.5 (seconds)")
        return procfs.parse_time_ms(str(value), name)

    at: list[int] = []
    if proc_at is not None:
        values = [proc_at] if isinstance(proc_at, (str, int, float)) and not isinstance(proc_at, bool) else proc_at
        if not isinstance(values, Sequence):
            raise MmtwinError(f"proc_at: {proc_at!r} is not allowed; expected a time or a list of times")
        at = [ms(v, "proc_at") for v in values]
    every = None
    if proc_every is not None:
        every = ms(proc_every, "proc_every")
        if every == 0:
            raise MmtwinError(f"proc_every: {proc_every!r} is not allowed; 1ms to 86400s")
    return {**spec, "snapshots": procfs.snapshots_spec(spec, at, every, option_at="proc_at", option_every="proc_every")}


def _plan(machine: str | None, kernels: Sequence[str], workload: Mapping[str, Any] | None, experiment: str | None,
          run: str | None, sysctl: Mapping[str, Any] | None, scale: Any, seed: int | None, check: bool,
          proc_at: Any = None, proc_every: Any = None) -> list[tuple[str, dict[str, Any]]]:
    from mmtwin import config
    from mmtwin import experiment as experiments
    from mmtwin.resolve import resolve_spec

    frac = _scale(scale)
    _check_arguments(seed, check)
    machine = _name(machine, "machine", "a machine preset name or file path")
    experiment = _name(experiment, "experiment", "an experiment name or file path")
    run = _name(run, "run", "the name of one of the experiment's runs")
    loaded = None
    if experiment is not None:
        loaded = experiments.load(experiment)
        exp = loaded.experiment
        if workload is not None and run is not None:
            raise MmtwinError("workload: not allowed together with run; the run names the experiment's workload")
        if workload is None:
            if run is None:
                names = ", ".join(r.name for r in exp.runs or []) or "none (a [matrix] experiment: pass workload=)"
                raise MmtwinError(f"run: missing; experiment {exp.name} has runs {names}")
            workload_model = exp.run_named(run).workload
        else:
            workload_model = None
    else:
        if run is not None:
            raise MmtwinError(f"run: {run!r} is not allowed without experiment=")
        if machine is None:
            raise MmtwinError("machine: missing; give a machine preset name or file (or experiment=)")
        if workload is None:
            raise MmtwinError("workload: missing; give a workload table, e.g. {'kind': 'memhog', 'size_gb': 1} (or experiment= and run=)")
        workload_model = None
    if workload is not None:
        if not isinstance(workload, Mapping):
            raise MmtwinError(f"workload: {workload!r} is not allowed; expected a mapping like an experiment's [runs.workload] table")
        workload_model = config.validate_workload(dict(workload), "workload")
    m = config.load_machine(machine) if machine is not None else loaded.machine  # type: ignore[union-attr]
    names = list(kernels) if kernels else ([k.name for k in loaded.kernels] if loaded is not None else [])
    if not names:
        raise MmtwinError("kernel: missing; give a kernel profile name (or experiment= for its kernels)")
    override = None
    if sysctl is not None:
        if not isinstance(sysctl, Mapping):
            raise MmtwinError(f"sysctl: {sysctl!r} is not allowed; expected a mapping of sysctl names to values")
        override = config.validate(config.Sysctl, dict(sysctl), "sysctl")
    out = []
    for name in names:
        k = config.load_kernel(name)
        if loaded is not None:
            k = experiments.with_experiment_sysctl(loaded.experiment, k)
        if override is not None:
            given = {key: getattr(override, key) for key in sorted(override.model_fields_set)}
            k = k.model_copy(update={"sysctl": k.sysctl.model_copy(update=given)})
        seed_value = seed if seed is not None else (loaded.experiment.seed if loaded is not None else 1)
        spec = resolve_spec(m, k, workload_model, seed=seed_value, scale=frac, check=check)
        out.append((k.name, _snapshots(spec, proc_at, proc_every)))
    return out


def run(*, machine: str | None = None, kernel: str | None = None, workload: Mapping[str, Any] | None = None,
        experiment: str | None = None, run: str | None = None, sysctl: Mapping[str, Any] | None = None,
        scale: Any = 1, seed: int | None = None, check: bool = False, proc_at: Any = None,
        proc_every: Any = None) -> Result:
    """Run one workload on one kernel. Either machine= and workload= (a table as in an
    experiment's [runs.workload]), or experiment= and run= (kernel= defaults to the
    experiment's baseline). sysctl= overrides the kernel profile's sysctls. proc_at= (a time or
    a list: "10s", "500ms", 2.5) and proc_every= record /proc snapshots then (Result.proc)."""
    from mmtwin import engine

    kernel = _name(kernel, "kernel", "one kernel profile name or file path (compare() takes several)")
    if kernel == "":
        raise MmtwinError("kernel: '' is not allowed; expected a kernel profile name or file path, or None for the experiment's baseline")
    planned = _plan(machine, [kernel] if kernel else [], workload, experiment, run, sysctl, scale, seed, check,
                    proc_at, proc_every)
    name, spec = planned[0]
    return Result(name, spec, engine.strip_perf(engine.run_spec(spec)))


def compare(*, kernels: Sequence[str] | None = None, machine: str | None = None, workload: Mapping[str, Any] | None = None,
            experiment: str | None = None, run: str | None = None, sysctl: Mapping[str, Any] | None = None,
            scale: Any = 1, seed: int | None = None, jobs: int | None = None, check: bool = False,
            proc_at: Any = None, proc_every: Any = None) -> "pd.DataFrame":
    """Run the same workload on several kernels (default: the experiment's) and return the
    MMTests 2011 rows (benchmark, duration, vmstat) as a DataFrame, one column per kernel.
    The Result of each run is in the frame's ``attrs["results"]``."""
    from mmtwin import engine
    from mmtwin.reports import mmtests2011 as mt

    if kernels is not None and (not isinstance(kernels, (list, tuple)) or not all(isinstance(k, str) and k for k in kernels)):
        raise MmtwinError(f"kernels: {kernels!r} is not allowed; expected a list of kernel profile names")
    if kernels is not None and len(set(kernels)) != len(kernels):
        raise MmtwinError(f"kernels: {list(kernels)!r} names a kernel twice; each at most once")
    _check_arguments(seed, check, jobs)
    planned = _plan(machine, list(kernels or []), workload, experiment, run, sysctl, scale, seed, check,
                    proc_at, proc_every)
    if len(planned) < 2:
        raise MmtwinError(f"kernels: {len(planned)} given; a comparison needs at least two (the first is the baseline)")
    results = engine.run_many([spec for _, spec in planned], jobs, label="compare", progress=False)
    runs = [Result(name, spec, engine.strip_perf(r)) for (name, spec), r in zip(planned, results)]
    kind = planned[0][1]["workload"]["kind"]
    pd = _pandas()
    if kind == "memhog":
        frame = pd.DataFrame({r.kernel: r.vmstat_delta for r in runs})
    else:
        cols = [mt.column_from_result(r.kernel, kind, r.raw) for r in runs]
        rows = [*cols[0].bench, *mt.DURATION_ROWS, *mt.vmstat_rows(cols)]
        frame = pd.DataFrame({c.name: [c.number(row) if row in c.bench or row in c.duration or row in c.vmstat else 0.0
                                       for row in rows] for c in cols}, index=pd.Index(rows, name="row"))
    frame.attrs["results"] = runs
    return frame
