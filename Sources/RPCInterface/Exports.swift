/// `RPCParam`, `RPCMethodDescriptor` and `RPCServiceDescriptor` describe what an interface declares; `RPCError`
/// is what its methods throw and its proxies report. Re-exported on purpose: RPCInterface reaches apps and modules
/// only through RPCClient, RPCMacros and RPCModuleSDK, and the code `@RPCInterface` expands to in their files names
/// these types.
@_exported public import RPCBinding
@_exported public import RPCJSON
@_exported public import RPCProtocol
