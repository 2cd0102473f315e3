"""capplan/runtime.py: Prefect's temporary server dies with the capplan process that started it (issue 20, item 12),
starts early, before Prefect is imported (issue 24); the plan's worker processes run its jobs, and die with it too."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from capplan.runtime import STOP_GRACE_S, imports_uncollected

CAPPLAN = Path(sys.executable).with_name("capplan")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.1)
    return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_guard_stops_the_server_when_its_starter_is_killed(tmp_path: Path):
    # A stand-in for capplan: starts a long-lived "server" and its guard, prints the server's pid, waits.
    starter = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import subprocess, sys, time
        from capplan.runtime import start_guard
        server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        start_guard(server.pid)
        print(server.pid, flush=True)
        time.sleep(300)
    """)], stdout=subprocess.PIPE, text=True)
    server_pid = int(starter.stdout.readline())
    try:
        assert not _gone(server_pid)
        time.sleep(0.5)
        assert not _gone(server_pid)  # the guard leaves a server alone while its starter lives
        starter.kill()
        starter.wait(10)
        assert _wait_gone(server_pid, STOP_GRACE_S + 5), "the server outlived its starter"
    finally:
        _kill(server_pid)
        _kill(starter.pid)


def test_guard_exits_by_itself_when_the_server_stops():
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    from capplan.runtime import start_guard

    guard = start_guard(server.pid)
    try:
        server.terminate()
        server.wait(10)
        assert guard.wait(10) == 0
    finally:
        _kill(server.pid)
        _kill(guard.pid)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_kill_9_of_capplan_plan_leaves_no_prefect_server(tmp_path: Path, write_plan_config, plan_logs):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120")
    config = write_plan_config(tmp_path, plan_logs)
    plan = subprocess.Popen([str(CAPPLAN), "plan", "--config", str(config)], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and plan.poll() is None and not servers:
            servers = [p for p in psutil.Process(plan.pid).children(recursive=True)
                       if "uvicorn" in " ".join(p.cmdline()) and _listening(p)]
            time.sleep(0.2)
        assert servers, "capplan plan did not start Prefect's temporary server"
        plan.send_signal(signal.SIGKILL)
        plan.wait(10)
        left = [p.pid for p in servers if not _wait_gone(p.pid, STOP_GRACE_S + 5)]
        assert left == [], f"Prefect's server (pid {left}) outlived `capplan plan` after kill -9"
    finally:
        _kill(plan.pid)
        for p in servers:
            _kill(p.pid)


def _listening(proc: psutil.Process) -> bool:
    try:
        return any(c.status == psutil.CONN_LISTEN for c in proc.net_connections(kind="inet"))
    except psutil.Error:
        return False


def test_a_forked_child_does_not_hold_the_guards_pipe():
    # Any fork (a worker, a library's) that kept the write end would make a dead capplan look alive to the guard.
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os, subprocess, sys
        from capplan import runtime
        server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        guard = runtime.start_guard(server.pid)
        fds = list(runtime._write_ends)
        child = os.fork()
        if child == 0:
            held = []
            for fd in fds:
                try:
                    os.fstat(fd)
                    held.append(fd)
                except OSError:
                    pass
            os._exit(10 + len(held))
        _, status = os.waitpid(child, 0)
        server.kill(); guard.wait(10)
        print(len(fds), os.waitstatus_to_exitcode(status) - 10)
    """)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "0"]  # one write end here, none in the child


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_early_server_records_the_flow_and_is_guarded(tmp_path: Path):
    script = textwrap.dedent("""
        import os, sys
        from capplan import runtime
        wait = runtime.start_temporary_server()
        url = os.environ["PREFECT_API_URL"]
        from prefect import flow
        from prefect.client.orchestration import get_client
        ran = []
        wait(meanwhile=[lambda: ran.append("early")])  # the server takes seconds to answer: it runs
        @flow(name="after-early-start")
        def one():
            return 1
        one()
        wait(meanwhile=[lambda: ran.append("late")])  # the server answers: skipped
        with get_client(sync_client=True) as client:
            runs = client.read_flow_runs()
            print(one(), str(client.api_url).rstrip("/") == url, len(runs), runs[0].state.type.value,
                  len(runtime._write_ends), "prefect.server.api.server" in sys.modules, wait.started, ",".join(ran),
                  flush=True)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    # the flow ran against the early server, which recorded it (completed), one guard, Prefect's server
    # package never imported here; the job meant for the wait ran, the one after it did not
    assert done.stdout.split() == ["1", "True", "1", "COMPLETED", "1", "False", "True", "early"]


def test_with_an_api_url_the_early_start_starts_nothing():
    script = ("import os, psutil\nfrom capplan.runtime import start_temporary_server\n"
              "start_temporary_server()()\n"
              "print(os.environ['PREFECT_API_URL'], len(psutil.Process().children()))")
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing listens there
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["http://127.0.0.1:9/api", "0"]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_an_api_named_in_a_profile_stops_the_server_started_before_prefect_read_it(tmp_path: Path):
    home = tmp_path / "prefect-home"
    home.mkdir()
    (home / "profiles.toml").write_text('active = "remote"\n\n[profiles.remote]\n'
                                        'PREFECT_API_URL = "http://127.0.0.1:9/api"\n')  # nothing listens there
    script = textwrap.dedent("""
        import os, time, psutil
        from capplan.runtime import start_temporary_server
        wait = start_temporary_server()
        wait()  # returns at once: the profile's API is the user's
        time.sleep(3 * 1.0)  # the guard polls every POLL_S and exits once its server is gone
        alive = [c for c in psutil.Process().children() if c.status() != psutil.STATUS_ZOMBIE]
        from prefect.settings import get_current_settings
        print(wait.started, len(alive), "PREFECT_API_URL" in os.environ, get_current_settings().api.url)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    # not started as far as the command goes, no server or guard left, the profile's API in force
    assert done.stdout.split() == ["False", "0", "False", "http://127.0.0.1:9/api"]


def test_jobs_run_here_and_in_the_forked_workers_in_order_and_a_failure_is_raised_here():
    script = textwrap.dedent("""
        import os
        from capplan.runtime import in_workers, worker_processes
        with worker_processes(2) as pool:
            pids = in_workers(os.getpid, {k: () for k in "abcd"})
            squares = in_workers(pow, {k: (k, 2) for k in (3, 1, 2)})
            try:
                in_workers(int, {"here": ("1",), "in a worker": ("not a number",)})
            except ValueError as exc:
                failed = "not a number" in str(exc)
        print(pool is not None, pids["a"] == os.getpid(), len(pids) == 4, list(pids) == list("abcd"),
              list(squares.items()) == [(3, 9), (1, 1), (2, 4)], failed)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True"] * 6  # the first job here (which process runs the others: next test)


def test_this_process_takes_back_the_jobs_no_worker_has_started():
    """8 jobs, 2 workers: the pool hands out at most 3 more than its workers run (Python's executor), so the last
    ones wait; this process runs the first job (short), then the last one, which no worker had taken."""
    script = textwrap.dedent("""
        import os, time
        from capplan.runtime import in_workers, worker_processes

        def pid_after(seconds):
            time.sleep(seconds)
            return os.getpid()

        with worker_processes(2) as pool:
            pids = in_workers(pid_after, {k: (0.05 if k == 0 else 0.6,) for k in range(8)})
        print(pool is not None, list(pids) == list(range(8)), pids[0] == pids[7] == os.getpid(),
              pids[1] != os.getpid() != pids[2], len(set(pids.values())) == 3)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True"] * 5


def test_the_failure_raised_is_the_first_in_the_order_of_the_jobs_wherever_and_whenever_it_failed():
    """8 failing jobs, 2 workers: job 7, taken back here, fails first in time (at once), jobs 1 and 2 fail in the
    workers 0.6 s later; the error raised is job 1's (the first failing job in order), in every round."""
    script = textwrap.dedent("""
        import time
        from capplan.runtime import in_workers, worker_processes

        def fail_after(key, seconds):
            time.sleep(seconds)
            raise ValueError(f"job {key}")

        def ok_or_fail(key, seconds):
            return key if key == 0 else fail_after(key, seconds)

        raised = []
        with worker_processes(2):
            for _ in range(3):
                try:
                    in_workers(ok_or_fail, {k: (k, 0.0 if k in (0, 7) else 0.6) for k in range(8)})
                except ValueError as exc:
                    raised.append(str(exc))
        print(raised)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "['job 1', 'job 1', 'job 1']"


def test_jobs_not_run_here_all_go_to_the_workers_in_order_and_without_workers_run_here():
    """``in_workers(..., here=False)``: a stage beside the flow's thread (the evidence charts) hands every job to the
    workers, even a single one; the first failing job's error in the order of the jobs is raised here."""
    script = textwrap.dedent("""
        import os
        from capplan.runtime import in_workers, worker_processes
        alone = in_workers(os.getpid, {k: () for k in "ab"}, here=False)
        with worker_processes(2):
            pids = in_workers(os.getpid, {k: () for k in "abcd"}, here=False)
            one = in_workers(os.getpid, {"a": ()}, here=False)
            squares = in_workers(pow, {k: (k, 2) for k in (3, 1, 2)}, here=False)
            try:
                in_workers(int, {"a": ("1",), "b": ("not a number",), "c": ("neither",)}, here=False)
            except ValueError as exc:
                failed = "'not a number'" in str(exc)
        print(set(alone.values()) == {os.getpid()}, os.getpid() not in pids.values(), list(pids) == list("abcd"),
              one["a"] != os.getpid(), list(squares.items()) == [(3, 9), (1, 1), (2, 4)], failed)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True"] * 6


def test_jobs_not_run_here_that_no_worker_started_are_dropped_after_a_failure():
    """``here=False``, 2 workers, 8 jobs: job 0 fails at once, jobs 1-7 would each sleep 0.5 s and write a file. The
    failure is raised as soon as it is read, and the jobs no worker had started are cancelled, so they leave the
    workers to the other stages: at most the 2 taken when job 0 failed and the pool's 3 handed ahead (Python's
    executor hands out up to 3 more than its workers run) ran; without the cancel all 7 do within the 3 s waited."""
    script = textwrap.dedent("""
        import pathlib, sys, time
        from capplan.runtime import in_workers, worker_processes

        def mark(key, folder):
            if key == 0:
                raise ValueError("job 0")
            time.sleep(0.5)
            (pathlib.Path(folder) / str(key)).touch()

        folder = sys.argv[1]
        with worker_processes(2):
            try:
                in_workers(mark, {k: (k, folder) for k in range(8)}, here=False)
            except ValueError as exc:
                print(exc)
            time.sleep(3.0)  # inside the block: without the cancel the workers would run all 7 by now
            print(len(list(pathlib.Path(folder).iterdir())))
    """)
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([sys.executable, "-c", script, folder], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    failure, ran = done.stdout.split("\n")[:2]
    assert failure == "job 0"
    assert int(ran) <= 5


def test_one_job_runs_in_a_worker_and_without_workers_here():
    """``in_worker``: the SLO and drift stages' one job each, in a worker process (a failure raised here)."""
    script = textwrap.dedent("""
        import os
        from capplan.runtime import in_worker, worker_processes
        here = in_worker(os.getpid) == os.getpid()
        with worker_processes(2):
            elsewhere = in_worker(os.getpid) != os.getpid()
            squared = in_worker(pow, 3, 2) == 9
            try:
                in_worker(int, "not a number")
            except ValueError as exc:
                failed = "not a number" in str(exc)
        print(here, elsewhere, squared, failed)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True"] * 4


def test_without_workers_the_jobs_run_here_one_after_the_other():
    from capplan.runtime import in_workers

    assert in_workers(os.getpid, {"a": (), "b": ()}) == {"a": os.getpid(), "b": os.getpid()}


def test_no_workers_are_forked_while_another_thread_runs():
    # a fork copies no thread, but may copy a lock one held: the block then runs its jobs here
    import threading

    from capplan.runtime import in_workers, worker_processes

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with worker_processes(2) as pool:
            assert pool is None
            assert in_workers(os.getpid, {"a": ()}) == {"a": os.getpid()}
    finally:
        stop.set()
        other.join()


def test_the_workers_exit_when_their_parent_is_killed():
    starter = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import os, time, psutil
        from capplan.runtime import in_workers, worker_processes
        with worker_processes(2):
            in_workers(time.sleep, {"a": (0.1,), "b": (0.1,)})
            print(" ".join(str(c.pid) for c in psutil.Process().children()), flush=True)
            time.sleep(300)
    """)], stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in starter.stdout.readline().split()]
    try:
        assert len(workers) == 2 and not any(_gone(pid) for pid in workers)
        starter.kill()
        starter.wait(10)
        left = [pid for pid in workers if not _wait_gone(pid, 5 + 2)]
        assert left == [], f"worker(s) {left} outlived their parent's kill -9"
    finally:
        _kill(starter.pid)
        for pid in workers:
            _kill(pid)


@pytest.mark.parametrize("collecting", [True, False])
def test_imports_uncollected_pauses_the_collector_freezes_on_request_and_leaves_it_as_it_was(collecting):
    """What ``capplan plan`` does around its imports: no collection while importing, ``freeze()`` moves what
    exists out of the collector's reach and resumes it (if it was on), and the block's end gives the frozen
    objects back (a test process that goes on collects them again)."""
    (gc.enable if collecting else gc.disable)()
    try:
        assert gc.get_freeze_count() == 0
        with imports_uncollected() as freeze:
            assert not gc.isenabled()
            kept = [[] for _ in range(10)]  # tracked objects, as an import makes
            freeze()
            assert gc.isenabled() is collecting
            assert gc.get_freeze_count() >= len(kept)
        assert gc.isenabled() is collecting and gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        gc.enable()


@pytest.mark.parametrize("status_given", [True, False])
def test_given_its_status_the_process_ends_in_the_last_exit_hook_with_its_output_written(status_given):
    """``capplan plan`` through the console script: the exit hooks registered after ``freeze_heap_at_exit`` (Prefect's,
    the server's stop) still run, buffered output is written, logging is shut down, and the process ends with the
    status it was given right in ``freeze_heap_at_exit``'s hook: nothing after it (a hook registered before it, here,
    stands for the interpreter's teardown). Not given a status (a command called in a test's process), the
    interpreter goes on and exits as usual."""
    script = textwrap.dedent(f"""
        import atexit, logging, os, sys
        import capplan.runtime as r
        atexit.register(os.write, 1, b" earlier hook ran")
        r.freeze_heap_at_exit()
        atexit.register(print, "later hook ran", end="")
        handler = logging.StreamHandler(sys.stdout)
        handler.close = lambda: os.write(1, b"logging shut down ")
        logging.getLogger("t").addHandler(handler)
        print("buffered", end=" ")
        if {status_given}:
            r.end_after_exit_hooks(3)
        sys.exit(3)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith("buffered later hook ran")
    assert "logging shut down" in done.stdout  # by its own hook, or by ours when its own is skipped
    assert ("earlier hook ran" in done.stdout) is not status_given
