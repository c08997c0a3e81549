#!/usr/bin/python3
"""Takes 50 ms over each call, one at a time."""
import time

import _program

slow = dict(_program.DECLARATION["services"][0]["methods"][0], concurrent=False)


def answer(id, message):
    time.sleep(0.05)
    return _program.pong(id, message)


service = dict(_program.DECLARATION["services"][0], methods=[slow])
_program.serve(answer, declaration={"protocol": 1, "services": [service]})
