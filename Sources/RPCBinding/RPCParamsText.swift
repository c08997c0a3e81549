/// A call as a module's method receives it: the params' JSON text exactly as the client sent it (empty when
/// the call has none). Swift modules' methods (`RPCModuleMethod`) and typed interfaces' methods
/// (`RPCMethodImplementation`) run on it, and answer with JSON text.
public struct RPCParamsText: RPCMethodInput, Hashable {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public func withParamsText<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try bytes.withUnsafeBytes(body)
    }

    public static func output(_ json: [UInt8]) -> [UInt8] { json }
}
