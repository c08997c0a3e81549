/// An app imports only `RPCClient`: the types its API uses come with it — `JSONValue` (params and results),
/// `RPCError` (what the server answered a failed call with) and `RPCEndpoint` (where to connect).
@_exported import RPCJSON
@_exported import RPCProtocol
/// Typed proxies: `RPCProxy`, `RPCProxyError`, `RPCDocumentedError` (see `RPCClient.proxy`).
@_exported import RPCInterface
