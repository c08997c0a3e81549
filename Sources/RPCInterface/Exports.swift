/// `RPCParam`, `RPCMethodDescriptor` and `RPCServiceDescriptor` describe what an interface declares; `RPCError`
/// is what its methods throw and its proxies report.
@_exported import RPCBinding
@_exported import RPCJSON
@_exported import RPCProtocol
