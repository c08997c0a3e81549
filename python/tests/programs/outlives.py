#!/usr/bin/python3
"""Starts a process in a session of its own, never waits for it, and exits leaving it behind."""
import subprocess

import _program

subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, start_new_session=True)
_program.serve()
