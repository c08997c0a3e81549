"""python3 -m rpcd: one call, or events as JSON lines.

    python3 -m rpcd [--ca FILE] [--cert FILE --key FILE] ADDRESS METHOD [PARAMS_JSON]
    python3 -m rpcd [--ca FILE] [--cert FILE --key FILE] ADDRESS --watch SERVICE.EVENT

ADDRESS is any address rpcd.client takes (HOST:PORT, /path, tls://, http://, ws://...). Exit status: 0, 1 for
an error reply, 64 for a usage error, 69 when the server ends the subscription, 76 when the connection closes.
"""

import json
import sys

from .client import Client, Event, Lost, Resubscribed, tls_context
from .errors import ProtocolError, RPCError, SubscriptionEnded

USAGE = __doc__.split("\n\n")[1]


def main(argv):
    files = {}
    argv = list(argv)
    while len(argv) > 2 and argv[1] in ("--ca", "--cert", "--key"):
        files[argv[1][2:]] = argv[2]
        del argv[1:3]
    if len(argv) < 3 or (argv[2] == "--watch" and len(argv) != 4):
        print("usage:\n" + USAGE, file=sys.stderr)
        return 64
    context = tls_context(files.get("ca"), files.get("cert"), files.get("key")) if files else None
    if argv[2] == "--watch":
        return watch(argv[1], argv[3], context)
    params = json.loads(argv[3]) if len(argv) > 3 else None
    with Client(argv[1], tls=context) as client:
        try:
            print(json.dumps(client.call(argv[2], params), indent=2))
        except RPCError as error:
            print(f"rpcd: {argv[2]}: {error}", file=sys.stderr)
            return 1
    return 0


def watch(address, event, context):
    """Prints each event as one JSON line ({"event", "seq", "data"}, {"lost": N} or {"resubscribed": true})."""
    with Client(address, timeout=None, tls=context) as client:  # no timeout: events may be minutes apart
        try:
            for item in client.events(event):
                if isinstance(item, Event):
                    line = {"event": item.event, "seq": item.seq, "data": item.data}
                elif isinstance(item, Lost):
                    line = {"lost": item.count}
                elif isinstance(item, Resubscribed):
                    line = {"resubscribed": True}
                print(json.dumps(line, separators=(",", ":")), flush=True)
        except RPCError as error:
            print(f"rpcd: {event}: {error}", file=sys.stderr)
            return 1
        except SubscriptionEnded as ended:
            print(f"rpcd: {event}: subscription ended: {ended.reason}", file=sys.stderr)
            return 69
        except ProtocolError:
            return 76
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
