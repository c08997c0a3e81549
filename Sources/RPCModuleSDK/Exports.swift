/// Module authors import only `RPCModuleSDK`: `JSONValue` (params of raw methods, exact results, error data),
/// `RPCError` (what a method throws to choose what the client sees) and `RPCParam` (a declared parameter)
/// come with it.
@_exported import RPCBinding
@_exported import RPCJSON
@_exported import RPCProtocol
/// `RPCInterfaceModule`'s declarations and documented errors (`RPCDocumentedError`).
@_exported import RPCInterface
