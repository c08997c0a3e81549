/// An app imports only `RPCClient`: the types its API uses come with it — `JSONValue` (params and results),
/// `RPCError` (what the server answered a failed call with) and `RPCEndpoint` (where to connect). Re-exported on
/// purpose: docs/CLIENT.md's and examples/swift-client's programs write one `import RPCClient`.
@_exported public import RPCJSON
@_exported public import RPCProtocol
/// Typed proxies: `RPCProxy`, `RPCProxyError`, `RPCDocumentedError` (see `RPCClient.proxy`).
@_exported public import RPCInterface
