"""Parsers for what a real Linux 6.1 guest prints in /proc and /sys.

Each parser takes the file's text and returns plain dicts and lists (JSON
ready). They accept the layouts Linux 6.1 prints; lines they do not know
are kept out of the result rather than guessed at.
"""

from __future__ import annotations

import re
from typing import Any

_ZONE_HEAD = re.compile(r"^Node\s+(\d+),\s+zone\s+(\S+)\s*$")
_BUDDY = re.compile(r"^Node\s+(\d+),\s+zone\s+(\S+)\s+(.*)$")
_PT_FREE = re.compile(r"^Node\s+(\d+),\s+zone\s+(\S+),\s+type\s+(\S+)\s+(.*)$")
_PT_BLOCKS = re.compile(r"^Node\s+(\d+),\s+zone\s+(\S+)\s+(\d[\d\s]*)$")


def parse_counters(text: str) -> dict[str, int]:
    """/proc/vmstat and /sys/devices/system/node/nodeN/numastat: ``name value`` per line."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"-?\d+", parts[1]):
            out[parts[0]] = int(parts[1])
    return out


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo or a node's meminfo (``Node 0 MemTotal:  1014452 kB``): values in kB (counts as is)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^(?:Node\s+\d+\s+)?([\w()]+):\s+(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def parse_zoneinfo(text: str) -> list[dict[str, Any]]:
    """/proc/zoneinfo as a list of zones in the order printed.

    Each zone: node, zone, free (pages free), boost, min, low, high,
    spanned, present, managed, cma, protection (list), stats (the zone's
    vm counters such as nr_free_pages), node_stats (the node's counters,
    printed with the first populated zone of a node only, else {}),
    pagesets (per CPU: cpu, count, high, batch, vm_stats_threshold),
    node_unreclaimable and start_pfn when printed.
    """
    zones: list[dict[str, Any]] = []
    zone: dict[str, Any] | None = None
    section = ""
    pageset: dict[str, int] | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        m = _ZONE_HEAD.match(line)
        if m:
            zone = {
                "node": int(m.group(1)),
                "zone": m.group(2),
                "node_stats": {},
                "stats": {},
                "protection": [],
                "pagesets": [],
            }
            zones.append(zone)
            section = "head"
            pageset = None
            continue
        if zone is None:
            continue
        s = line.strip()
        if s == "per-node stats":
            section = "node"
            continue
        if s.startswith("pages free"):
            zone["free"] = int(s.split()[-1])
            section = "watermarks"
            continue
        if s.startswith("protection:"):
            inside = s[s.index("(") + 1 : s.rindex(")")] if "(" in s else ""
            zone["protection"] = [int(x) for x in inside.replace(",", " ").split()]
            section = "zone"
            continue
        if s == "pagesets":
            section = "pagesets"
            continue
        if s.startswith("node_unreclaimable:"):
            zone["node_unreclaimable"] = int(s.split()[-1])
            section = "tail"
            continue
        if s.startswith("start_pfn:"):
            zone["start_pfn"] = int(s.split()[-1])
            section = "tail"
            continue
        parts = s.split()
        if section == "pagesets":
            if s.startswith("cpu:"):
                pageset = {"cpu": int(parts[-1])}
                zone["pagesets"].append(pageset)
            elif s.startswith("vm stats threshold:") and pageset is not None:
                pageset["vm_stats_threshold"] = int(parts[-1])
            elif pageset is not None and len(parts) == 2 and parts[0].endswith(":"):
                pageset[parts[0][:-1]] = int(parts[1])
            continue
        if len(parts) != 2 or not re.fullmatch(r"-?\d+", parts[1]):
            continue
        key, value = parts[0], int(parts[1])
        if section == "node":
            zone["node_stats"][key] = value
        elif section == "watermarks":
            zone[key] = value
        elif section == "zone":
            zone["stats"][key] = value
    return zones


def parse_buddyinfo(text: str) -> list[dict[str, Any]]:
    """/proc/buddyinfo: [{node, zone, free: [blocks of order 0, 1, ...]}]."""
    out = []
    for line in text.splitlines():
        m = _BUDDY.match(line.strip())
        if m:
            out.append({"node": int(m.group(1)), "zone": m.group(2), "free": [int(x) for x in m.group(3).split()]})
    return out


def parse_pagetypeinfo(text: str) -> dict[str, Any]:
    """/proc/pagetypeinfo: page block order, pages per block, free blocks per
    (node, zone, migrate type) and order, and page blocks per migrate type."""
    out: dict[str, Any] = {"free": [], "blocks": []}
    types: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Page block order:"):
            out["pageblock_order"] = int(line.split()[-1])
        elif line.startswith("Pages per block:"):
            out["pages_per_block"] = int(line.split()[-1])
        elif line.startswith("Number of blocks type"):
            types = line[len("Number of blocks type") :].split()
        else:
            m = _PT_FREE.match(line)
            if m:
                counts = [int(x) for x in m.group(4).split() if re.fullmatch(r"\d+", x)]
                out["free"].append({"node": int(m.group(1)), "zone": m.group(2), "type": m.group(3), "free": counts})
                continue
            m = _PT_BLOCKS.match(line)
            if m and types:
                counts = [int(x) for x in m.group(3).split()]
                out["blocks"].append(
                    {"node": int(m.group(1)), "zone": m.group(2), "blocks": dict(zip(types, counts))}
                )
    return out


def parse_cpulist(text: str) -> list[int]:
    """A kernel CPU list (``0-3,8``) as ids; empty text is no CPU."""
    ids: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            ids.extend(range(int(lo), int(hi) + 1))
        else:
            ids.append(int(part))
    return ids
