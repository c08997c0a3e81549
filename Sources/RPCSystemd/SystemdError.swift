#if canImport(Glibc)
import Glibc
#endif

/// A libsystemd call failed. libsystemd reports errors as negative errno values; this keeps the errno and
/// names the call, so a message reads "sd_listen_fds_with_names: Bad file descriptor (errno 9)".
public struct SystemdError: Error, CustomStringConvertible, Sendable, Equatable {
    public var operation: String
    /// The positive errno.
    public var errno: Int32

    public init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String {
        "\(operation): \(String(cString: strerror(errno))) (errno \(errno))"
    }

    /// Turns libsystemd's return convention (negative errno on failure) into a thrown error.
    @discardableResult
    static func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(SystemdError) -> Int32 {
        guard result >= 0 else { throw SystemdError(operation(), errno: -result) }
        return result
    }
}
