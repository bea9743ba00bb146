"""``mmtwin sweep``: the cross product of parameter values, each run N times,
on a local process pool or a Ray cluster, resumable, written as tidy rows
(docs/sweep.md).

Plan. The axes are, in order: the experiment's own (its kernels, then its
runs or its matrix's sizes and thread counts) unless fixed by an option or
varied explicitly, then each ``--vary KEY=V1,V2,...`` in the order given. The
cells are the cross product with the last axis varying fastest; each cell
runs ``--iterations`` times with the seeds of ``mmtwin.iterations``. Every
cell is resolved to an engine spec before anything runs, so a bad key or
value stops the sweep at once with one line.

Resume. Each finished run is appended as one JSON line to the state file
``<out>.state.jsonl`` (flushed and fsynced), keyed by the SHA-256 of the
engine version and the run's full specification (machine, kernel, workload,
scale, seed). A rerun reads the state file and runs only the keys it lacks;
a line cut short by a kill is ignored and its run is redone.

Executors. The same task function (run the engine, reduce the result to its
figures and a digest) runs on a ``concurrent.futures`` process pool or as Ray
tasks; rows are assembled in plan order from the keys, so the output does not
depend on which executor ran what, in what order, or how many workers there
were.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mmtwin.errors import MmtwinError

# CLI option -> workload field (the options of 'mmtwin run' that set one).
_OPTION_FIELDS = (("--size-gb", "size_gb"), ("--threads", "threads"), ("--stride", "stride"), ("--cpus", "cpus"),
                  ("--mems", "mems_allowed"))
STATE_SUFFIX = ".state.jsonl"
STATE_VERSION = 1
TOP_KEYS = ("machine", "kernel", "run", "scale", "seed")
CHUNK = 6  # cells per summary table


# --------------------------------------------------------------------------- --vary parsing


def split_values(text: str) -> list[str]:
    """Split ``V1,V2,...`` at commas outside brackets and quotes (``[0,1],[2,3]`` is two values)."""
    out: list[str] = []
    depth = 0
    quote = ""
    cur: list[str] = []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    return out


def parse_value(text: str) -> Any:
    """A value in TOML syntax (``20``, ``0.5``, ``[0, 1]``, ``"x"``, ``true``), else the bare text."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def value_text(value: Any) -> str:
    """A value as a short TOML-like text (for cell names and text columns)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Fraction):
        return format(float(value), "g")
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True)
class Target:
    """What an axis sets: ``("top", "kernel")``, ``("machine", "storage.devices.0.bandwidth_mib_s")``,
    ``("kernel", "sysctl.dirty_ratio")`` or ``("workload", "files")``."""

    where: str
    path: str

    @property
    def canonical(self) -> str:
        return self.path if self.where in ("top", "workload") else f"{self.where}.{self.path}"


@dataclass(frozen=True)
class Axis:
    key: str  # as written (the column name)
    target: Target
    values: tuple[Any, ...]
    implicit: bool = False  # from the experiment, not from --vary
    texts: tuple[str, ...] = ()  # as written (explicit axes)

    def text(self, i: int) -> str:
        return self.texts[i] if self.texts else value_text(self.values[i])


def _fields(model: Any) -> list[str]:
    return list(model.model_fields)


def _sysctl_fields() -> list[str]:
    from mmtwin.config import Sysctl

    return _fields(Sysctl)


def _workload_fields(kinds: Sequence[str]) -> list[str]:
    from mmtwin.config import WORKLOAD_MODELS

    out: list[str] = []
    for kind in kinds:
        out += [f for f in WORKLOAD_MODELS[kind].model_fields if f != "kind" and f not in out]
    return out


def _allowed_keys(kinds: Sequence[str]) -> str:
    return (
        f"{', '.join(TOP_KEYS)}; sysctl.NAME or NAME ({', '.join(_sysctl_fields())}); "
        f"workload.NAME or NAME ({', '.join(_workload_fields(kinds))}); machine.FIELD.PATH; kernel.FIELD.PATH"
    )


def classify(key: str, kinds: Sequence[str]) -> Target:
    """The target of a --vary key; unknown keys are one-line errors listing what is allowed."""
    from mmtwin.config import Kernel, Machine

    if key in TOP_KEYS:
        return Target("top", key)
    head, dot, rest = key.partition(".")
    if dot and head == "machine":
        if not rest or rest.split(".")[0] not in Machine.model_fields:
            raise MmtwinError(f"--vary: unknown key {key!r}; machine fields: {', '.join(_fields(Machine))}")
        return Target("machine", rest)
    if dot and head == "kernel":
        if not rest or rest.split(".")[0] not in Kernel.model_fields:
            raise MmtwinError(f"--vary: unknown key {key!r}; kernel fields: {', '.join(_fields(Kernel))}")
        return Target("kernel", rest)
    if dot and head == "sysctl":
        if rest not in _sysctl_fields():
            raise MmtwinError(f"--vary: unknown key {key!r}; sysctls: {', '.join(_sysctl_fields())}")
        return Target("kernel", f"sysctl.{rest}")
    if dot and head == "workload":
        fields = _workload_fields(kinds)
        if rest not in fields:
            raise MmtwinError(f"--vary: unknown key {key!r}; fields of the {'/'.join(kinds)} workload: {', '.join(fields)}")
        return Target("workload", rest)
    if not dot:
        if key in _sysctl_fields():
            return Target("kernel", f"sysctl.{key}")
        if key in _workload_fields(kinds):
            return Target("workload", key)
    raise MmtwinError(f"--vary: unknown key {key!r}; allowed: {_allowed_keys(kinds)}")


def parse_vary(item: str, kinds: Sequence[str]) -> Axis:
    """``KEY=V1,V2,...`` -> an Axis (values parsed; names stay text)."""
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key or not text.strip():
        raise MmtwinError(f"--vary: {item!r} is not allowed; expected KEY=V1,V2,... (e.g. sysctl.dirty_ratio=20,40)")
    target = classify(key, kinds)
    texts = split_values(text)
    for t in texts:
        if not t:
            raise MmtwinError(f"--vary {key}: {text!r} has an empty value; expected KEY=V1,V2,... with no empty item")
    if len(set(texts)) != len(texts):
        dup = next(t for i, t in enumerate(texts) if t in texts[:i])
        raise MmtwinError(f"--vary {key}: {dup!r} is given twice in {text!r}; each value at most once")
    if target.where == "top" and target.path in ("machine", "kernel", "run"):
        values: list[Any] = list(texts)  # names and paths, never numbers
    elif target.path == "scale":
        from mmtwin.resolve import parse_scale

        values = []
        for t in texts:
            try:
                values.append(parse_scale(t))
            except MmtwinError:
                raise MmtwinError(f"--vary scale: {t!r} is not allowed; expected a number S with 0 < S <= 1") from None
    elif target.path == "seed":
        values = []
        for t in texts:
            v = parse_value(t)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**64:
                raise MmtwinError(f"--vary seed: {t!r} is not allowed; expected an integer 0 <= seed < 2^64")
            values.append(v)
    else:
        values = [parse_value(t) for t in texts]
    return Axis(key, target, tuple(values), texts=tuple(texts))


# --------------------------------------------------------------------------- the sweep's fixed inputs


@dataclass
class Base:
    """Everything the options fix: like ``mmtwin run``'s, plus the experiment."""

    experiment: str | None = None
    machine: str | None = None
    kernel: str | None = None
    run: str | None = None
    workload: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    fsmark: str | None = None
    sets: list[str] = field(default_factory=list)
    scale: Fraction = Fraction(1)
    seed: int | None = None
    check: bool = False


@dataclass(frozen=True)
class PlannedRun:
    cell: int
    iteration: int
    seed: int
    params: dict[str, Any]  # the row's parameter columns
    spec: dict[str, Any]
    key: str


@dataclass
class Plan:
    axes: list[Axis]
    cells: list[dict[str, Any]]  # per cell: the parameter columns
    cell_names: list[str]
    runs: list[PlannedRun]
    iterations: int
    kinds: list[str]


def _set_path(data: dict[str, Any], path: str, value: Any, what: str) -> None:
    """Set ``a.b.0.c`` in nested dicts and lists (a missing table is created; a list index must exist)."""
    parts = path.split(".")
    cur: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(cur, list):
            if not part.isdigit() or int(part) >= len(cur):
                raise MmtwinError(f"{what}: {'.'.join(parts[: i + 1])}: no entry {part!r}; the list has {len(cur)} (0..{len(cur) - 1})")
            idx = int(part)
            if last:
                cur[idx] = value
            else:
                cur = cur[idx]
            continue
        if not isinstance(cur, dict):
            raise MmtwinError(f"{what}: {'.'.join(parts[:i])} is {value_text(cur)!s}, not a table with {part!r}")
        if last:
            cur[part] = value
        else:
            if cur.get(part) is None:
                if part in cur:
                    raise MmtwinError(f"{what}: {'.'.join(parts[: i + 1])} is not set in this preset, so it has no {parts[i + 1]!r}")
                cur[part] = {}
            cur = cur[part]


class _Resolver:
    """Turns one cell (axis values) into an engine spec; presets are read once."""

    def __init__(self, base: Base) -> None:
        from mmtwin import experiment as experiments

        self.base = base
        self.loaded = experiments.load(base.experiment) if base.experiment is not None else None
        self._machines: dict[str, Any] = {}
        self._kernels: dict[str, Any] = {}

    @property
    def exp(self) -> Any:
        return self.loaded.experiment if self.loaded is not None else None

    def machine(self, name: str | None) -> Any:
        from mmtwin.config import load_machine

        if name is None:
            if self.loaded is None:
                raise MmtwinError("--machine: missing; give -m NAME, --vary machine=..., or an EXPERIMENT")
            return self.loaded.machine
        if name not in self._machines:
            self._machines[name] = load_machine(name)
        return self._machines[name]

    def kernel(self, name: str) -> Any:
        from mmtwin.config import load_kernel
        from mmtwin.experiment import with_experiment_sysctl

        if name not in self._kernels:
            by_name = {k.name: k for k in (self.loaded.kernels if self.loaded is not None else [])}
            if name in by_name:
                self._kernels[name] = by_name[name]
            else:
                k = load_kernel(name)
                self._kernels[name] = with_experiment_sysctl(self.exp, k) if self.exp is not None else k
        return self._kernels[name]

    def run_obj(self, name: str | None, option: str = "--run") -> Any:
        """The experiment's run (runs shape), a stand-in for the matrix shape, or None."""
        from mmtwin.config import WorkloadParams, validate

        exp = self.exp
        if exp is None:
            if name is not None:
                raise MmtwinError(f"{option}: {name!r} is not allowed without an EXPERIMENT (runs belong to one)")
            return None
        if exp.runs is not None:
            if name is None:
                raise MmtwinError(f"--run: missing for {exp.name}")
            try:
                return exp.run_named(name)
            except MmtwinError as err:
                raise MmtwinError(err.message.replace("--run:", f"{option}:", 1)) from None
        if name is not None:
            raise MmtwinError(f"run: {name!r} is not allowed; experiment {exp.name} is a [matrix] (vary size_gb and threads)")
        w = exp.matrix_workload
        params = validate(WorkloadParams, {"kind": w.kind, "size_gb": exp.matrix.size_gb[0], "threads": exp.matrix.threads[0],
                                            "stride": w.stride, "mems_allowed": w.mems_allowed}, self.loaded.where)
        return SimpleNamespace(name="matrix", workload=params)

    def base_kind(self, run_name: str | None) -> str:
        run = self.run_obj(run_name, "--run" if run_name == self.base.run else "run")
        if run is not None:
            return str(run.workload.kind)
        return self.base.workload if self.base.workload is not None else ("fsmark" if self.base.fsmark is not None else "memhog")

    def resolve(self, values: Mapping[Target, Any], texts: Mapping[Target, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(context columns, spec with the cell's base seed) for one cell: each axis's value
        (and, for a workload field, its text, applied as a last --set)."""
        from mmtwin.cli import _workload
        from mmtwin.config import Kernel, Machine, validate
        from mmtwin.resolve import resolve_spec

        top = {t.path: v for t, v in values.items() if t.where == "top"}
        m = self.machine(top.get("machine", self.base.machine))
        machine_sets = [(t.path, v) for t, v in values.items() if t.where == "machine"]
        if machine_sets:
            data = m.model_dump(exclude_unset=True)
            for path, v in machine_sets:
                _set_path(data, path, v, f"machine {m.name}")
            m = validate(Machine, data, f"machine {m.name}")
        kname = top.get("kernel", self.base.kernel)
        if kname is None:
            raise MmtwinError("--kernel: missing; give -k NAME, --vary kernel=A,B, or an EXPERIMENT")
        k = self.kernel(kname)
        kernel_sets = [(t.path, v) for t, v in values.items() if t.where == "kernel"]
        if kernel_sets:
            data = k.model_dump(exclude_unset=True)
            for path, v in kernel_sets:
                _set_path(data, path, v, f"kernel {k.name}")
            k = validate(Kernel, data, f"kernel {k.name}")
        run_name = top.get("run", self.base.run)
        run = self.run_obj(run_name, "run" if "run" in top else "--run")
        sets = [*self.base.sets, *(f"{t.path}={texts[t]}" for t in values if t.where == "workload")]
        params = _workload(self.base.workload, self.base.options, self.base.fsmark, sets, run)
        scale = top.get("scale", self.base.scale)
        seed = top.get("seed", self.base.seed if self.base.seed is not None else (self.exp.seed if self.exp else 1))
        spec = resolve_spec(m, k, params, seed=seed, scale=scale, check=self.base.check)
        context = {
            "experiment": self.exp.name if self.exp is not None else "",
            "machine": m.name,
            "kernel": k.name,
            "run": run.name if run is not None and run_name is not None else "",
            "workload": params.kind,
            "scale": float(scale),
        }
        return context, spec


def _implicit_axes(res: _Resolver, base: Base, explicit: Sequence[Axis]) -> list[Axis]:
    """The experiment's own axes (kernels; runs or the matrix) not fixed by an option or varied."""
    exp = res.exp
    if exp is None:
        return []
    varied = {a.target for a in explicit}
    out: list[Axis] = []
    if base.kernel is None and Target("top", "kernel") not in varied:
        out.append(Axis("kernel", Target("top", "kernel"), tuple(k.name for k in res.loaded.kernels), implicit=True))
    if exp.runs is not None:
        if base.run is None and Target("top", "run") not in varied:
            out.append(Axis("run", Target("top", "run"), tuple(r.name for r in exp.runs), implicit=True))
    else:
        for name, option, values in (("size_gb", "size_gb", exp.matrix.size_gb), ("threads", "threads", exp.matrix.threads)):
            if base.options.get(option) is None and Target("workload", name) not in varied:
                out.append(Axis(name, Target("workload", name), tuple(values), implicit=True))
    return out


def _column_value(values: Sequence[Any]) -> Callable[[Any], Any]:
    """How an axis's values go into the table: numbers as numbers when all are, else text."""
    if all(isinstance(v, bool) for v in values):
        return bool
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return int
    if all(isinstance(v, (int, float, Fraction)) and not isinstance(v, bool) for v in values):
        return float
    return value_text


CONTEXT_COLUMNS = ("experiment", "machine", "kernel", "run", "workload", "scale")


def _axis_column(axis: Axis) -> str:
    if axis.target.where == "top" and axis.target.path in ("machine", "kernel", "run", "scale"):
        return axis.target.path
    if axis.target == Target("top", "seed"):
        return "base_seed"
    return axis.key


def run_key(spec: Mapping[str, Any], engine: str) -> str:
    """The state file's key of one run: SHA-256 of the engine version and the canonical spec."""
    from mmtwin.engine import spec_json

    return hashlib.sha256(f"{engine}\n{spec_json(dict(spec))}".encode()).hexdigest()


def make_plan(base: Base, vary: Sequence[str], iterations: int) -> Plan:
    """Every run of the sweep, resolved, in output order (cells in cross-product order, iterations inner)."""
    from mmtwin.engine import engine_version
    from mmtwin.iterations import check_iterations, iteration_seed, with_seed

    check_iterations(iterations)
    res = _Resolver(base)
    # Which workload kinds the cells can have decides which bare keys are workload fields.
    run_values: list[str | None] = [base.run]
    for item in vary:
        if item.partition("=")[0].strip() == "run":
            run_values = split_values(item.partition("=")[2])
    if res.exp is not None and res.exp.runs is not None and run_values == [None]:
        run_values = [r.name for r in res.exp.runs]
    kinds: list[str] = []
    for name in run_values:
        try:
            kind = res.base_kind(name)
        except MmtwinError:
            continue  # reported with the cell that has it
        if kind not in kinds:
            kinds.append(kind)
    if not kinds:
        try:
            kinds = [res.base_kind(run_values[0])]  # raises the run's error
        except MmtwinError as err:
            raise MmtwinError(f"--vary run={run_values[0]}: {err.message}" if base.run is None else err.message) from None
    explicit = [parse_vary(item, kinds) for item in vary]
    seen: dict[Target, str] = {}
    for a in explicit:
        if a.target in seen:
            raise MmtwinError(f"--vary {a.key}: varies the same parameter as --vary {seen[a.target]}; give it once")
        seen[a.target] = a.key
    fixed = {
        Target("top", "machine"): ("--machine", base.machine),
        Target("top", "kernel"): ("--kernel", base.kernel),
        Target("top", "run"): ("--run", base.run),
        Target("top", "seed"): ("--seed", base.seed),
    }
    for a in explicit:
        option, value = fixed.get(a.target, ("", None))
        if value is not None:
            raise MmtwinError(f"--vary {a.key}: not allowed together with {option} {value}; give one of them")
        if a.target.where == "workload" and base.options.get(a.target.path) is not None:
            option = next((o for o, f in _OPTION_FIELDS if f == a.target.path), a.target.path)
            raise MmtwinError(f"--vary {a.key}: not allowed together with {option}; give one of them")
    axes = [*_implicit_axes(res, base, explicit), *explicit]
    convert = {a.key: _column_value(a.values) for a in axes}
    engine = engine_version() or "none"
    cells: list[dict[str, Any]] = []
    names: list[str] = []
    runs: list[PlannedRun] = []
    for ci, picks in enumerate(itertools.product(*(range(len(a.values)) for a in axes))):
        combo = [a.values[i] for a, i in zip(axes, picks)]
        values = {a.target: v for a, v in zip(axes, combo)}
        texts = {a.target: a.text(i) for a, i in zip(axes, picks)}
        name = ", ".join(f"{a.key}={a.text(i)}" for a, i in zip(axes, picks)) or "the run"
        try:
            context, spec0 = res.resolve(values, texts)
        except MmtwinError as err:
            raise MmtwinError(f"--vary: the cell {name}: {err.message}" if axes else err.message) from None
        params = dict(context)
        for a, v in zip(axes, combo):
            col = _axis_column(a)
            params[col] = context[col] if col in context else convert[a.key](v)
        cells.append(params)
        names.append(name)
        for it in range(iterations):
            seed = iteration_seed(int(spec0["seed"]), it)
            spec = with_seed(spec0, seed)
            runs.append(PlannedRun(ci, it, seed, params, spec, run_key(spec, engine)))
    return Plan(axes, cells, names, runs, iterations, sorted({c["workload"] for c in cells}, key=kinds_order))


def kinds_order(kind: str) -> int:
    from mmtwin.config import WORKLOAD_KINDS

    return WORKLOAD_KINDS.index(kind)


# --------------------------------------------------------------------------- state file


def state_path(out: Path) -> Path:
    return out.with_name(out.name + STATE_SUFFIX)


def load_state(path: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """(key -> record, number of unreadable lines) from a state file; nothing when it does not exist."""
    records: dict[str, dict[str, Any]] = {}
    bad = 0
    if not path.exists():
        return records, 0
    if not path.is_file():
        raise MmtwinError(f"--out: the state file {str(path)!r} exists and is not a regular file")
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise MmtwinError(f"--out: cannot read the state file {str(path)!r}: {exc.strerror}") from None
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            ok = (isinstance(rec, dict) and rec.get("v") == STATE_VERSION and isinstance(rec.get("key"), str)
                  and isinstance(rec.get("figures"), dict) and isinstance(rec.get("digest"), str))
        except (json.JSONDecodeError, RecursionError):  # a line cut short, or garbage nested too deeply
            ok = False
        if ok:
            records[rec["key"]] = rec
        else:
            bad += 1
    return records, bad


class StateWriter:
    """Appends one JSON line per finished run; each line is on disk (fsync) before the next run is recorded."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._f = open(path, "ab")
            # A line cut short by a kill has no newline: start on a fresh line.
            if self._f.tell() > 0:
                with open(path, "rb") as r:
                    r.seek(-1, os.SEEK_END)
                    if r.read(1) != b"\n":
                        self._f.write(b"\n")
        except OSError as exc:
            raise MmtwinError(f"--out: cannot write the state file {str(path)!r}: {exc.strerror}") from None

    def add(self, run: PlannedRun, outcome: Mapping[str, Any]) -> dict[str, Any]:
        rec = {"v": STATE_VERSION, "key": run.key, "params": run.params, "iteration": run.iteration, "seed": run.seed,
               "digest": outcome["digest"], "figures": outcome["figures"]}
        self._f.write((json.dumps(rec, sort_keys=True) + "\n").encode())
        self._f.flush()
        os.fsync(self._f.fileno())
        return rec

    def close(self) -> None:
        self._f.close()


# --------------------------------------------------------------------------- executors


def run_task(spec: dict[str, Any]) -> dict[str, Any]:
    """One run, where it executes (worker process or Ray task): the figures and the result's digest."""
    from mmtwin import engine
    from mmtwin.iterations import result_digest, run_figures

    result = engine.run_spec(spec)  # looked up at call time so tests can substitute it
    perf = result.get("perf") or {}
    return {"figures": run_figures(spec, result), "digest": result_digest(result),
            "events": int(result.get("events", 0)), "wall_s": float(perf.get("wall_s", 0.0))}


def run_local(specs: Sequence[dict[str, Any]], jobs: int, on_done: Callable[[int, dict[str, Any]], None],
              bar: Any = contextlib.nullcontext()) -> None:
    """On a process pool of ``jobs`` workers (1: in this process); ``on_done`` as each finishes.
    ``bar`` (a progress bar, a context manager) is entered once the workers are forked."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    if jobs == 1 or len(specs) <= 1:
        with bar:
            for i, spec in enumerate(specs):
                on_done(i, run_task(spec))
        return
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(specs)))
    try:
        # Submit (and so fork the workers) before the progress bar starts its thread.
        futures = {pool.submit(run_task, spec): i for i, spec in enumerate(specs)}
        pending = set(futures)
        with bar:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: futures[f]):
                    on_done(futures[fut], fut.result())
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _ray_module() -> Any:
    try:
        import ray
    except ImportError:
        raise MmtwinError("--ray: Ray is not installed; install it with pip install 'mmtwin[ray]' (ray>=2)") from None
    return ray


def probe_address(address: str, timeout_s: float = 5.0) -> None:
    """Fail at once, with one line, when nothing listens at ``host:port`` (ray.init
    would retry for minutes). ``auto`` is left to Ray, which answers at once."""
    import socket

    if address == "auto":
        return
    hostport = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise MmtwinError(f"--ray: {address!r} is not allowed; expected auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise MmtwinError(f"--ray: cannot connect to a Ray cluster at {address!r}: {exc.strerror or exc}") from None


def run_ray(specs: Sequence[dict[str, Any]], address: str, on_done: Callable[[int, dict[str, Any]], None]) -> None:
    """As Ray tasks on the cluster at ``address`` (``auto``: the one this machine is part of).

    A Ray already initialised in this process (ray.init in a notebook or a
    test) is used as it is. Every node needs mmtwin installed, the same
    version as here.
    """
    ray = _ray_module()
    connected_here = False
    if not ray.is_initialized():
        probe_address(address)
        try:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        except Exception as exc:  # ConnectionError, ValueError, RuntimeError: all "no cluster there"
            text = " ".join(str(exc).split())[:300]
            raise MmtwinError(f"--ray: cannot connect to a Ray cluster at {address!r}: {text}") from None
        connected_here = True
    try:
        task = ray.remote(num_cpus=1)(run_task)
        refs = {task.remote(spec): i for i, spec in enumerate(specs)}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    value = ray.get(ref)
                except Exception as exc:  # a task's error comes back wrapped (RayTaskError)
                    cause = exc if isinstance(exc, MmtwinError) else getattr(exc, "cause", None)
                    if isinstance(cause, MmtwinError):
                        raise MmtwinError(cause.message) from None
                    raise
                on_done(refs[ref], value)
    finally:
        if connected_here:
            ray.shutdown()


# --------------------------------------------------------------------------- output


def check_out(out: Path) -> str:
    """The format of --out (csv or parquet), checked before any run."""
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise MmtwinError(f"--out: {str(out)!r} is not allowed; expected a file name ending in .csv or .parquet")
    if out.exists() and not out.is_file():
        raise MmtwinError(f"--out: {str(out)!r} exists and is not a regular file")
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MmtwinError(f"--out: cannot create directory {str(parent)!r}: {exc.strerror}") from None
    from mmtwin.results import check_writable

    check_writable(parent, "--out")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise MmtwinError(f"--out: {str(out)!r}: Parquet needs pyarrow; pip install 'mmtwin[parquet]' or write .csv") from None
    return suffix[1:]


def frame(plan: Plan, records: Mapping[str, Mapping[str, Any]]) -> Any:
    """The tidy table: one row per run in plan order (parameters, cell, iteration, seed, figures)."""
    import pandas as pd

    from mmtwin.iterations import BENCH_COLUMNS, TIME_COLUMNS, VMSTAT_COLUMNS

    bench_cols = [c for kind in plan.kinds for c in BENCH_COLUMNS[kind]]
    figure_cols = [*TIME_COLUMNS, "events", "oom", *bench_cols, *VMSTAT_COLUMNS]
    param_cols: list[str] = list(CONTEXT_COLUMNS)
    for a in plan.axes:
        col = _axis_column(a)
        if col not in param_cols:
            param_cols.append(col)
    rows = []
    for run in plan.runs:
        figs = records[run.key]["figures"]
        row = {c: run.params.get(c) for c in param_cols}
        row.update(cell=run.cell + 1, iteration=run.iteration, seed=str(run.seed))
        row.update({c: figs.get(c) for c in figure_cols})
        rows.append(row)
    columns = [*param_cols, "cell", "iteration", "seed", *figure_cols]
    df = pd.DataFrame(rows, columns=columns)
    # Counters are integers with gaps (a counter the kernel lacks): nullable Int64.
    for c in ("events", *VMSTAT_COLUMNS, "cell", "iteration"):
        df[c] = df[c].astype("Int64")
    for c in (*TIME_COLUMNS, *bench_cols):
        df[c] = df[c].astype("float64")
    df["oom"] = df["oom"].astype("boolean")
    # Seeds are u64: as text, so no format loses digits.
    df["seed"] = df["seed"].astype("string")
    for c in ("experiment", "machine", "kernel", "run", "workload"):
        df[c] = df[c].astype("string")
    return df


def write_frame(df: Any, out: Path, fmt: str) -> None:
    """Write atomically (a temporary file in the same directory, then rename)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=str(out.parent))
    os.close(fd)
    try:
        if fmt == "csv":
            df.to_csv(tmp, index=False, lineterminator="\n")
        else:
            df.to_parquet(tmp, index=False)
        os.replace(tmp, out)
    except OSError as exc:
        raise MmtwinError(f"--out: cannot write {str(out)!r}: {exc.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def summary(plan: Plan, records: Mapping[str, Mapping[str, Any]]) -> str:
    """MMTests summary rows over iterations (Perl Compare look), one column per cell, CHUNK cells per table."""
    from mmtwin.iterations import Column, notes, ops_for, summary_table

    by_cell: list[list[Mapping[str, Any]]] = [[] for _ in plan.cells]
    for run in plan.runs:
        by_cell[run.cell].append(records[run.key])
    columns = [
        Column(f"#{i + 1}", [dict(r["figures"]) for r in recs], len({r["digest"] for r in recs}) <= 1, ("", f"#{i + 1}"))
        for i, recs in enumerate(by_cell)
    ]
    lines = [f"sweep: {len(plan.cells)} cell(s) x {plan.iterations} iteration(s) = {len(plan.runs)} runs"]
    width = len(str(len(plan.cells))) + 1
    lines += [f"  {'#' + str(i + 1):<{width}}  {name}" for i, name in enumerate(plan.cell_names)]
    lines += notes(columns, "cell")
    ops = ops_for(plan.kinds)
    for start in range(0, len(columns), CHUNK):
        lines.append("")
        lines.append(summary_table(columns[start : start + CHUNK], ops, "2017", percentages=False))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the command


@dataclass
class Outcome:
    plan: Plan
    frame: Any
    text: str
    reused: int  # runs found in the state file
    executed: int  # runs done now
    unreadable: int
    wall_s: float
    events: int

    @property
    def runs_text(self) -> str:
        """``12 runs``, or ``12 runs (9 distinct)`` when cells resolve to the same specification."""
        total = len(self.plan.runs)
        distinct = len({r.key for r in self.plan.runs})
        return f"{total} runs" + (f" ({distinct} distinct)" if distinct < total else "")


def sweep(base: Base, vary: Sequence[str], *, iterations: int = 1, out: Path, jobs: int | None = None,
          ray_address: str | None = None, progress: bool | None = None) -> Outcome:
    """Plan, run what the state file lacks, write the tidy table, return the summary text."""
    from mmtwin.engine import _Progress, default_jobs

    fmt = check_out(out)
    if ray_address is not None:
        if not ray_address.strip():
            raise MmtwinError("--ray: '' is not allowed; expected a cluster address (host:port, ray://host:port) or auto")
        if jobs is not None:
            raise MmtwinError("--jobs: not allowed with --ray; the cluster's CPUs decide how many runs go at once")
        if not _ray_module().is_initialized():
            probe_address(ray_address)
    if jobs is not None and jobs < 1:
        raise MmtwinError(f"--jobs: {jobs} is not allowed; expected an integer >= 1")
    plan = make_plan(base, vary, iterations)
    spath = state_path(out)
    records, bad = load_state(spath)
    todo: list[PlannedRun] = []
    queued: set[str] = set()
    for run in plan.runs:
        if run.key not in records and run.key not in queued:
            queued.add(run.key)
            todo.append(run)
    reused = len({r.key for r in plan.runs} - queued)
    writer = StateWriter(spath)
    events = 0
    started = time.perf_counter()
    if progress is None:
        progress = sys.stderr.isatty()
    bar = _Progress(len(todo), "sweep", progress)

    def done(i: int, outcome: dict[str, Any]) -> None:
        nonlocal events
        records[todo[i].key] = writer.add(todo[i], outcome)
        events += int(outcome.get("events", 0))
        bar.advance()

    specs = [r.spec for r in todo]
    try:
        if ray_address is not None:
            with bar:
                run_ray(specs, ray_address, done)
        else:
            run_local(specs, jobs or default_jobs(), done, bar)
    finally:
        writer.close()
    wall = time.perf_counter() - started
    df = frame(plan, records)
    write_frame(df, out, fmt)
    return Outcome(plan, df, summary(plan, records), reused, len(todo), bad, wall, events)


def describe_executor(jobs: int | None, ray_address: str | None) -> str:
    from mmtwin.engine import default_jobs

    if ray_address is not None:
        return f"Ray tasks ({ray_address})"
    n = jobs or default_jobs()
    return "this process" if n == 1 else f"a pool of {n} worker processes"
