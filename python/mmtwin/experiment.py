"""Expand an experiment file into engine specs.

Two shapes (docs/config-schema.md, "Experiments"): a memory-hog ``[matrix]``
(kernels x sizes x thread counts) and ``[[runs]]`` (kernels x named workloads).
Runs are planned kernel-major, in the file's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mmtwin.config import (
    AnyWorkload,
    Experiment,
    Kernel,
    Machine,
    WorkloadParams,
    display_path,
    experiment_file,
    load_experiment_parts,
    load_file,
    validate,
)
from mmtwin.errors import MmtwinError
from mmtwin.resolve import resolve_spec


@dataclass(frozen=True)
class PlannedRun:
    kernel: str
    size_gb: int | float | None  # matrix cells only
    threads: int
    spec: dict[str, Any]
    run: str | None = None  # the [[runs]] name (runs shape only)
    workload: AnyWorkload | None = None


@dataclass(frozen=True)
class LoadedExperiment:
    experiment: Experiment
    machine: Machine
    kernels: list[Kernel]
    where: str  # the file as shown in messages


def load(name_or_path: str) -> LoadedExperiment:
    """Load and validate an experiment file and every preset it names."""
    path = experiment_file(name_or_path)
    where = display_path(path)
    exp: Experiment = load_file(Experiment, path)
    machine, kernels = load_experiment_parts(exp, where)
    kernels = [with_experiment_sysctl(exp, k) for k in kernels]
    return LoadedExperiment(exp, machine, kernels, where)


def with_experiment_sysctl(exp: Experiment, kernel: Kernel) -> Kernel:
    """The kernel with the sysctls the experiment sets for every kernel (only the keys it gives)."""
    if exp.sysctl is None:
        return kernel
    given = {key: getattr(exp.sysctl, key) for key in sorted(exp.sysctl.model_fields_set)}
    return kernel.model_copy(update={"sysctl": kernel.sysctl.model_copy(update=given)})


def plan(loaded: LoadedExperiment, *, scale: Fraction | float = 1, check: bool = False) -> list[PlannedRun]:
    """One run per (kernel, matrix cell) or (kernel, named run), kernel-major, in the file's order."""
    if loaded.experiment.runs is not None:
        return _plan_runs(loaded, scale, check)
    return _plan_matrix(loaded, scale, check)


def _plan_matrix(loaded: LoadedExperiment, scale: Fraction | float, check: bool) -> list[PlannedRun]:
    exp = loaded.experiment
    assert exp.matrix is not None
    w = exp.matrix_workload
    runs: list[PlannedRun] = []
    for kernel in loaded.kernels:
        for size in exp.matrix.size_gb:
            for threads in exp.matrix.threads:
                params = validate(
                    WorkloadParams,
                    {
                        "kind": w.kind,
                        "size_gb": size,
                        "threads": threads,
                        "stride": w.stride,
                        "mems_allowed": w.mems_allowed,
                    },
                    loaded.where,
                )
                try:
                    spec = resolve_spec(loaded.machine, kernel, params, seed=exp.seed, scale=scale, check=check)
                except MmtwinError as err:
                    raise MmtwinError(
                        f"{loaded.where}: matrix cell ({size} GB, {threads} threads): {err.message}"
                    ) from None
                runs.append(PlannedRun(kernel.name, size, threads, spec, workload=params))
    return runs


def _plan_runs(loaded: LoadedExperiment, scale: Fraction | float, check: bool) -> list[PlannedRun]:
    exp = loaded.experiment
    assert exp.runs is not None
    runs: list[PlannedRun] = []
    for kernel in loaded.kernels:
        for i, run in enumerate(exp.runs):
            try:
                spec = resolve_spec(loaded.machine, kernel, run.workload, seed=exp.seed, scale=scale, check=check)
            except MmtwinError as err:
                raise MmtwinError(f"{loaded.where}: runs[{i}] ({run.name}): {err.message}") from None
            runs.append(PlannedRun(kernel.name, None, run.workload.threads, spec, run=run.name, workload=run.workload))
    return runs
