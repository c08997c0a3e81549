/// Module authors import only `RPCModuleSDK`: `JSONValue` (params of raw methods, exact results, error data),
/// `RPCError` (what a method throws to choose what the client sees) and `RPCParam` (a declared parameter)
/// come with it. Re-exported on purpose: docs/MODULES.md's and examples/modules/hello-swift's modules write one
/// `import RPCModuleSDK`.
@_exported public import RPCBinding
@_exported public import RPCJSON
@_exported public import RPCProtocol
/// `RPCInterfaceModule`'s declarations and documented errors (`RPCDocumentedError`).
@_exported public import RPCInterface
