#!/usr/bin/python3
"""Emits an event it did not declare, and logs with a level that does not exist."""
import sys

import _program


def answer(id, message):
    _program.write({"jsonrpc": "2.0", "method": "rpc.event", "params": {"event": "broken.surprise", "data": 1}})
    print("<9>no such level", file=sys.stderr, flush=True)
    return _program.pong(id, message)


_program.serve(answer)
