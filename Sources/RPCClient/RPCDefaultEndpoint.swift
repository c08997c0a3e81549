import RPCProtocol
import RPCWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How clients pick the daemon's address when the user names none (as `rpcctl` does).
public enum RPCDefaultEndpoint {
    /// The environment variable consulted when no address is given.
    public static let environmentVariable = "RPCD_ADDRESS"

    /// An address given on the command line or in the environment that does not parse.
    public struct InvalidAddress: Error, Hashable, Sendable, CustomStringConvertible {
        /// Where the text came from: `--address` or `RPCD_ADDRESS`.
        public var source: String
        public var error: RPCEndpointError

        public var description: String { "\(source): \(error)" }
    }

    /// `address` if given; else `$RPCD_ADDRESS` if set and not empty; else `RPCEndpoint.defaultSocketPath` if a
    /// socket exists there; else `127.0.0.1:RPCEndpoint.defaultPort`.
    public static func resolve(
        address: String?, environment: [String: String],
        socketExists: (String) -> Bool = RPCDefaultEndpoint.isSocket(_:),
        addressSource: String = "--address"
    ) throws(InvalidAddress) -> RPCEndpoint {
        if let address {
            do { return try RPCEndpoint(parsing: address) } catch { throw InvalidAddress(source: addressSource, error: error) }
        }
        if let text = environment[environmentVariable], !text.isEmpty {
            do { return try RPCEndpoint(parsing: text) } catch {
                throw InvalidAddress(source: environmentVariable, error: error)
            }
        }
        if socketExists(RPCEndpoint.defaultSocketPath) { return .unix(path: RPCEndpoint.defaultSocketPath) }
        return .tcp(host: "127.0.0.1", port: RPCEndpoint.defaultPort)
    }

    /// Whether `path` names an existing Unix-domain socket (following symlinks).
    public static func isSocket(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return (info.st_mode & S_IFMT) == S_IFSOCK
    }
}
