public import RPCJSON
import RPCProtocol

/// One call as a method's body receives it (`RPCMethod`): the params' JSON text as the client sent it, and
/// the form the method's result JSON takes on its way out. The daemon's built-in services get `RPCCall` (the
/// router's call, with the caller's connection), modules and typed interfaces `RPCParamsText`.
public protocol RPCMethodInput: Sendable {
    /// A result's JSON text as this side sends it on.
    associatedtype Output: Sendable

    /// Calls `body` with the params' JSON text as sent, empty when the call has none. rpcd checked the text
    /// as JSON with the frame.
    func withParamsText<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result

    /// `json` (a result's JSON text, as `ResultEncoding` writes it) as this side sends it on.
    static func output(_ json: [UInt8]) -> Output
}

extension RPCMethodInput {
    /// The params as a tree: `.null` when the call has none. Text that is not JSON is -32602.
    public func paramsValue() throws -> JSONValue {
        try withParamsText { text in
            guard !JSONScanner.isBlank(text) else { return .null }
            do {
                return try JSONValue(parsing: text)
            } catch {
                throw RPCError.invalidParams("params are not valid JSON: \(error)")
            }
        }
    }

    /// -32602 unless the params are absent, `[]` or `{}` (with any whitespace), which are recognised without
    /// building a value: they are what clients send to methods without parameters, `rpcd.ping` among them.
    @inlinable
    public func requireNoParams() throws {
        try withParamsText { try ParamsBinder.requireNone($0) }
    }

    /// The params bound to `binder`'s parameters, checked, and decoded into `Params` (whose coding keys are
    /// the parameter names); -32602 naming the parameter when one does not fit.
    public func decode<Params: Decodable>(_ type: Params.Type, binding binder: ParamsBinder) throws -> Params {
        let members = try withParamsText { try binder.bind(text: $0).members }
        return try ParamsBinding.decode(type, from: members)
    }
}
