import CRPCDHostSupport
import NIOPosix
import RPCModuleHost
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Tells when rpcd's child processes end, from their pidfds, and runs what must follow a host's life on a
/// timer (a grace period before a kill, removing a cgroup once it is empty): one thread for all of them, blocked
/// in `epoll_wait`, so an end is seen the moment the kernel has it, whatever the process's own children still
/// hold (a forked child holding the link, say), and the timers keep running while rpcd's event loops shut down.
/// Before a process is reaped, while its pid is still its own, the rest of its process group (which it leads)
/// is killed: what it started ends with it.
final class ProcessWatcher: Sendable {
    static let shared = ProcessWatcher()

    private struct Watch {
        var pid: pid_t
        var ended: @Sendable (ProcessTermination) -> Void
    }

    private struct Timer {
        var deadline: ContinuousClock.Instant
        var work: @Sendable () -> Void
    }

    private struct State {
        var watches: [Int32: Watch] = [:]
        var timers: [Timer] = []
    }

    private let epoll: Int32
    private let wake: Int32
    private let state = Mutex(State())
    private let thread: NIOThreadPool

    private init() {
        var wake: Int32 = -1
        epoll = rpcd_pidfd_watcher(&wake)
        precondition(epoll >= 0, "epoll_create1: \(String(cString: strerror(-epoll)))")
        self.wake = wake
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        thread.submit { [self] _ in run() }
    }

    /// Calls `ended` (on the watcher's thread) once the process behind `pidfd`, a child of rpcd's, has ended
    /// and been reaped. `pidfd` stays the caller's to close, after `ended`.
    func watch(pidfd: Int32, pid: pid_t, ended: @escaping @Sendable (ProcessTermination) -> Void) {
        state.withLock { $0.watches[pidfd] = Watch(pid: pid, ended: ended) }
        let result = rpcd_pidfd_watch(epoll, pidfd)
        precondition(result == 0, "epoll_ctl: \(String(cString: strerror(-result)))")
    }

    /// Runs `work` on the watcher's thread once `delay` has passed.
    func after(_ delay: Duration, _ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.timers.append(Timer(deadline: .now + delay, work: work)) }
        rpcd_pidfd_wake(wake)
    }

    private func run() {
        var ready = [Int32](repeating: -1, count: 16)
        while true {
            let count = rpcd_pidfd_wait(epoll, wake, &ready, Int32(ready.count), timeout())
            for pidfd in ready.prefix(Int(max(0, count))) where pidfd != wake { reap(pidfd) }
            runDueTimers()
        }
    }

    /// Milliseconds until the next timer is due (-1: none).
    private func timeout() -> Int32 {
        guard let next = state.withLock({ $0.timers.map(\.deadline).min() }) else { return -1 }
        let left = ContinuousClock.now.duration(to: next)
        guard left > .zero else { return 0 }
        let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1
        return Int32(min(milliseconds, Int64(Int32.max)))
    }

    private func runDueTimers() {
        let now = ContinuousClock.now
        let due = state.withLock { state -> [Timer] in
            let due = state.timers.filter { $0.deadline <= now }
            state.timers.removeAll { $0.deadline <= now }
            return due
        }
        for timer in due { timer.work() }
    }

    private func reap(_ pidfd: Int32) {
        guard let watch = state.withLock({ $0.watches[pidfd] }) else { return }
        _ = kill(-watch.pid, SIGKILL)
        var signal: Int32 = 0
        var code: Int32 = 0
        let reaped = rpcd_pidfd_reap(pidfd, &signal, &code)
        // 0: not ended after all (a pidfd is readable only once it has). An error (ECHILD: reaped elsewhere)
        // still ends the watch, or the descriptor would stay readable for ever.
        guard reaped != 0 else { return }
        _ = rpcd_pidfd_unwatch(epoll, pidfd)
        state.withLock { _ = $0.watches.removeValue(forKey: pidfd) }
        watch.ended(reaped < 0 ? .exited(code: -1) : signal != 0 ? .signalled(signal) : .exited(code: code))
    }
}
