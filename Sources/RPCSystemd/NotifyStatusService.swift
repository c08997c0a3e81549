import Logging
import ServiceLifecycle

/// Keeps the service manager's status line (`systemctl status rpcd`) current, and says `STOPPING=1` as soon
/// as graceful shutdown begins.
///
/// Every `interval` it asks `status` for the text and sends it when it changed. Put it last in the service
/// group: the group shuts services down in reverse order, so systemd hears of the shutdown before the
/// server stops accepting. Runs on the Swift concurrency pool; `status` must be cheap and must not block.
package struct NotifyStatusService: Service, CustomStringConvertible {
    private let notifier: any ServiceNotifier
    private let interval: Duration
    private let status: @Sendable () -> String
    private let onStopping: @Sendable () -> Void

    package init(
        notifier: any ServiceNotifier, interval: Duration = .seconds(2), status: @escaping @Sendable () -> String,
        onStopping: @escaping @Sendable () -> Void = {}
    ) {
        self.notifier = notifier
        self.interval = interval
        self.status = status
        self.onStopping = onStopping
    }

    /// What swift-service-lifecycle logs for this service.
    package var description: String { "NotifyStatusService" }

    package func run() async throws {
        var sent = ""
        while !Task.isShuttingDownGracefully {
            let text = status()
            if text != sent {
                notifier.send(.status(text))
                sent = text
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                break
            }
        }
        onStopping()
        notifier.send(.stopping, .status("Stopping: finishing calls in flight"))
    }
}
