/// The SDK's former error type; modules now throw rpcd's one error type, `RPCError`, with rpcd's codes
/// (`RPCError.invalidParams(_:)`) or their own documented ones (positive, or outside -32768…-32000).
@available(*, deprecated, renamed: "RPCError")
public typealias RPCModuleError = RPCError
