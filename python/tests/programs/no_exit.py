#!/usr/bin/python3
"""Keeps running after its standard input closes."""
import time

import _program

_program.serve()
time.sleep(60)
