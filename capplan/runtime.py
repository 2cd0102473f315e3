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

:func:`start_temporary_server` starts that same server before the command imports Prefect and its
stages (and without importing Prefect's server package here), so its seconds of start-up run on the
other core meanwhile.

Any fork of this process (a library's) closes the guard pipes' write ends in the child, so a
kill -9 of capplan still stops the temporary server at once.

:func:`worker_processes` forks the processes the plan's CPU-bound stages spread their jobs over
(:func:`in_workers`: the pools' forecasts, the report's charts; this process takes its share). They are
forked once, after the command has imported its stages and before any thread exists (Prefect's, rich's): a fork copies the
imported modules for free but no thread, so no lock can be held at fork by a thread the child lacks
(session 8 forked from a process already running Prefect's threads, a deadlock risk, and found no
gain on a busy machine). A worker ignores Ctrl-C (the command stops them) and exits when capplan
dies, however it dies (:func:`_exit_with_parent`).
"""

from __future__ import annotations

import atexit
import gc
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

#: Seconds between SIGTERM and SIGKILL when the guard stops an orphaned server. [s]
STOP_GRACE_S = 5.0
#: How often the guard checks that the server still exists. [s]
POLL_S = 1.0
#: Most worker processes :func:`worker_processes` forks by default: the plan's stages have a few jobs each (one
#: per pool, one per chart), and each worker holds its own copy of the pages it touches. [count]
MAX_WORKERS = 4

_freeze_at_exit: list[bool] = []  # whether :func:`freeze_heap_at_exit` has registered its hook
_exit_status: list[int] = []  # the status :func:`end_after_exit_hooks` was given
_write_ends: list[int] = []  # kept open for the life of this process; their closing is the signal
_workers: list[Executor] = []  # the processes of the innermost :func:`worker_processes` block, if any

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


def tie_temporary_server_to_this_process() -> None:
    """Guard every temporary Prefect server this process starts from here on (idempotent)."""
    from prefect.server.api import server

    if isinstance(server.subprocess, _GuardedSubprocess):
        return
    server.subprocess = _GuardedSubprocess(subprocess)


def start_temporary_server() -> ServerWait:
    """Start a temporary Prefect API server for this command now; return a :class:`ServerWait` that waits until it answers.

    Prefect's own temporary server (``SubprocessASGIServer``) starts only when the first flow asks
    for the API, and only after this process has imported Prefect's server package (seconds of
    CPU) to launch it. This starts the same server the same way (:data:`_SERVER_ARGS`: Prefect's
    command and environment for its temporary server; its database under ``PREFECT_HOME``) at once,
    before even Prefect is imported (the server reads the same settings: this environment, profile and
    files), so it boots on the other core while the command imports Prefect and its stages, and
    points Prefect's client at it (``PREFECT_API_URL``): the flow and its task runs are recorded
    there as in Prefect's own. The server is guarded
    (:func:`start_guard`) and stopped at exit (SIGTERM, SIGKILL after :data:`STOP_GRACE_S`), after
    Prefect's own exit hooks have flushed to it.

    Does nothing when Prefect's settings name an API (``PREFECT_API_URL``: the user's server, a
    test harness) except guard a temporary server Prefect may start itself; named in a profile rather
    than the environment, the API is known only once Prefect is imported, and the server just
    started is stopped again. The waiter, to call
    before the first flow, raises ``RuntimeError`` if the server exits or does not answer within
    ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``. Its optional ``meanwhile`` callables run one
    after the other while the server has not answered yet, and are skipped once it has (work the
    command does later anyway, such as imports, done in time it would spend waiting).
    """
    import atexit
    import importlib.util
    import socket

    if os.environ.get("PREFECT_API_URL"):
        tie_temporary_server_to_this_process()
        return ServerWait(None)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # a free port, chosen by the kernel
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app_dir = Path(importlib.util.find_spec("prefect").origin).parent.parent  # found, not imported
    args = [a.format(app_dir=app_dir, port=port) for a in _SERVER_ARGS]
    proc = subprocess.Popen([sys.executable, *args], stdin=subprocess.DEVNULL, env={**os.environ, **_SERVER_ENV})
    start_guard(proc.pid)
    atexit.register(_stop_and_reap, proc)  # registered before Prefect's hooks, so it runs after them

    from prefect.context import refresh_global_settings_context
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if settings.api.url:  # a profile names the API
        _stop_and_reap(proc)
        tie_temporary_server_to_this_process()
        return ServerWait(None)
    api_url = f"http://127.0.0.1:{port}/api"
    os.environ["PREFECT_API_URL"] = api_url
    refresh_global_settings_context()  # Prefect read its settings at import
    timeout_s = float(settings.server.ephemeral.startup_timeout_seconds)

    def answers() -> bool:
        import urllib.error
        import urllib.request

        if proc.poll() is not None:
            raise RuntimeError(f"Prefect's temporary server exited with code {proc.returncode} while starting "
                               f"on port {port}")
        try:  # refused at once until uvicorn listens, which it does once the app has started
            with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def wait(meanwhile: Iterable[Callable[[], object]] = ()) -> None:
        deadline = time.monotonic() + timeout_s
        for job in meanwhile:
            if answers():
                return
            job()
        while time.monotonic() < deadline:
            if answers():
                return
            time.sleep(0.1)
        raise RuntimeError(f"Prefect's temporary server did not answer at {api_url} within {timeout_s:g} s "
                           "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)")

    return ServerWait(wait)


class ServerWait:
    """What :func:`start_temporary_server` returns: call it (``meanwhile`` as there) before the first flow."""

    def __init__(self, wait: Callable[[Iterable[Callable[[], object]]], None] | None) -> None:
        self._wait = wait

    @property
    def started(self) -> bool:
        """Whether this process started a temporary server (no API named in Prefect's settings)."""
        return self._wait is not None

    def __call__(self, meanwhile: Iterable[Callable[[], object]] = ()) -> None:
        if self._wait is not None:
            self._wait(meanwhile)


#: Prefect's command for its temporary server (``SubprocessASGIServer._run_uvicorn_command``, Prefect 3.9)
_SERVER_ARGS = ("-m", "uvicorn", "--app-dir", "{app_dir}", "--factory", "prefect.server.api.server:create_app",
                "--host", "127.0.0.1", "--port", "{port}", "--log-level", "error", "--lifespan", "on")
#: ... and the environment it adds (no UI; the server's ephemeral mode)
_SERVER_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}


def _stop_and_reap(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM ``proc``, SIGKILL it after :data:`STOP_GRACE_S`, and reap it."""
    proc.terminate()
    try:
        proc.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _close_write_ends_in_child() -> None:
    """After a fork: the child must not keep the guards' pipes open, or a dead capplan would look alive."""
    for fd in _write_ends:
        try:
            os.close(fd)
        except OSError:
            pass
    _write_ends.clear()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_close_write_ends_in_child)


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


@contextmanager
def imports_uncollected() -> Iterator[Callable[[], None]]:
    """Pause Python's cyclic garbage collector while the block imports; the ``freeze`` it yields resumes it.

    Imports make long-lived objects (modules, classes, functions: ~300,000 for the plan), not garbage, yet each
    full collection walks them all (0.1-0.5 s each, several during the imports and the flow). ``freeze()`` moves
    every object alive now out of the collector's reach (:func:`gc.freeze`) and resumes collecting what comes
    after; call it again after more imports. Before a fork it also keeps the children's collections off the
    shared pages (Python's :mod:`gc` documentation). At the block's end the frozen objects go back to the
    collector (``gc.unfreeze``: a caller that goes on, e.g. a test, collects them again) and the collector is
    left as it was.
    """
    was_on = gc.isenabled()
    gc.disable()

    def freeze() -> None:
        gc.freeze()
        if was_on:
            gc.enable()

    try:
        yield freeze
    finally:
        gc.unfreeze()
        if was_on:
            gc.enable()


def freeze_heap_at_exit() -> None:
    """At the interpreter's exit, after every exit hook registered later (Prefect's, the temporary server's stop),
    freeze the heap (:func:`gc.freeze`), so that the exit does not walk it with full collections (measured
    ~1.5 s for the plan); the operating system frees the memory. Idempotent.

    Once :func:`end_after_exit_hooks` has been given the process's exit status, the same hook then ends the process
    with it (:func:`os._exit`), after flushing the standard streams: the interpreter's teardown of its ~300,000
    objects (modules, classes, functions; 0.1-0.2 s for the plan) frees nothing the operating system would not.
    By then the threads are joined and every hook registered after this one has run (Prefect's, the server's
    stop, the workers'); of those registered before it (the command registers it first thing) only logging's
    would be skipped, so it shuts logging down itself. The command's files and database connections are closed
    by the stages that opened them.
    """
    if not _freeze_at_exit:
        _freeze_at_exit.append(True)
        atexit.register(_last_exit_hook)


def end_after_exit_hooks(status: int) -> None:
    """The process exits with ``status``: let :func:`freeze_heap_at_exit`'s hook, if registered, end it there
    (the console script calls this on its way out; a caller in the same process, e.g. a test, does not)."""
    _exit_status[:] = [status]


def _last_exit_hook() -> None:
    gc.freeze()
    if _exit_status:
        if "logging" in sys.modules:  # its hook may have been registered before this one, and so run after it
            sys.modules["logging"].shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):  # closed or replaced: nothing left to write
                pass
        os._exit(_exit_status[0])


@contextmanager
def worker_processes(count: int | None = None) -> Iterator[Executor | None]:
    """Fork ``count`` worker processes now (default: one per core this process may use, at most
    :data:`MAX_WORKERS`; none with one core) for :func:`in_workers` to use while the block runs; stop them at
    its end.

    Call it once the command has imported what its workers will run, and before it starts a thread:
    the workers are forked at once, here (``ProcessPoolExecutor`` with the ``fork`` context launches
    them all on its first submission), so they start with those modules loaded and with no thread of
    this process (a lock a thread held at the fork would stay locked in the child). Each worker ignores
    SIGINT and exits when this process does, even by ``kill -9`` (:func:`_exit_with_parent`).
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if count is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        count = min(cores, MAX_WORKERS)
    if count < 2 or threading.active_count() > 1:  # nothing to gain, or a thread that a fork could break
        yield None
        return
    pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork"),
                               initializer=_exit_with_parent, initargs=(os.getpid(),))
    pool.submit(int)  # forks every worker now, from this thread
    _workers.append(pool)
    try:
        yield pool
    finally:
        _workers.remove(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def in_workers(job: Callable[..., R], args: Mapping[K, tuple], *, here: bool = True) -> dict[K, R]:
    """``{key: job(*args[key])}`` in the order of ``args``: while a :func:`worker_processes` block runs, side by side
    in its workers and here (this process would only wait); else all here, one after the other.

    Here runs the first job, then, last first, each job no worker has taken yet (taken back from the pool,
    :meth:`concurrent.futures.Future.cancel`), while the workers take them first to last: no process waits
    idle while jobs are left. With ``here=False`` every job goes to the workers and this thread only waits: for a
    stage that runs beside others (a task submitted to the flow's task runner), whose jobs would otherwise compete
    for this process's Python with the flow's own thread; the workers take its jobs after those already queued.
    ``job`` must be a module-level function, its arguments and result picklable; it
    gives the same result wherever it runs. The failure of the first failing job in the order of ``args`` is raised
    here, whichever process ran it and whenever it failed.
    """
    jobs = list(args.items())
    if not _workers or (here and len(jobs) < 2):
        return {key: job(*a) for key, a in jobs}
    if not here:
        queued = {key: _workers[-1].submit(job, *a) for key, a in jobs}
        try:
            return {key: queued[key].result() for key, _ in jobs}  # the first failure in the order of ``args``
        except BaseException:
            for future in queued.values():  # the jobs no worker has started leave the workers to the others' stages
                future.cancel()
            raise
    (first, first_args), *rest = jobs
    futures = {key: _workers[-1].submit(job, *a) for key, a in rest}
    futures[first] = _run_here(job, first_args)
    for key, a in reversed(rest):  # the pool hands jobs to its workers in order: the ones not yet handed are last
        if not futures[key].cancel():
            break
        futures[key] = _run_here(job, a)
    return {key: futures[key].result() for key, _ in jobs}  # the first failure in the order of ``args``


def _run_here(job: Callable[..., R], a: tuple) -> Future[R]:
    """``job(*a)`` run in this process, its result or exception kept as a finished future (raised when read)."""
    done: Future[R] = Future()
    try:
        done.set_result(job(*a))
    except Exception as exc:  # noqa: BLE001 - kept, raised by in_workers in the order of its jobs
        done.set_exception(exc)
    return done


def in_worker(job: Callable[..., R], *args: Any) -> R:
    """``job(*args)`` in one of the worker processes while a :func:`worker_processes` block runs (the calling
    thread waits, holding no lock Python's other threads need), else here: :func:`in_workers` with ``here=False``
    for one job."""
    return in_workers(job, {0: args}, here=False)[0]


def _exit_with_parent(parent_pid: int) -> None:
    """A worker's start: ignore Ctrl-C (the command stops its workers) and exit once ``parent_pid`` is gone.

    A worker blocks on its job queue, whose write end it holds itself, so it would not notice its
    parent's death: a daemon thread checks the parent every :data:`POLL_S` (after the parent's death
    this process is re-parented, so ``getppid`` changes).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


if __name__ == "__main__":
    guard(int(sys.argv[1]), int(sys.argv[2]))
