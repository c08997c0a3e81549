import Synchronization

/// Asks every participant (each event loop, the worker pool) to run a no-op, and tells which of them has.
///
/// A participant that is stalled (a loop blocked in a system call, a pool whose threads are all stuck) never
/// runs its probe, so a round stays incomplete for as long as the stall lasts. Launching a round only
/// enqueues work; nothing here waits. The probe knows nothing about what a participant is: the daemon hands
/// it one closure per participant that schedules a block where that participant runs its work, which keeps
/// this target free of event-loop types.
package struct LivenessProbe: Sendable {
    /// Something that must make progress for the daemon to be healthy.
    package struct Participant: Sendable {
        /// How the participant is named when it does not answer ("event loop 2", "thread pool").
        package var name: String
        /// Schedules `answer` to run where the participant runs its work. It must not run `answer` inline.
        package var schedule: @Sendable (_ answer: @escaping @Sendable () -> Void) -> Void

        package init(name: String, schedule: @escaping @Sendable (_ answer: @escaping @Sendable () -> Void) -> Void) {
            self.name = name
            self.schedule = schedule
        }
    }

    private let participants: [Participant]

    package init(participants: [Participant]) {
        self.participants = participants
    }

    /// Enqueues one probe on every participant.
    package func launch() -> Round {
        let round = Round(participants: participants.count)
        for (index, participant) in participants.enumerated() {
            participant.schedule { round.answer(index) }
        }
        return round
    }

    /// The participants of `round` that have not answered, by name.
    package func describeMissing(_ round: Round) -> [String] {
        round.missing.map { participants[$0].name }
    }

    /// One probe per participant. Thread-safe.
    package final class Round: Sendable {
        private let answered: Mutex<[Bool]>

        init(participants: Int) {
            answered = Mutex(Array(repeating: false, count: participants))
        }

        func answer(_ participant: Int) {
            answered.withLock { $0[participant] = true }
        }

        /// Every participant has answered.
        package var isComplete: Bool { answered.withLock { !$0.contains(false) } }

        var missing: [Int] { answered.withLock { answers in answers.indices.filter { !answers[$0] } } }
    }
}
