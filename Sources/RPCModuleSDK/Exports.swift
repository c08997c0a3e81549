/// Module authors import only `RPCModuleSDK`; `JSONValue` (params of raw methods, exact results, error
/// data) comes with it.
@_exported import RPCJSON
