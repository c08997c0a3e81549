package import RPCJSON

/// A handler rpcd did not start (at start-up or on a reload): which one, why, and where an operator fixes it.
/// `rpcd.reload` answers with these (`refused`), `rpcctl reload` prints them and fails, and the log says the
/// same. A value; made where handlers are started (`HandlerSet.prepare`), read anywhere (rpcctl reads it back).
package struct RPCHandlerRefusal: Sendable, Hashable, CustomStringConvertible {
    /// The handler's name (its file's name without `.conf`).
    package var handler: String
    /// The service it would serve (`Service=`, else the handler's name).
    package var service: String
    /// The handler file to fix: the one the reason names, else the one with `Module=`.
    package var file: String
    /// The line in `file`: the one the reason names, else the `[Config]` key the reason names, else `Module=`;
    /// nil when none is known.
    package var line: Int?
    /// Why, as the log says it.
    package var reason: String
    /// Whether the handler's previous instance keeps serving (a reload that could not replace it), or calls
    /// to its service get -32005 (Service unavailable).
    package var previousServes: Bool

    package init(handler: String, service: String, file: String, line: Int?, reason: String, previousServes: Bool) {
        self.handler = handler
        self.service = service
        self.file = file
        self.line = line
        self.reason = reason
        self.previousServes = previousServes
    }

    /// `file:line`, or `file` alone.
    package var location: String { line.map { "\(file):\($0)" } ?? file }

    /// One line for a person: `handler 'notes' (/etc/rpcd/handlers.d/notes.conf:4) refused: REASON; …`.
    package var description: String {
        "handler '\(handler)' (\(location)) refused: \(reason); "
            + (previousServes ? "its previous instance keeps serving" : "calls to \(service) get -32005 (Service unavailable)")
    }

    /// The refusal in `rpcd.reload`'s `refused` list.
    package var json: JSONValue {
        [
            "handler": .string(handler), "service": .string(service), "file": .string(file),
            "line": line.map { .number($0) } ?? .null, "reason": .string(reason),
            "previous_serves": .bool(previousServes),
        ]
    }

    /// Reads `json` back (rpcctl); nil when a member is missing or of the wrong type.
    package init?(json: JSONValue) {
        guard let handler = json["handler"]?.stringValue, let service = json["service"]?.stringValue,
              let file = json["file"]?.stringValue, let reason = json["reason"]?.stringValue,
              let previousServes = json["previous_serves"]?.boolValue else { return nil }
        self.init(
            handler: handler, service: service, file: file, line: json["line"]?.intValue, reason: reason,
            previousServes: previousServes)
    }
}
