import Dispatch
import Synchronization

/// A task executor that runs a task's jobs on the thread calling `drain()`, which returns when the task has
/// ended. Used for `mayBlock` methods: rpcd calls them on a worker thread that is allowed to block, so their
/// body runs there instead of occupying one of the few threads of Swift's cooperative pool.
///
/// Jobs arriving after the task ended (an unstructured task spawned by the body that inherited the
/// preference) go to the global concurrent executor, so nothing is ever stranded.
final class CallerThreadExecutor: TaskExecutor, @unchecked Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var taskEnded = false
        var draining = true
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let accepted = state.withLock { state in
            guard state.draining else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted {
            wakeup.signal()
        } else {
            globalConcurrentExecutor.enqueue(job)
        }
    }

    /// Called by the task as its last action.
    func taskEnded() {
        state.withLock { $0.taskEnded = true }
        wakeup.signal()
    }

    /// Runs jobs on the calling thread until the task has ended.
    func drain() {
        while true {
            wakeup.wait()
            while let job = state.withLock({ $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }) {
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
            let done = state.withLock { state in
                if state.taskEnded && state.jobs.isEmpty { state.draining = false }
                return !state.draining
            }
            if done { return }
        }
    }
}
