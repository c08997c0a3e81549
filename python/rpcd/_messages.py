"""What both clients share: the items a subscription yields, the TLS context, and the JSON-RPC messages
they build and take apart (docs/PROTOCOL.md §3)."""

import json
import ssl
from dataclasses import dataclass

from ._wire import parse_address
from .errors import ProtocolError, RPCError

__all__ = ["Event", "Lost", "Resubscribed", "tls_context"]

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

SHUTTING_DOWN = -32006  # the call did not run: rpcd is stopping (docs/PROTOCOL.md §5)
RECONNECT_FOR = 30.0    # how long a call that must be sent again waits for a connection: a restart and then some


def tls_context(ca_file=None, cert_file=None, key_file=None):
    """A client context for rpcd's tls://, https:// and wss:// listeners: TLS 1.2 or later, the server's
    certificate checked against CA_FILE (default: the system's CAs) and its host name; CERT_FILE and KEY_FILE
    are this client's certificate, for servers that ask for one (`client:` access rules)."""
    context = ssl.create_default_context(cafile=ca_file)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


@dataclass(frozen=True)
class Event:
    """One event of a subscription: its full name, `seq` (from 1; a gap means events were lost) and payload."""
    event: str
    seq: int
    data: object


@dataclass(frozen=True)
class Lost:
    """`count` events were lost just before the next Event (the server dropped them for a slow subscriber,
    or this client's buffer was full)."""
    count: int


@dataclass(frozen=True)
class Resubscribed:
    """The connection broke or the server restarted (`rpc.goingAway`) and the client subscribed again: events
    in between may have been missed and are not counted, and `seq` starts again."""


def _request(method, params, id=None):
    message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return message


def _result(reply):
    if "error" in reply:
        raise RPCError.from_json(reply["error"])
    if "result" not in reply:
        raise ProtocolError(f"reply has neither result nor error: {reply!r}")
    return reply["result"]


def _batch_results(ids, replies):
    if not isinstance(replies, list):
        raise RPCError.from_json(replies.get("error"))  # the whole batch was refused
    by_id = {reply.get("id"): reply for reply in replies if isinstance(reply, dict)}
    results = []
    for id in ids:
        try:
            results.append(_result(by_id[id]))
        except RPCError as error:
            results.append(error)
        except KeyError:
            results.append(ProtocolError(f"no reply for id {id}"))
    return results


def _is_going_away(message):
    """The `accepted` count of an `rpc.goingAway` notification (docs/PROTOCOL.md §4 "Shutdown"), else None."""
    if isinstance(message, dict) and message.get("method") == "rpc.goingAway" and "id" not in message:
        params = message.get("params")
        accepted = params.get("accepted") if isinstance(params, dict) else None
        if isinstance(accepted, int) and not isinstance(accepted, bool) and accepted >= 0:
            return accepted
    return None


def _not_run(replies):
    """True when every reply (one, or a batch's) says -32006: nothing of the message ran."""
    replies = replies if isinstance(replies, list) else [replies]
    return bool(replies) and all(isinstance(reply, dict) and isinstance(reply.get("error"), dict)
                                 and reply["error"].get("code") == SHUTTING_DOWN for reply in replies)


def _is_notification(message):
    return isinstance(message, dict) and "method" in message and "id" not in message


def _event_item(params):
    return Event(params.get("event"), params.get("seq"), params.get("data"))


def _addresses(addresses):
    if isinstance(addresses, (str, bytes)) or not hasattr(addresses, "__iter__"):
        addresses = [addresses]
    parsed = [parse_address(address) for address in addresses]
    if not parsed:
        raise ValueError("no address given")
    return parsed
