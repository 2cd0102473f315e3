"""The ingest's whole-file errors: a file that fails loads nothing, and its type decides its status.

:class:`IngestError` is a file that cannot be loaded (format, encoding, columns, content):
status ``error``. Its subclass :class:`FileRefused` is a file capplan declines to load as
configured (a path already ingested now holds other content, ``on_changed_file = "refuse"``):
status ``refused``. Callers decide the status from the type, never from the message.
"""

from __future__ import annotations


class IngestError(ValueError):
    """A whole-file problem (format, encoding, columns, content changed): nothing of the file is loaded."""


class FileRefused(IngestError):
    """A path already ingested holds other content and the run refuses changed files: nothing is loaded."""
