"""The loop the broken programs of test_check.py share: a correct handler of one method, `broken.ping`, with
hooks each of them bends. Plain Python, no rpcd package: what a program in any language does by hand."""
import json
import sys

DECLARATION = {"protocol": 1, "services": [{"name": "broken", "version": "1.0.0", "methods": [
    {"name": "ping", "params": [], "readOnly": True, "concurrent": True}]}]}


def write(message, end="\n"):
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + end)
    sys.stdout.flush()


def pong(id, message):
    return {"jsonrpc": "2.0", "id": id, "result": "pong"}


def serve(answer=pong, declaration=DECLARATION):
    """Answers rpcd.start with DECLARATION and each call with ANSWER(id, message) (None: no answer)."""
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "rpcd.start":
            write({"jsonrpc": "2.0", "id": 0, "result": declaration})
        elif "id" in message:
            reply = answer(message["id"], message)
            if reply is not None:
                write(reply)
