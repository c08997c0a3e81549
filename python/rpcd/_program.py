"""A handler program on pipes, for rpcd-handler-check: started as rpcd starts it, its output cut into lines
by a thread of its own (as rpcd's LineCutter does: a line past MAX_LINE ends it, what is left without a line
feed at its end is half a line), its standard error drained by another, so that it never blocks on a full
pipe. `send` may be called from any thread.

What the check holds of the program is bounded: at most MAX_PENDING bytes of output not yet taken (past it
the reader waits, as a pipe rpcd reads slowly would make the program wait), the last MAX_LOG_LINES lines of
standard error, each cut at 16 KiB as rpcd cuts them.

Its processes: the check is made a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER), so that a process the
program starts stays a descendant of the check even when its parent ends or it leaves the session; `tree()`
lists them from /proc, and `kill()` ends them all, as rpcd's cgroup kill does."""

import collections
import ctypes
import json
import os
import queue
import signal
import subprocess
import threading
import time

__all__ = ["Ended", "Program", "MAX_LINE", "Task", "describe"]

MAX_LINE = 4 << 20     # rpcd's MaxFrameSize= default, sent as maxLineSize
MAX_PENDING = 64 << 20
MAX_LOG_LINES = 1000
LOG_LINE = 16 << 10    # rpcd cuts a log line there (HANDLER-PROTOCOL.md §7)
_PR_SET_CHILD_SUBREAPER = 36

Task = collections.namedtuple("Task", "pid ppid state threads name")
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class Ended(Exception):
    """The program ended, or stopped reading, while a case needed it."""


class Program:
    """The program on pipes. Its output lines go to `lines` as ("line", bytes), ("long", count),
    ("half", bytes) and finally ("eof", None); its standard error to `errors`."""

    def __init__(self, path, env):
        _become_subreaper()
        self.process = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd="/", env=env, start_new_session=True)
        self.output_pipe = os.fstat(self.process.stdout.fileno()).st_ino
        self.lines = queue.Queue()
        self.errors = collections.deque(maxlen=MAX_LOG_LINES)
        self.error_count = 0
        self.sent = self.received = 0          # calls written; lines read
        self._pending = 0                      # bytes in `lines` not yet taken
        self._room = threading.Condition()
        self._killed = False
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read_output, daemon=True).start()
        self.error_reader = threading.Thread(target=self._read_errors, daemon=True)
        self.error_reader.start()

    def _read_output(self):
        fd, pending = self.process.stdout.fileno(), bytearray()
        while chunk := os.read(fd, 1 << 16):
            start = len(pending)
            pending += chunk
            while (newline := pending.find(b"\n", start)) >= 0:
                line = bytes(pending[:newline])
                del pending[:newline + 1]
                start = 0
                if len(line) > MAX_LINE:
                    return self._too_long(len(line))
                self._put(line)
            if len(pending) > MAX_LINE:
                return self._too_long(len(pending))
        if pending.strip():
            self.lines.put(("half", bytes(pending)))
        self.lines.put(("eof", None))

    def _put(self, line):
        with self._room:
            while self._pending > MAX_PENDING and not self._killed:
                self._room.wait(0.1)
            self._pending += len(line)
            self.received += 1
        self.lines.put(("line", line))

    def next(self, timeout):
        """The next item of its output (see the class), or queue.Empty after TIMEOUT seconds."""
        kind, line = self.lines.get(timeout=timeout)
        if kind == "line":
            with self._room:
                self._pending -= len(line)
                self._room.notify()
        return kind, line

    def _too_long(self, count):
        self.lines.put(("long", count))
        self.kill()
        self.lines.put(("eof", None))

    def _read_errors(self):
        while line := self.process.stderr.readline(LOG_LINE):
            self.errors.append(line.rstrip(b"\n"))
            self.error_count += 1

    def send(self, message):
        """Writes MESSAGE as one line; Ended when the program no longer reads."""
        try:
            with self._write_lock:
                self.process.stdin.write(_dumps(message).encode() + b"\n")
                self.process.stdin.flush()
                self.sent += "id" in message
        except (BrokenPipeError, ValueError, OSError) as failure:
            raise Ended(f"its standard input is closed ({failure.__class__.__name__})") from None

    def close_input(self):
        try:
            with self._write_lock:
                self.process.stdin.close()
        except OSError:
            pass

    def tree(self):
        """Its processes still running (zombies left out; those that are the check's are reaped)."""
        me, tasks = os.getpid(), {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat", "rb") as file:
                        stat = file.read()
                except OSError:
                    continue
                comm, _, rest = stat.partition(b" (")[2].rpartition(b") ")
                fields = rest.split()
                tasks[int(name)] = Task(int(name), int(fields[1]), fields[0].decode(), int(fields[17]),
                                        comm.decode("utf-8", "replace"))
        children = collections.defaultdict(list)
        for task in tasks.values():
            children[task.ppid].append(task)
        found, todo = [], list(children[me])
        while todo:
            task = todo.pop()
            todo += children[task.pid]
            if task.state != "Z":
                found.append(task)
            elif task.ppid == me and task.pid != self.process.pid:
                _reap(task.pid)  # an orphan handed to the check, ended
        return found

    def holders(self, tasks):
        """Those of TASKS that hold its standard output's pipe open."""
        def holds(pid):
            try:
                return any(os.stat(f"/proc/{pid}/fd/{fd}").st_ino == self.output_pipe and
                           os.readlink(f"/proc/{pid}/fd/{fd}").startswith("pipe:")
                           for fd in os.listdir(f"/proc/{pid}/fd"))
            except OSError:
                return False
        return [task for task in tasks if holds(task.pid)]

    def kill(self):
        """SIGKILL to its process group and to every process of its tree, until none is left (at most 10 s: on
        a loaded machine hundreds of processes take a while to die)."""
        self._killed = True
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                pass
            tasks = self.tree()
            if not tasks:
                return
            for task in tasks:
                try:
                    os.kill(task.pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)

    def termination(self):
        """How it ended ("exit status 3", "signal SIGSEGV"), or None while it runs."""
        status = self.process.poll()
        if status is None:
            return None
        return f"exit status {status}" if status >= 0 else f"signal {signal.Signals(-status).name}"


def describe(tasks, count=3):
    """'1234 sleep, 1235 sh (and 4 more)'."""
    named = ", ".join(f"{task.pid} {task.name}" for task in tasks[:count])
    return named + (f" (and {len(tasks) - count} more)" if len(tasks) > count else "")


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _become_subreaper():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: processes that leave the program's tree are not seen
