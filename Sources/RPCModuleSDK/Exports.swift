/// Module authors import only `RPCModuleSDK`: `JSONValue` (params of raw methods, exact results, error data)
/// and `RPCError` (what a method throws to choose what the client sees) come with it.
@_exported import RPCJSON
@_exported import RPCProtocol
