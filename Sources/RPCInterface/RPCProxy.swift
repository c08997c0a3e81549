/// A client-side implementation of an interface protocol whose every method is a call to a server:
/// `@RPCInterface` writes one for each protocol (`Calculator` gets `CalculatorProxy`).
///
/// Make one with ``connect(_:service:fingerprintCheck:)`` (or `RPCClient.proxy(_:service:fingerprintCheck:)`),
/// which first compares the interface fingerprint the proxy was compiled with against the server's and refuses
/// a different one, before any call can do harm.
///
/// A proxy method throws the method's documented errors as their own types (`RPCDocumentedError`), any other
/// error object from the server as `RPCError`, a result that does not decode as `RPCProxyError`, and what the
/// transport throws for everything else.
public protocol RPCProxy: Sendable {
    /// The declaration the proxy was compiled from.
    static var rpcInterface: RPCInterfaceDeclaration { get }
    init(connection: RPCProxyConnection)
}

/// Whether a proxy compares interface fingerprints before its first call.
public enum RPCFingerprintCheck: Sendable, Hashable {
    /// Refuse a server whose fingerprint for the service differs from the declaration's (the default).
    case required
    /// Call without comparing: for deliberate use across interface versions (a method that exists on both
    /// sides still works; one that changed fails at its call).
    case skipped
}

extension RPCProxy {
    /// A proxy calling `service` (default: the declared name) through `transport`. With `.required`, first
    /// reads the server's fingerprint for the service from `rpc.discover` and throws
    /// `RPCProxyError.fingerprintMismatch` (or `.serviceNotOffered`) when it is not the declaration's.
    public static func connect(
        _ transport: any RPCProxyTransport, service: String? = nil, fingerprintCheck: RPCFingerprintCheck = .required
    ) async throws -> Self {
        let service = service ?? rpcInterface.service
        if fingerprintCheck == .required {
            let expected = rpcInterface.fingerprint(service: service)
            let found = try await serverFingerprint(of: service, through: transport)
            guard let found else { throw RPCProxyError.serviceNotOffered(service: service) }
            guard found.lowercased() == expected else {
                throw RPCProxyError.fingerprintMismatch(service: service, expected: expected, found: found)
            }
        }
        let readOnly = rpcInterface.methods.filter { $0.flags.contains(.readOnly) }.map(\.name)
        return Self(connection: RPCProxyConnection(transport, service: service, readOnlyMethods: Set(readOnly)))
    }

    /// The server's fingerprint for `service`, from `rpc.discover`'s `x-rpcd-services`; nil when the server
    /// does not list the service (it has none by that name, or none of its methods is open to this client).
    static func serverFingerprint(of service: String, through transport: any RPCProxyTransport) async throws -> String? {
        let document = try await transport.callForProxy("rpc.discover", params: .null)
        let services = document["x-rpcd-services"]?.arrayValue ?? []
        return services.first { $0["name"]?.stringValue == service }?["fingerprint"]?.stringValue
    }
}

/// Why a proxy refused, or could not read a reply. The description names the service or method and, for a
/// mismatch, both fingerprints.
public enum RPCProxyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server's interface for `service` is not the one this proxy was compiled from.
    case fingerprintMismatch(service: String, expected: String, found: String)
    /// The server's `rpc.discover` lists no service of that name that this client may call.
    case serviceNotOffered(service: String)
    /// A result that is not of the declared type.
    case unexpectedResult(method: String, detail: String)

    public var description: String {
        switch self {
        case .fingerprintMismatch(let service, let expected, let found):
            "service '\(service)': this client was compiled against interface fingerprint \(expected), the server's is "
                + "\(found); not calling it (update the client to the server's declaration, or connect with "
                + "fingerprintCheck: .skipped to call across versions on purpose)"
        case .serviceNotOffered(let service):
            "the server offers no service '\(service)' this client may call (rpc.discover does not list it)"
        case .unexpectedResult(let method, let detail):
            "\(method): the result is not what the interface declares: \(detail)"
        }
    }
}

/// Where a proxy sends its calls: the transport and the service name. Used by the code `@RPCInterface`
/// generates; thread-safe (immutable).
public struct RPCProxyConnection: Sendable {
    public let transport: any RPCProxyTransport
    /// The service called (`calc` in `calc.add`).
    public let service: String
    /// The methods the interface declares `readOnly` (without the service): the transport may send their calls
    /// again when it cannot tell whether they ran.
    public let readOnlyMethods: Set<String>

    public init(_ transport: any RPCProxyTransport, service: String, readOnlyMethods: Set<String> = []) {
        self.transport = transport
        self.service = service
        self.readOnlyMethods = readOnlyMethods
    }

    /// Calls `method` with its arguments by name (an absent `Optional` is left out) and decodes the result.
    public func call<Result: Decodable>(
        _ method: String, _ arguments: KeyValuePairs<String, JSONValue?>, errors: [any RPCDocumentedError.Type] = [],
        returning type: Result.Type = Result.self
    ) async throws -> Result {
        var params: [String: JSONValue] = [:]
        for (name, value) in arguments { params[name] = value }
        return try await send(method, .object(params), errors: errors)
    }

    /// Calls a method that takes its params as a list, by position.
    public func call<Result: Decodable>(
        _ method: String, list: [JSONValue], errors: [any RPCDocumentedError.Type] = [],
        returning type: Result.Type = Result.self
    ) async throws -> Result {
        try await send(method, .array(list), errors: errors)
    }

    private func send<Result: Decodable>(
        _ method: String, _ params: JSONValue, errors: [any RPCDocumentedError.Type]
    ) async throws -> Result {
        let fullName = service + "." + method
        let result: JSONValue
        do {
            result = try await transport.callForProxy(fullName, params: params, readOnly: readOnlyMethods.contains(method))
        } catch let error as RPCError {
            for documented in errors {
                if let typed = Self.decode(error, as: documented) { throw typed }
            }
            throw error
        }
        do {
            return try RPCValueEncoding.decode(Result.self, from: result)
        } catch {
            throw RPCProxyError.unexpectedResult(method: fullName, detail: String(describing: error))
        }
    }

    private static func decode<Documented: RPCDocumentedError>(_ error: RPCError, as type: Documented.Type) -> (any Error)? {
        Documented.decoding(error)
    }
}
