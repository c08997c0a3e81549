"""A handler program on pipes, for rpcd-handler-check: started as rpcd starts it, its output cut into lines
by a thread of its own (as rpcd's LineCutter does: a line past MAX_LINE ends it, what is left without a line
feed at its end is half a line), its standard error drained by another, so that it never blocks on a full
pipe. `send` may be called from any thread."""

import json
import os
import queue
import signal
import subprocess
import threading

__all__ = ["Ended", "Program", "MAX_LINE"]

MAX_LINE = 4 << 20     # rpcd's MaxFrameSize= default, sent as maxLineSize
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class Ended(Exception):
    """The program ended, or stopped reading, while a case needed it."""


class Program:
    """The program on pipes. Its output lines go to `lines` as ("line", bytes), ("long", count),
    ("half", bytes) and finally ("eof", None); its standard error to `errors`."""

    def __init__(self, path, env):
        self.process = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd="/", env=env, start_new_session=True)
        self.lines = queue.Queue()
        self.errors = []
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
                self.lines.put(("line", line))
            if len(pending) > MAX_LINE:
                return self._too_long(len(pending))
        if pending.strip():
            self.lines.put(("half", bytes(pending)))
        self.lines.put(("eof", None))

    def _too_long(self, count):
        self.lines.put(("long", count))
        self.kill()
        self.lines.put(("eof", None))

    def _read_errors(self):
        for line in self.process.stderr:
            self.errors.append(line.rstrip(b"\n"))

    def send(self, message):
        """Writes MESSAGE as one line; Ended when the program no longer reads."""
        try:
            with self._write_lock:
                self.process.stdin.write(_dumps(message).encode() + b"\n")
                self.process.stdin.flush()
        except (BrokenPipeError, ValueError, OSError) as failure:
            raise Ended(f"its standard input is closed ({failure.__class__.__name__})") from None

    def close_input(self):
        try:
            with self._write_lock:
                self.process.stdin.close()
        except OSError:
            pass

    def kill(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except OSError:
            pass

    def termination(self):
        """How it ended ("exit status 3", "signal SIGSEGV"), or None while it runs."""
        status = self.process.poll()
        if status is None:
            return None
        return f"exit status {status}" if status >= 0 else f"signal {signal.Signals(-status).name}"
