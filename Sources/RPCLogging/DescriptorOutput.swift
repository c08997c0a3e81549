#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Unbuffered text output to a file descriptor: log lines and diagnostics must not wait in a stdio buffer
/// behind anything, nor be lost in one when the process exits.
package enum DescriptorOutput {
    /// Writes all of `text` to `descriptor`, retrying after signals; gives up silently when the descriptor
    /// fails, as there is nowhere left to report that.
    package static func write(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// `write(text, to: STDERR_FILENO)`.
    package static func standardError(_ text: String) {
        write(text, to: STDERR_FILENO)
    }
}
