#!/usr/bin/python3
"""Answers as if it were rpcd refusing access: -32007."""
import _program

_program.serve(lambda id, message: {"jsonrpc": "2.0", "id": id, "error": {"code": -32007, "message": "Access denied"}})
