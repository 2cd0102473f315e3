"""Prefect's temporary server must not outlive the capplan process that started it.

With no ``PREFECT_API_URL``, Prefect 3 starts a temporary API server on first use:
``prefect.server.api.server.SubprocessASGIServer`` runs ``python -m uvicorn ...`` with
``subprocess.Popen`` and stops it from an ``atexit`` hook. A ``kill -9`` of capplan skips
that hook and the uvicorn process lives on (observed: 6 of 9 kills, one alive 120 s later).

:func:`tie_temporary_server_to_this_process` makes every such server come with a *guard*:
a tiny process (``python -m capplan.runtime PID FD``, standard library only) that holds the
read end of a pipe whose write end only capplan holds. When capplan dies, however it dies,
the kernel closes the write end, the guard reads end-of-file and stops the server
(SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`). The guard also exits by itself once
the server is gone. Why not the alternatives:

- ``prctl(PR_SET_PDEATHSIG)`` fires when the *thread* that forked the child exits, and
  Prefect starts the server from whichever thread first needs the API (its log and event
  workers among them), so the server would be killed while capplan still runs;
- a process group does not die with its leader.

Prefect's file is not changed: the guard is added by giving ``server.py`` a ``subprocess``
namespace whose ``Popen`` starts the guard beside the server.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from types import ModuleType
from typing import Any

#: Seconds between SIGTERM and SIGKILL when the guard stops an orphaned server. [s]
STOP_GRACE_S = 5.0
#: How often the guard checks that the server still exists. [s]
POLL_S = 1.0

_write_ends: list[int] = []  # kept open for the life of this process; their closing is the signal


def tie_temporary_server_to_this_process() -> None:
    """Guard every temporary Prefect server this process starts from here on (idempotent)."""
    from prefect.server.api import server

    if isinstance(server.subprocess, _GuardedSubprocess):
        return
    server.subprocess = _GuardedSubprocess(subprocess)


def guard(server_pid: int, read_fd: int) -> None:
    """Wait until the pipe's writer (capplan) is gone, then stop ``server_pid``; return early if it exits."""
    while _alive(server_pid):
        ready, _, _ = select.select([read_fd], [], [], POLL_S)
        if ready and os.read(read_fd, 1) == b"":  # end of file: capplan has died
            stop_process(server_pid)
            return


def stop_process(pid: int, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM ``pid``, and SIGKILL it if it is still there after ``grace_s`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not _alive(pid):
                return
            time.sleep(0.05)


def start_guard(server_pid: int) -> subprocess.Popen[bytes]:
    """Start the guard process of ``server_pid``; this process keeps the pipe's write end open."""
    read_fd, write_fd = os.pipe()  # both non-inheritable (PEP 446): later children do not hold them
    try:
        proc = subprocess.Popen([sys.executable, "-m", "capplan.runtime", str(server_pid), str(read_fd)],
                                pass_fds=(read_fd,), stdin=subprocess.DEVNULL, start_new_session=True)
    finally:
        os.close(read_fd)
    _write_ends.append(write_fd)
    return proc


class _GuardedSubprocess:
    """The ``subprocess`` module as ``server.py`` sees it, with a ``Popen`` that also starts a guard."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def Popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[Any]:  # noqa: N802 - the name server.py calls
        proc = self._module.Popen(*args, **kwargs)
        start_guard(proc.pid)
        return proc


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


if __name__ == "__main__":
    guard(int(sys.argv[1]), int(sys.argv[2]))
