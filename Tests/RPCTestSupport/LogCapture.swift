package import Logging
import Synchronization

/// One log entry as a test sees it: level, message and metadata as text.
package struct CapturedEntry: Equatable, Sendable {
    package var level: Logger.Level
    package var message: String
    package var metadata: [String: String]
}

/// Collects log entries from every handler it makes. Thread-safe.
package final class LogCapture: Sendable {
    private let stored = Mutex<[CapturedEntry]>([])

    package init() {}

    package var entries: [CapturedEntry] { stored.withLock { $0 } }

    package func handler() -> Handler { Handler(capture: self) }

    fileprivate func append(_ entry: CapturedEntry) { stored.withLock { $0.append(entry) } }

    package struct Handler: LogHandler {
        let capture: LogCapture
        package var metadata: Logger.Metadata = [:]
        package var metadataProvider: Logger.MetadataProvider?
        package var logLevel: Logger.Level = .trace

        package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        package func log(event: LogEvent) {
            var all = metadata
            all.merge(event.metadata ?? [:]) { $1 }
            capture.append(
                CapturedEntry(level: event.level, message: "\(event.message)", metadata: all.mapValues { "\($0)" }))
        }
    }
}
