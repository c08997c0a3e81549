package import Logging
import Synchronization

/// The daemon's current log level, shared by every log handler and changed at run time (`rpcd.setLogLevel`,
/// a reload). swift-log copies a handler's level into every `Logger` made from it, so the handlers read this
/// instead of keeping their own. Lock-free; safe from any thread.
package final class LogLevelControl: Sendable {
    private let raw: Atomic<UInt8>

    package init(_ level: Logger.Level = .info) {
        raw = Atomic(Self.code(level))
    }

    package var level: Logger.Level {
        get { Self.levels[Int(raw.load(ordering: .relaxed))] }
        set { raw.store(Self.code(newValue), ordering: .relaxed) }
    }

    private static let levels = Logger.Level.allCases

    private static func code(_ level: Logger.Level) -> UInt8 {
        UInt8(levels.firstIndex(of: level) ?? 2)
    }
}
