package import RPCSystemd
import Synchronization

/// A notifier that keeps every message, for tests of what rpcd tells systemd.
package final class RecordingNotifier: ServiceNotifier {
    private let messages = Mutex<[[NotifyField]]>([])

    package init() {}

    package func send(_ fields: [NotifyField]) -> NotifyResult {
        messages.withLock { $0.append(fields) }
        return .sent
    }

    package var sent: [[NotifyField]] { messages.withLock { $0 } }
    package var pings: Int { sent.filter { $0 == [.watchdog] }.count }
}
