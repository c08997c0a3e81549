import Foundation
import RPCSystemd
import Synchronization
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A notifier that keeps every message, for tests of what rpcd tells systemd.
final class RecordingNotifier: ServiceNotifier {
    private let messages = Mutex<[[NotifyField]]>([])

    func send(_ fields: [NotifyField]) -> NotifyResult {
        messages.withLock { $0.append(fields) }
        return .sent
    }

    var sent: [[NotifyField]] { messages.withLock { $0 } }
    var pings: Int { sent.filter { $0 == [.watchdog] }.count }
}

/// Runs `body` with environment variables set, restoring the previous values after.
func withEnvironment<T>(_ values: [String: String?], _ body: () throws -> T) rethrows -> T {
    var previous: [String: String?] = [:]
    for (name, value) in values {
        previous[name] = getenv(name).map { String(cString: $0) }
        if let value { setenv(name, value, 1) } else { unsetenv(name) }
    }
    defer {
        for (name, value) in previous {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }
    return try body()
}
