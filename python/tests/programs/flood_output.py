#!/usr/bin/python3
"""Answers its first call only after writing a declared event in a loop (bounded here at 200,000 lines, so
that a check that does not stop it still ends)."""
import _program

DECLARATION = {"protocol": 1, "services": [dict(_program.DECLARATION["services"][0], events=[{"name": "tick"}])]}
TICK = {"jsonrpc": "2.0", "method": "rpc.event", "params": {"event": "broken.tick", "data": None}}


def answer(id, message):
    for _ in range(200_000):
        _program.write(TICK)
    return _program.pong(id, message)


_program.serve(answer, DECLARATION)
