"""The one exception type for user errors (bad input, unknown preset, bad option)."""

from __future__ import annotations


class MmtwinError(Exception):
    """A user error. Its text is one line and is shown as ``mmtwin: error: <text>``."""

    def __init__(self, message: str) -> None:
        # Keep the message on one line whatever the source said.
        super().__init__(" ".join(str(message).split()))

    @property
    def message(self) -> str:
        return str(self.args[0])
