"""rpcd's Python package, standard library only: `rpcd.client` calls rpcd over every transport it serves
(docs/PROTOCOL.md); `rpcd.handler` writes a program handler, a service in Python that rpcd runs
(docs/HANDLER-PROTOCOL.md)."""

from .errors import ConnectFailed, ConnectionClosed, ProtocolError, RPCError, SubscriptionEnded

__version__ = "0.1.0"
__all__ = ["RPCError", "ProtocolError", "ConnectionClosed", "ConnectFailed", "SubscriptionEnded"]
