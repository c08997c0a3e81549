import Dispatch

/// Keeps systemd's start-up timeout from expiring while slow work (module `init`s) goes on: every
/// `period`, until the work is done, it sends `EXTEND_TIMEOUT_USEC=` for `2 × period` more. Work done within
/// the first period sends nothing.
package struct StartupTimeout: Sendable {
    package let notifier: any ServiceNotifier
    package var period: Duration

    package init(notifier: any ServiceNotifier, period: Duration = .seconds(5)) {
        self.notifier = notifier
        self.period = period
    }

    /// Runs `work` on a Dispatch thread (it blocks: file I/O, dlopen, module init), not on the cooperative
    /// pool, which may have a single thread and must stay free to send the extensions.
    package func extending<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        let extender = Task { [notifier, period] in
            let (seconds, attoseconds) = period.components
            let extra = UInt64(seconds) * 2_000_000 + UInt64(attoseconds / 500_000_000_000)
            while true {
                try await Task.sleep(for: period)
                notifier.send(.extendTimeout(microseconds: extra), .status("Loading handlers (slow module init)"))
            }
        }
        defer { extender.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }
}
