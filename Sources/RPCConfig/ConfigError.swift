/// A configuration problem, located in a file and (when it concerns one line) a line.
///
/// `description` is the text rpcd prints when it refuses to start or when `rpcd --check-config`
/// fails, in the `FILE:LINE: message` form compilers and editors understand:
///
///     /etc/rpcd/rpcd.conf:12: unknown key 'Foo' in section [Server]
///     /etc/rpcd/rpcd.conf: configuration file not found
///
/// Messages name the problem and, when there is an obvious one, the fix.
package struct ConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The path of the file the problem is in, as it was given to the loader.
    package var file: String
    /// The 1-based line the problem is on; nil for problems with the file as a whole.
    package var line: Int?
    /// What is wrong, without the location.
    package var message: String

    package init(file: String, line: Int?, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    package var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}
