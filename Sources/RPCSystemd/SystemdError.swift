#if canImport(Glibc)
import Glibc
#endif

/// A libsystemd call failed. libsystemd reports errors as negative errno values; this keeps the errno and
/// names the call, so a message reads "sd_listen_fds_with_names: Bad file descriptor (errno 9)".
package struct SystemdError: Error, CustomStringConvertible, Sendable, Equatable {
    package var operation: String
    /// The positive errno.
    package var errno: Int32

    package init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    package var description: String {
        "\(operation): \(String(cString: strerror(errno))) (errno \(errno))"
    }

    /// Turns libsystemd's return convention (negative errno on failure) into a thrown error.
    @discardableResult
    static func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(SystemdError) -> Int32 {
        guard result >= 0 else { throw SystemdError(operation(), errno: -result) }
        return result
    }
}
