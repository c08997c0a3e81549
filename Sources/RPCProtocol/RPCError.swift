public import RPCJSON

/// The one error type of rpcd's protocol: a JSON-RPC 2.0 error object (code, message, optional data).
///
/// The daemon, its built-in services, Swift modules (which throw it, with rpcd's codes or their own
/// documented ones) and the client library (which surfaces it typed, as `RPCClientError.remote`) all use this
/// type. Everything that fails a call ends up as an `RPCError`: errors of other types are either
/// `RPCErrorConvertible` or become `internalError` (mapped in one place, `init(from:)`), so no internal detail
/// (paths, Swift type names) leaks to clients. The server writes it to the wire in exactly one place
/// (`RPCReplyWriter`). Every code rpcd sends is in `Code` and in docs/PROTOCOL.md, which a test checks
/// against `Code.messages`.
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
        public static let accessDenied = -32007
        public static let replyTooLarge = -32008
        public static let serverBusy = -32009
        public static let frameTimeout = -32010
        public static let callCancelled = -32011
        public static let tooManySubscriptions = -32012
        public static let reloadFailed = -32013
        public static let commandFailed = -32014
        public static let commandOutputTooLarge = -32015

        /// The message rpcd sends with each of its codes; docs/PROTOCOL.md lists exactly these.
        public static let messages: [Int: String] = [
            parseError: "Parse error", invalidRequest: "Invalid Request", methodNotFound: "Method not found",
            invalidParams: "Invalid params", internalError: "Internal error", frameTooLarge: "Frame too large",
            batchTooLarge: "Batch too large", nestingTooDeep: "Nesting too deep", timeout: "Call timed out",
            serviceBusy: "Service busy", serviceUnavailable: "Service unavailable", shuttingDown: "Server shutting down",
            accessDenied: "Access denied", replyTooLarge: "Reply too large", serverBusy: "Server busy",
            frameTimeout: "Frame timeout", callCancelled: "Call cancelled", tooManySubscriptions: "Too many subscriptions",
            reloadFailed: "Reload failed", commandFailed: "Command failed", commandOutputTooLarge: "Command output too large",
        ]

        /// The range JSON-RPC 2.0 reserves for itself and for servers; a module's own codes lie outside it.
        public static let reserved = -32768 ... -32000
    }

    /// An error with one of rpcd's codes and its standard message.
    private init(_ code: Int, data: JSONValue? = nil) {
        self.init(code: code, message: Code.messages[code] ?? "Server error", data: data)
    }

    public static func parseError(_ detail: String) -> RPCError {
        RPCError(Code.parseError, data: ["detail": .string(detail)])
    }

    public static func invalidRequest(_ detail: String) -> RPCError {
        RPCError(Code.invalidRequest, data: ["detail": .string(detail)])
    }

    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(Code.methodNotFound, data: ["method": .string(method)])
    }

    public static func invalidParams(_ detail: String) -> RPCError {
        RPCError(Code.invalidParams, data: ["detail": .string(detail)])
    }

    public static let internalError = RPCError(Code.internalError)

    public static func frameTooLarge(announced: Int, limit: Int) -> RPCError {
        RPCError(
            Code.frameTooLarge,
            data: ["length": .number(announced), "limit": .number(limit)])
    }

    public static func batchTooLarge(limit: Int) -> RPCError {
        RPCError(Code.batchTooLarge, data: ["limit": .number(limit)])
    }

    public static func nestingTooDeep(limit: Int) -> RPCError {
        RPCError(Code.nestingTooDeep, data: ["limit": .number(limit)])
    }

    public static func timeout(after milliseconds: Int) -> RPCError {
        RPCError(Code.timeout, data: ["timeout_ms": .number(milliseconds)])
    }

    public static func serviceBusy(_ service: String) -> RPCError {
        RPCError(Code.serviceBusy, data: ["service": .string(service)])
    }

    public static func serviceUnavailable(_ service: String) -> RPCError {
        RPCError(Code.serviceUnavailable, data: ["service": .string(service)])
    }

    /// The handler's module host process (`Isolation=process`) cannot answer: `reason` says why (`crashed`,
    /// `hung`, `restarting`, `start limit hit`), `termination` how a host that died ended (`SIGSEGV`, `exit 1`).
    public static func serviceUnavailable(
        _ service: String, handler: String, reason: String, termination: String? = nil
    ) -> RPCError {
        var data: [String: JSONValue] = ["service": .string(service), "handler": .string(handler), "reason": .string(reason)]
        if let termination { data["termination"] = .string(termination) }
        return RPCError(Code.serviceUnavailable, data: .object(data))
    }

    /// The service's handler was refused (at start-up or a reload that added it), answered to an administrator:
    /// `detail` is the refusal, `RPCHandlerRefusal.description`. Other callers get `serviceUnavailable(_:)`.
    public static func serviceUnavailable(_ service: String, refusedHandler handler: String, detail: String) -> RPCError {
        RPCError(
            Code.serviceUnavailable,
            data: ["service": .string(service), "handler": .string(handler), "reason": "refused", "detail": .string(detail)])
    }

    public static let shuttingDown = RPCError(Code.shuttingDown)

    /// `rpcd.reload` could not apply the configuration (`detail` says why); the previous one keeps serving.
    public static func reloadFailed(_ detail: String) -> RPCError {
        RPCError(Code.reloadFailed, data: ["detail": .string(detail)])
    }

    /// A command method's command ended unsuccessfully: `exitStatus` (or the `signal` that killed it) and the tail
    /// of its standard error (docs/MODULES.md, "Command methods").
    public static func commandFailed(exitStatus: Int?, signal: String?, standardError: String) -> RPCError {
        var data: [String: JSONValue] = ["stderr": .string(standardError)]
        if let exitStatus { data["exit_status"] = .number(exitStatus) }
        if let signal { data["signal"] = .string(signal) }
        return RPCError(Code.commandFailed, data: .object(data))
    }

    /// A command method's command wrote more than its `MaxOutputSize=` (`limit` bytes): it was killed.
    public static func commandOutputTooLarge(limit: Int) -> RPCError {
        RPCError(Code.commandOutputTooLarge, data: ["limit": .number(limit)])
    }

    /// The caller gave up on the call (`rpc.cancel`, or its deadline passed).
    public static let callCancelled = RPCError(Code.callCancelled)

    /// A batch's replies together would pass `limit` bytes (the frame size limit); none is sent.
    public static func replyTooLarge(limit: Int) -> RPCError {
        RPCError(Code.replyTooLarge, data: ["limit": .number(limit)])
    }

    /// Receiving one more frame would pass `MaxBufferedBytes=` (`limit` bytes): the frame is refused and the
    /// connection closed; a client may retry later.
    public static func serverBusy(limit: Int) -> RPCError {
        RPCError(Code.serverBusy, data: ["limit": .number(limit)])
    }

    /// A frame did not arrive whole within `FrameTimeout=` of its length; the connection is closed.
    public static func frameTimeout(seconds: Int) -> RPCError {
        RPCError(Code.frameTimeout, data: ["timeout_s": .number(seconds)])
    }

    /// The access rules do not let this peer call `method` (docs/SECURITY.md).
    public static func accessDenied(_ method: String) -> RPCError {
        RPCError(Code.accessDenied, data: ["method": .string(method)])
    }

    /// The connection already holds `limit` subscriptions (`MaxSubscriptionsPerConnection=`).
    public static func tooManySubscriptions(limit: Int) -> RPCError {
        RPCError(Code.tooManySubscriptions, data: ["limit": .number(limit)])
    }

    /// The error a client sees for any `Error`: itself if it is an `RPCError`, its own mapping if it is
    /// `RPCErrorConvertible`, otherwise `internalError`. The one place errors become codes.
    public init(from error: any Error) {
        switch error {
        case let error as RPCError: self = error
        case let error as RPCErrorConvertible: self = error.rpcError
        default: self = .internalError
        }
    }

    /// Whether `error` says nothing a client may see: it becomes `internalError`, and its description belongs
    /// in the administrator's log (with `LogField.error`).
    public static func isUnexpected(_ error: any Error) -> Bool {
        !(error is RPCError) && !(error is RPCErrorConvertible)
    }
}

extension RPCError: CustomStringConvertible {
    public var description: String {
        var text = "\(message) (\(code))"
        if let data { text += ": \(data.jsonText)" }
        return text
    }
}
