/// Start-up cannot go on; the message says why.
struct DaemonStartError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
