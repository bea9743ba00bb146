"""mmtwin: a deterministic digital twin of the Linux kernel memory manager.

The Rust engine lives in ``mmtwin._core``; this package validates presets and
experiment files, resolves them into engine specifications, runs the engine
and formats reports. Importing it does not import the engine or matplotlib.
"""

from __future__ import annotations

from typing import Any

from mmtwin.errors import MmtwinError

__all__ = ["MmtwinError", "Result", "__version__", "compare", "run"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The Python API (docs/python-api.md), imported on first use so that
    # `import mmtwin` stays light.
    if name in ("run", "compare", "Result"):
        from mmtwin import api

        return getattr(api, name)
    raise AttributeError(f"module 'mmtwin' has no attribute {name!r}")
