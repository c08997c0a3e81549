/// The SDK's former name for a method's parameter; the one type, `RPCParam`, also describes the parameters
/// of the daemon's built-in services.
@available(*, deprecated, renamed: "RPCParam")
public typealias RPCModuleParam = RPCParam
