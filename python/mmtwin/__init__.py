"""mmtwin: a deterministic digital twin of the Linux kernel memory manager.

The Rust engine lives in ``mmtwin._core``; this package validates presets and
experiment files, resolves them into engine specifications, runs the engine
and formats reports. Importing it does not import the engine or matplotlib.
"""

from __future__ import annotations

from mmtwin.errors import MmtwinError

__all__ = ["MmtwinError", "__version__"]
__version__ = "0.1.0"
