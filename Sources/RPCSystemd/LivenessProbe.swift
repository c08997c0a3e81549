import NIOCore
import NIOPosix
import Synchronization

/// Asks every event loop of a group, and a thread pool, to run a no-op, and tells which of them has.
///
/// A loop that is blocked (a handler stuck in a system call, an endless loop) or a pool whose threads are
/// all stuck never runs its probe, so a round stays incomplete for as long as the stall lasts. Launching a
/// round only enqueues work; nothing here waits.
public struct LivenessProbe: Sendable {
    private let loops: [any EventLoop]
    private let pool: NIOThreadPool?

    public init(group: any EventLoopGroup, pool: NIOThreadPool?) {
        self.loops = Array(group.makeIterator())
        self.pool = pool
    }

    /// Enqueues one probe on every loop and the pool.
    public func launch() -> Round {
        let round = Round(participants: loops.count + (pool == nil ? 0 : 1))
        for (index, loop) in loops.enumerated() {
            loop.execute { round.answer(index) }
        }
        if let pool, let first = loops.first {
            // The future only reports the pool being shut down, which leaves the round incomplete: right,
            // as nothing can run there any more.
            _ = pool.runIfActive(eventLoop: first) { round.answer(loops.count) }
        }
        return round
    }

    /// The participants of `round` that have not answered, by name ("event loop 2", "thread pool").
    public func describeMissing(_ round: Round) -> [String] {
        round.missing.map { $0 < loops.count ? "event loop \($0)" : "thread pool" }
    }

    /// One probe per participant. Thread-safe.
    public final class Round: Sendable {
        private let answered: Mutex<[Bool]>

        init(participants: Int) {
            answered = Mutex(Array(repeating: false, count: participants))
        }

        func answer(_ participant: Int) {
            answered.withLock { $0[participant] = true }
        }

        /// Every participant has answered.
        public var isComplete: Bool { answered.withLock { !$0.contains(false) } }

        var missing: [Int] { answered.withLock { answers in answers.indices.filter { !answers[$0] } } }
    }
}
