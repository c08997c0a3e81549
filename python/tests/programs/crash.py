#!/usr/bin/python3
"""Fails with a traceback at its first call."""
import _program


def answer(id, message):
    raise RuntimeError("a bug")


_program.serve(answer)
