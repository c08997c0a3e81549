import CRPCDHostSupport
import Synchronization

/// Tells a module method without `RPCD_METHOD_MAY_BLOCK` that blocked its event loop from one that was only
/// slow by the clock, for the warning *Method blocked its event loop and lacks RPCD_METHOD_MAY_BLOCK*.
///
/// By the clock alone, a call on a loaded machine is "held" for as long as the thread waited for a CPU, and a
/// 20 µs read under an uncontended lock shows as 23 ms. So a call is judged by what its own thread did: it
/// blocked if it used more than `limit` of CPU, or if it gave up the CPU of its own accord (it slept, waited
/// for I/O or a lock: a voluntary context switch) and the clock passed `limit`. Being preempted is neither.
///
/// Reading a thread's usage costs two system calls, too much for every call of a method that answers in a
/// microsecond. So every call is timed by the clock (no system call), and a method whose call passes `limit` by
/// the clock becomes a suspect: its next `watchedCalls` calls are measured closely, and the first that blocked
/// is reported (once per method); a suspect that does not block within them is cleared. A method that blocks
/// only once, on its first call, may thus go unreported. Thread-safe: calls run on any loop.
final class LoopBlockWatch: Sendable {
    static let limit = Duration.milliseconds(10)
    /// Calls of a suspect method measured closely before it is cleared.
    static let watchedCalls = 32

    /// Method (by index) → calls still to measure closely.
    private let suspects = Mutex<[Int: Int]>([:])
    /// Whether `suspects` has any: read without the lock on every call.
    private let anySuspect = Atomic<Bool>(false)
    /// Methods reported already.
    private let reported = Mutex<Set<Int>>([])

    /// Runs `call`, one call of method `index` on its event loop; returns how long it held the loop when it
    /// blocked it and this is the first time the method is reported, else nil.
    func run(method index: Int, _ call: () -> Void) -> Duration? {
        guard anySuspect.load(ordering: .relaxed), suspects.withLock({ $0[index] != nil }), let before = Usage.now() else {
            let start = ContinuousClock.now
            call()
            let held = ContinuousClock.now - start
            if held > Self.limit { suspect(index) }
            return nil
        }
        let start = ContinuousClock.now
        call()
        let held = ContinuousClock.now - start
        guard let after = Usage.now() else { return nil }
        let cpu = Duration.nanoseconds(after.cpuNanoseconds - before.cpuNanoseconds)
        let waited = after.voluntarySwitches > before.voluntarySwitches
        let blocked = cpu > Self.limit || (waited && held > Self.limit)
        let report = blocked && reported.withLock { $0.insert(index).inserted }
        suspects.withLock { suspects in
            if blocked {
                suspects[index] = nil
            } else if let left = suspects[index] {
                suspects[index] = left > 1 ? left - 1 : nil
            }
            anySuspect.store(!suspects.isEmpty, ordering: .relaxed)
        }
        return report ? held : nil
    }

    private func suspect(_ index: Int) {
        guard !reported.withLock({ $0.contains(index) }) else { return }
        suspects.withLock { suspects in
            suspects[index] = Self.watchedCalls
            anySuspect.store(true, ordering: .relaxed)
        }
    }

    /// The calling thread's usage (`rpcd_thread_usage`).
    private struct Usage {
        var cpuNanoseconds: Int64
        var voluntarySwitches: Int64

        static func now() -> Usage? {
            var usage = Usage(cpuNanoseconds: 0, voluntarySwitches: 0)
            guard rpcd_thread_usage(&usage.cpuNanoseconds, &usage.voluntarySwitches) == 0 else { return nil }
            return usage
        }
    }
}
