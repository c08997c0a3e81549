package import NIOPosix
import Synchronization

/// The threads that run module calls which may block (`RPCD_METHOD_MAY_BLOCK`), and the watchdog's view of
/// them.
///
/// Health is progress, not queue length: a pool with a long queue whose jobs keep finishing is healthy, and
/// only one with work waiting and no job finishing — every thread stuck in a module — is not. So
/// `whenProgressing` answers when the next job finishes, or at once (through a job of its own) when the pool
/// is idle, never after the whole queue (a flood of blocking calls would otherwise starve the probe and get
/// the daemon killed by its own watchdog).
///
/// The threads start with the first job, not before: most module host processes run no method that may block,
/// and each idle thread costs a stack and a malloc arena (docs/MODULES.md, "Module host processes").
/// Thread-safe.
package final class WorkerPool: Sendable {
    private let pool: NIOThreadPool
    private let state = Mutex(State())
    private let lifecycle = Mutex(Lifecycle.notStarted)

    private struct State {
        /// Jobs submitted and not yet finished (queued or running).
        var unfinished = 0
        /// Answers to give when the next job finishes.
        var waiting: [@Sendable () -> Void] = []
    }

    private enum Lifecycle {
        case notStarted
        case running
        /// Jobs submitted from now on are cancelled (`NIOThreadPool` does that in both of its states).
        case shutDown
    }

    package init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: threads)
    }

    /// Whether the threads have started (the first job came before the shutdown).
    package var isStarted: Bool {
        lifecycle.withLock { $0 == .running }
    }

    package func shutdownGracefully() async throws {
        stopStarting()
        try await pool.shutdownGracefully()
    }

    package func syncShutdownGracefully() throws {
        stopStarting()
        try pool.syncShutdownGracefully()
    }

    /// Runs `work` on a pool thread, with `.active`, or with `.cancelled` if the pool shuts down first.
    package func submit(_ work: @escaping @Sendable (NIOThreadPool.WorkItemState) -> Void) {
        startIfNeeded()
        state.withLock { $0.unfinished += 1 }
        pool.submit { workState in
            work(workState)
            self.finished()
        }
    }

    /// Calls `answer` (on a pool thread) once a job finishes, or at once if no job is waiting or running.
    /// Never inline. If the pool never makes progress again, never.
    package func whenProgressing(_ answer: @escaping @Sendable () -> Void) {
        let idle = state.withLock { state -> Bool in
            guard state.unfinished > 0 else { return true }
            state.waiting.append(answer)
            return false
        }
        if idle { submit { _ in answer() } }
    }

    /// Starts the threads (once, and never after the shutdown began: `NIOThreadPool` traps on that). The lock is
    /// held while they start, so a shutdown waits for them and then stops them.
    private func startIfNeeded() {
        lifecycle.withLock { lifecycle in
            guard lifecycle == .notStarted else { return }
            pool.start()
            lifecycle = .running
        }
    }

    private func stopStarting() {
        lifecycle.withLock { $0 = .shutDown }
    }

    private func finished() {
        let answers = state.withLock { state -> [@Sendable () -> Void] in
            state.unfinished -= 1
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for answer in answers { answer() }
    }
}
