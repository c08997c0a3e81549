import RPCSystemd

/// Keeps systemd's start-up timeout from expiring while slow work (module `init`s) goes on: every
/// `period`, until the work is done, it sends `EXTEND_TIMEOUT_USEC=` for `2 × period` more. Work done within
/// the first period sends nothing.
struct StartupTimeout {
    let notifier: any ServiceNotifier
    var period: Duration = .seconds(5)

    /// Runs `work` on a thread of its own (it blocks: file I/O, dlopen, module init) while extending.
    func extending<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        let extender = Task { [notifier, period] in
            let extra = UInt64(period.components.seconds) * 2_000_000
            while true {
                try await Task.sleep(for: period)
                notifier.send(.extendTimeout(microseconds: extra), .status("Loading handlers (slow module init)"))
            }
        }
        defer { extender.cancel() }
        return try await Task.detached { try work() }.value
    }
}
