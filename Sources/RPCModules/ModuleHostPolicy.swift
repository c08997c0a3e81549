import NIOCore

/// How rpcd supervises module host processes (`Isolation=process`): restart backoff, start limit, liveness.
/// The defaults follow systemd's for services (`RestartSec=100ms`, `StartLimitBurst=5` in
/// `StartLimitIntervalSec=10s`), with the delay doubling for each start in that interval.
struct ModuleHostPolicy: Sendable {
    /// The delay before the first restart after a host died; doubles with each further death within
    /// `startLimitInterval` (crashes in a row), up to `maxRestartDelay`.
    var restartDelay: Duration = .milliseconds(100)
    var maxRestartDelay: Duration = .seconds(5)
    /// More starts than this within `startLimitInterval` and the handler stays down (-32005, `start limit hit`)
    /// until the next reload.
    var startLimitBurst = 5
    var startLimitInterval: Duration = .seconds(10)
    /// A host that is not serving this long after it was spawned (its module's `init` hangs) is killed.
    var startTimeout: Duration = .seconds(10)
    /// rpcd pings each host this often, on the host's event loop, which also runs its non-blocking methods...
    var pingInterval: Duration = .seconds(1)
    /// ...and kills a host that has not answered a ping for this long: it hangs.
    var pingTimeout: Duration = .seconds(5)
    /// A host whose link has closed but whose process lingers (in a module's exit handler) is killed after this.
    var linkClosedGrace: Duration = .seconds(1)

    static let standard = ModuleHostPolicy()

    /// The delay before the start that follows `recentDeaths` deaths within `startLimitInterval`, this one
    /// included: 100 ms, 200 ms, 400 ms...
    func restartDelay(afterDeaths recentDeaths: Int) -> Duration {
        var delay = restartDelay
        for _ in 1..<max(1, recentDeaths) where delay < maxRestartDelay { delay *= 2 }
        return min(delay, maxRestartDelay)
    }
}

extension Duration {
    /// For NIO's scheduling.
    var timeAmount: TimeAmount {
        .nanoseconds(components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000)
    }
}
