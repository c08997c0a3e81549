/// Values a peer controls (a request id can be as long as a frame) are cut before they are logged, so that
/// no client can make one log entry megabytes long.
package enum LogValue {
    /// The longest client-supplied value logged, in bytes of UTF-8.
    package static let maxBytes = 128

    /// `text` itself, or its first `maxBytes` bytes (at a character boundary) and how long it was.
    package static func truncated(_ text: String, maxBytes: Int = maxBytes) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var kept = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            guard used + size <= maxBytes else { break }
            kept.append(character)
            used += size
        }
        return kept + "… (\(text.utf8.count) bytes)"
    }
}
