import RPCJSON

/// The one error type of rpcd's protocol: a JSON-RPC 2.0 error object (code, message, optional data).
///
/// Everything that fails a call ends up as an `RPCError`; it is written to the wire in exactly one place
/// (`RPCReplyWriter`). Errors of other types are either `RPCErrorConvertible` or become `internalError`,
/// so no internal detail (paths, Swift type names) leaks to clients. The codes are listed in docs/PROTOCOL.md.
public struct RPCError: Error, Hashable, Sendable {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }
}

/// An error type that knows which `RPCError` a client should see.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

extension RPCError {
    /// Codes defined by the JSON-RPC 2.0 specification.
    public enum Code {
        public static let parseError = -32700
        public static let invalidRequest = -32600
        public static let methodNotFound = -32601
        public static let invalidParams = -32602
        public static let internalError = -32603

        // Server-defined codes (-32000 ... -32099), documented in docs/PROTOCOL.md.
        public static let frameTooLarge = -32000
        public static let batchTooLarge = -32001
        public static let nestingTooDeep = -32002
        public static let timeout = -32003
        public static let serviceBusy = -32004
        public static let serviceUnavailable = -32005
        public static let shuttingDown = -32006
    }

    public static func parseError(_ detail: String) -> RPCError {
        RPCError(code: Code.parseError, message: "Parse error", data: ["detail": .string(detail)])
    }

    public static func invalidRequest(_ detail: String) -> RPCError {
        RPCError(code: Code.invalidRequest, message: "Invalid Request", data: ["detail": .string(detail)])
    }

    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: Code.methodNotFound, message: "Method not found", data: ["method": .string(method)])
    }

    public static func invalidParams(_ detail: String) -> RPCError {
        RPCError(code: Code.invalidParams, message: "Invalid params", data: ["detail": .string(detail)])
    }

    public static let internalError = RPCError(code: Code.internalError, message: "Internal error")

    public static func frameTooLarge(announced: Int, limit: Int) -> RPCError {
        RPCError(
            code: Code.frameTooLarge, message: "Frame too large",
            data: ["length": .number(announced), "limit": .number(limit)])
    }

    public static func batchTooLarge(limit: Int) -> RPCError {
        RPCError(code: Code.batchTooLarge, message: "Batch too large", data: ["limit": .number(limit)])
    }

    public static func nestingTooDeep(limit: Int) -> RPCError {
        RPCError(code: Code.nestingTooDeep, message: "Nesting too deep", data: ["limit": .number(limit)])
    }

    public static func timeout(after milliseconds: Int) -> RPCError {
        RPCError(code: Code.timeout, message: "Call timed out", data: ["timeout_ms": .number(milliseconds)])
    }

    public static func serviceBusy(_ service: String) -> RPCError {
        RPCError(code: Code.serviceBusy, message: "Service busy", data: ["service": .string(service)])
    }

    public static func serviceUnavailable(_ service: String) -> RPCError {
        RPCError(code: Code.serviceUnavailable, message: "Service unavailable", data: ["service": .string(service)])
    }

    public static let shuttingDown = RPCError(code: Code.shuttingDown, message: "Server shutting down")

    /// The error a client sees for any `Error`: itself if it is an `RPCError`, its own mapping if it is
    /// `RPCErrorConvertible`, otherwise `internalError`.
    public init(from error: any Error) {
        switch error {
        case let error as RPCError: self = error
        case let error as RPCErrorConvertible: self = error.rpcError
        default: self = .internalError
        }
    }
}

extension RPCError: CustomStringConvertible {
    public var description: String {
        var text = "\(message) (\(code))"
        if let data { text += ": \(data.jsonText)" }
        return text
    }
}
