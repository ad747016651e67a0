"""Runs one child (a fuzzer, moe-oracle) so that a campaign can always stop cleanly.

Each child gets its own process group (libFuzzer's -fork mode starts grandchildren), a
wall-clock limit, and its merged stdout/stderr streamed line by line to a log file and
to a callback. When the campaign is asked to stop (SIGINT/SIGTERM), the running child's
whole group is sent SIGTERM, then SIGKILL if it lingers, and the caller is told.
"""

import os
import signal
import subprocess
import threading
import time


class StopFlag:
    """Set by the signal handler; every loop of the campaign checks it."""

    def __init__(self):
        self.signum = None
        self._child = None
        self._lock = threading.Lock()

    @property
    def requested(self):
        return self.signum is not None

    def request(self, signum):
        self.signum = signum
        with self._lock:
            child = self._child
        if child is not None:
            _terminate_group(child)

    def install(self):
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, lambda signum, _frame: self.request(signum))

    def _set_child(self, child):
        with self._lock:
            self._child = child


STOP = StopFlag()


class Outcome:
    def __init__(self, rc, wall, timed_out, interrupted):
        self.rc, self.wall, self.timed_out, self.interrupted = rc, wall, timed_out, interrupted


def _terminate_group(child, grace=10.0):
    try:
        os.killpg(child.pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + grace
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass


def run(cmd, *, log_path, timeout, on_line=None, stdout_path=None, env=None, cwd=None):
    """Runs cmd; returns an Outcome. stdout goes to stdout_path if given, else to the log.

    timeout is a hard wall-clock limit (the fuzzers' own -max_total_time should end them
    first; this is the backstop against a hang).
    """
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    start = time.monotonic()
    if STOP.requested:
        return Outcome(None, 0.0, False, True)
    with open(log_path, "w", encoding="utf-8", errors="replace") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        out = open(stdout_path, "wb") if stdout_path else None
        try:
            child = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out or subprocess.PIPE,
                stderr=subprocess.PIPE if out else subprocess.STDOUT, env=env, cwd=cwd,
                start_new_session=True)
        except OSError as e:
            if out:
                out.close()
            log.write(f"cannot start: {e}\n")
            return Outcome(127, 0.0, False, False)
        STOP._set_child(child)
        stream = child.stderr if out else child.stdout

        def pump():
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                log.write(line + "\n")
                if on_line:
                    on_line(line, time.monotonic() - start)
            stream.close()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        while child.poll() is None:
            if time.monotonic() - start > timeout:
                timed_out = True
                _terminate_group(child)
                break
            if STOP.requested:
                _terminate_group(child)
                break
            time.sleep(0.1)
        child.wait()
        reader.join(timeout=5)
        STOP._set_child(None)
        if out:
            out.close()
        return Outcome(child.returncode, time.monotonic() - start, timed_out, STOP.requested)
