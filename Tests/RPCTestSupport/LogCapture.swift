import Logging
import Synchronization

/// One log entry as a test sees it: level, message and metadata as text.
public struct CapturedEntry: Equatable, Sendable {
    public var level: Logger.Level
    public var message: String
    public var metadata: [String: String]
}

/// Collects log entries from every handler it makes. Thread-safe.
public final class LogCapture: Sendable {
    private let stored = Mutex<[CapturedEntry]>([])

    public init() {}

    public var entries: [CapturedEntry] { stored.withLock { $0 } }

    public func handler() -> Handler { Handler(capture: self) }

    fileprivate func append(_ entry: CapturedEntry) { stored.withLock { $0.append(entry) } }

    public struct Handler: LogHandler {
        let capture: LogCapture
        public var metadata: Logger.Metadata = [:]
        public var metadataProvider: Logger.MetadataProvider?
        public var logLevel: Logger.Level = .trace

        public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        public func log(event: LogEvent) {
            var all = metadata
            all.merge(event.metadata ?? [:]) { $1 }
            capture.append(
                CapturedEntry(level: event.level, message: "\(event.message)", metadata: all.mapValues { "\($0)" }))
        }
    }
}
