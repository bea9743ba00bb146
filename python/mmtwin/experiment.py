"""Expand an experiment file into engine specs (kernels x matrix cells)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mmtwin.config import (
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
    size_gb: int | float
    threads: int
    spec: dict[str, Any]


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
    return LoadedExperiment(exp, machine, kernels, where)


def plan(loaded: LoadedExperiment, *, scale: Fraction | float = 1, check: bool = False) -> list[PlannedRun]:
    """One run per (kernel, size, threads), kernel-major, in the file's order."""
    exp = loaded.experiment
    runs: list[PlannedRun] = []
    for kernel in loaded.kernels:
        for size in exp.matrix.size_gb:
            for threads in exp.matrix.threads:
                params = validate(
                    WorkloadParams,
                    {
                        "kind": exp.workload.kind,
                        "size_gb": size,
                        "threads": threads,
                        "stride": exp.workload.stride,
                        "mems_allowed": exp.workload.mems_allowed,
                    },
                    loaded.where,
                )
                try:
                    spec = resolve_spec(loaded.machine, kernel, params, seed=exp.seed, scale=scale, check=check)
                except MmtwinError as err:
                    raise MmtwinError(
                        f"{loaded.where}: matrix cell ({size} GB, {threads} threads): {err.message}"
                    ) from None
                runs.append(PlannedRun(kernel.name, size, threads, spec))
    return runs
