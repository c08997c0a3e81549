#!/usr/bin/python3
"""Prints a debug line on standard output before each answer."""
import _program


def answer(id, message):
    print(f"handling {id}")
    return _program.pong(id, message)


_program.serve(answer)
