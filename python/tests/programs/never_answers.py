#!/usr/bin/python3
"""Declares itself, then answers no call."""
import _program

_program.serve(lambda id, message: None)
