"""Pydantic models and loaders for machine presets, kernel profiles and experiments.

The TOML schemas are described in docs/config-schema.md. Every table is strict
(unknown keys are errors) and every error is reported as one line naming the
file, the dotted field path, the bad value and what is allowed, e.g.::

    presets/machines/x.toml: topology.distance: 27 rows, expected 28 (one per node)
"""

from __future__ import annotations

import os
import tomllib
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mmtwin.errors import MmtwinError

ZONE_NAMES: tuple[str, ...] = ("DMA", "DMA32", "NORMAL", "HIGHMEM", "MOVABLE")
ERAS: tuple[str, ...] = ("2.6.18", "3.0", "3.1", "4.11")
ZLC_MODES: tuple[str, ...] = ("none", "after-first-zone", "first-eligible")
ARCHES: tuple[str, ...] = ("ia64", "x86_64")
WORKLOAD_KINDS: tuple[str, ...] = ("memhog",)

MAX_NODES = 256  # the engine's limit (crates/mmtwin-core spec.rs)
MAX_CPUS = 4096
ZONE_RECLAIM_MODE_MAX = 7  # RECLAIM_ZONE | RECLAIM_WRITE | RECLAIM_SWAP
LOWMEM_RESERVE_ENTRIES = len(ZONE_NAMES) - 1  # one per zone type below MOVABLE


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


class Cost(StrictModel):
    fault_ns: int
    clear_ns_per_kib: int
    clear_remote_ns_per_kib: int
    line_miss_ns: int
    line_hit_ns: int
    buddy_page_ns: int
    user_store_ns: int

    @field_validator("*")
    @classmethod
    def _non_negative(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"{v} is not allowed; costs are nanoseconds >= 0")
        return v


class Machine(StrictModel):
    name: str
    description: str
    source: str
    arch: Literal["ia64", "x86_64"]
    page_size: int
    cache_line: int
    hz: int
    max_order: int = 11
    topology: Topology
    zones: list[ZoneBand]
    cost: Cost

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


class Sysctl(StrictModel):
    min_free_kbytes: Literal["auto"] | int = "auto"
    zone_reclaim_mode: Literal["auto"] | int = "auto"
    lowmem_reserve_ratio: Literal["auto"] | list[int] = "auto"

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
        if isinstance(v, list) and len(v) == LOWMEM_RESERVE_ENTRIES and all(_is_int(x) and x >= 1 for x in v):
            return v
        raise ValueError(
            f'{describe(v)} is not allowed; expected "auto" or a list of {LOWMEM_RESERVE_ENTRIES} integers >= 1 '
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
        return self


# --------------------------------------------------------------------------- workloads and experiments


def _positive_number(v: Any, what: str) -> Any:
    if _is_number(v) and v > 0 and v == v and v != float("inf"):
        return v
    raise ValueError(f"{describe(v)} is not allowed; {what}")


class WorkloadParams(StrictModel):
    """One workload instance, as given on the command line or by one experiment cell."""

    kind: Literal["memhog"] = "memhog"
    size_gb: int | float
    threads: int
    stride: int = 4096
    cpus: list[int] | None = None
    mems_allowed: list[int] | None = None

    @field_validator("size_gb", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return _positive_number(v, "the size must be a number of GB (2^30 bytes) > 0")

    @field_validator("threads")
    @classmethod
    def _threads(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"{v} is not allowed; must be >= 1")
        return v

    @field_validator("stride")
    @classmethod
    def _stride(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"{v} is not allowed; must be a number of bytes >= 1")
        return v


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


class Experiment(StrictModel):
    name: str
    description: str
    seed_document: str | None = None
    machine: str
    kernels: list[str]
    seed: int = 1
    workload: ExperimentWorkload = Field(default_factory=ExperimentWorkload)
    matrix: Matrix

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


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(part)
        if field is None:
            return None
        candidates = [c for c in _unwrap(field.annotation) if isinstance(c, type) and issubclass(c, BaseModel)]
        current = candidates[0] if candidates else None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def format_path(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def format_validation_error(exc: ValidationError, model: type[BaseModel], where: str) -> str:
    """One line: ``<where>: <field path>: <value and what is allowed>``."""
    errors = exc.errors(include_url=False)
    # An unknown key usually explains a "missing" one (a typo): report it first.
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    loc: list[str | int] = [p for p in first["loc"] if isinstance(p, (str, int))]
    kind = first["type"]
    value = first.get("input")
    ctx = first.get("ctx") or {}
    if kind == "value_error":
        err = ctx.get("error")
        if isinstance(err, FieldError):
            loc = loc + list(err.path)
            detail = err.message
        else:
            detail = str(err) if err is not None else first["msg"]
    elif kind == "extra_forbidden":
        parent = _model_at(model, loc[:-1])
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
    path = format_path(loc)
    more = f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return " ".join(f"{where}: {path + ': ' if path else ''}{detail}{more}".split())


def validate(model: type[BaseModel], data: Any, where: str) -> Any:
    """Validate ``data`` against ``model``; raise MmtwinError with a one-line message."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MmtwinError(format_validation_error(exc, model, where)) from None


# --------------------------------------------------------------------------- loading

REPO_ROOT = Path(__file__).resolve().parents[2]


def presets_dir() -> Path:
    env = os.environ.get("MMTWIN_PRESETS")
    return Path(env) if env else REPO_ROOT / "presets"


def experiments_dir() -> Path:
    env = os.environ.get("MMTWIN_EXPERIMENTS")
    return Path(env) if env else REPO_ROOT / "experiments"


def display_path(path: Path) -> str:
    """Path as shown in messages: relative to the repository or to the cwd when inside them."""
    resolved = path.resolve()
    for base in (REPO_ROOT, Path.cwd().resolve()):
        try:
            return str(resolved.relative_to(base))
        except ValueError:
            continue
    return str(path)


def read_toml(path: Path) -> dict[str, Any]:
    where = display_path(path)
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise MmtwinError(f"{where}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise MmtwinError(f"{where}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise MmtwinError(f"{where}: cannot read: {exc.strerror}") from None


def _available(directory: Path) -> list[str]:
    if not directory.is_dir():
        return []
    return sorted(p.stem for p in directory.glob("*.toml"))


def _looks_like_path(name: str) -> bool:
    return name.endswith(".toml") or os.sep in name or "/" in name


def find_file(kind: str, name: str, directory: Path) -> Path:
    """The TOML file for a preset name, or ``name`` itself when it is a path."""
    if _looks_like_path(name):
        path = Path(name)
        if not path.is_file():
            raise MmtwinError(f"{name}: no such {kind} file")
        return path
    path = directory / f"{name}.toml"
    if path.is_file():
        return path
    names = _available(directory)
    listing = ", ".join(names) if names else f"none (no *.toml in {display_path(directory)})"
    raise MmtwinError(f"unknown {kind} {name!r}; available: {listing}")


def load_file(model: type[BaseModel], path: Path) -> Any:
    """Validate one TOML file against ``model``; its ``name`` must equal the file stem."""
    where = display_path(path)
    obj = validate(model, read_toml(path), where)
    if obj.name != path.stem:
        raise MmtwinError(f"{where}: name: {obj.name!r} is not allowed; it must equal the file stem {path.stem!r}")
    return obj


def _load(model: type[BaseModel], kind: str, name: str, directory: Path) -> Any:
    return load_file(model, find_file(kind, name, directory))


def load_machine(name_or_path: str) -> Machine:
    return _load(Machine, "machine preset", name_or_path, presets_dir() / "machines")


def load_kernel(name_or_path: str) -> Kernel:
    return _load(Kernel, "kernel profile", name_or_path, presets_dir() / "kernels")


def load_experiment(name_or_path: str) -> Experiment:
    return _load(Experiment, "experiment", name_or_path, experiments_dir())


def machine_names() -> list[str]:
    return _available(presets_dir() / "machines")


def kernel_names() -> list[str]:
    return _available(presets_dir() / "kernels")


def experiment_names() -> list[str]:
    return _available(experiments_dir())


def experiment_file(name_or_path: str) -> Path:
    return find_file("experiment", name_or_path, experiments_dir())


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
