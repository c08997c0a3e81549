"""The exceptions of the rpcd package: one for a JSON-RPC error object, in both directions, and the client's
failures that are not the server's answer."""

import json

__all__ = ["RPCError", "ProtocolError", "ConnectionClosed", "ConnectFailed", "SubscriptionEnded"]


class RPCError(Exception):
    """A JSON-RPC error object: `code` (an integer), `message` (a sentence) and `data` (any JSON value, or
    None). The client raises it for an error reply (docs/PROTOCOL.md §5 lists rpcd's codes); a handler method
    raises it to answer with that error (its code among those it declared)."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{message} ({code})" + (f": {json.dumps(data)}" if data is not None else ""))
        self.code = code
        self.message = message
        self.data = data

    def to_json(self):
        error = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_json(cls, error):
        if not isinstance(error, dict):
            return cls(-32603, "Internal error", {"detail": f"malformed error object {error!r}"})
        return cls(error.get("code"), error.get("message"), error.get("data"))


class ProtocolError(Exception):
    """The server sent something that is not what the protocol allows (a frame that is not JSON, a WebSocket
    frame out of place, an HTTP answer that is not one), or closed the connection in the middle of a message."""


class ConnectionClosed(ProtocolError):
    """The connection closed before the reply arrived (the call may or may not have run), or the client was
    closed. The next call connects again."""


class _NotRun(ConnectionClosed):
    """The server said the call did not run (`rpc.goingAway` put it after the cut, or it was never sent): the
    client sends it again on a new connection. Raised to the caller only when that is no longer possible."""


class ConnectFailed(ConnectionError):
    """No address could be connected to: `errors` maps each address tried to the reason."""

    def __init__(self, errors):
        super().__init__("; ".join(f"{address}: {reason}" for address, reason in errors.items()) or "no address")
        self.errors = errors


class SubscriptionEnded(Exception):
    """The server ended a subscription (`rpc.subscriptionEnded`): `event` and `reason` (`service removed`,
    `event no longer declared`, `access rules changed`)."""

    def __init__(self, event, reason):
        super().__init__(f"subscription to {event} ended: {reason}")
        self.event = event
        self.reason = reason
