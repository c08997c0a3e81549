import NIOCore
import RPCCore

/// The answers that arrived in one read burst of a link (rpcd's end), handed to their connections together.
///
/// A host writes all the answers it has in one buffer, so one read of the link brings many, for many
/// connections. Handed over one by one, each would be a write to its client of its own (a connection flushes
/// a reply that completes outside its read burst at once). Here they are kept until the burst ends, then each
/// connection gets its own as one batch (`RPCConnectionOutput.deliver`), which it runs as a burst of its own,
/// flushing once at its end; the answers for connections on other event loops go there in one task per loop,
/// not one per answer:
///
///     link read: [result 7|result 9|error 12|result 8]      channelReadComplete
///       conn A (this loop):  ───────────────────────────────► deliver [7, 8]: reply 7, reply 8, one flush
///       conn B (this loop):  ───────────────────────────────► deliver [9]: reply 9, one flush
///       conn C (loop 2):     ───────────────────────────────► one task on loop 2: deliver [12], one flush
///
/// The burst ends with the link's `channelReadComplete` (or its closing, or the end of its turn), never on a
/// timer: a lone answer goes out as soon as the read that brought it is handled. Confined to the link's event
/// loop.
final class ModuleLinkAnswers {
    /// This loop's answers of the burst.
    private var here = Batches()
    /// Answers for connections on other loops, by loop.
    private var elsewhere: [(loop: any EventLoop, batches: Batches)] = []

    /// Keeps an answer for its caller's connection, `output` (nil: the call has none), on `eventLoop`, until
    /// `finish`.
    func deliver(
        on eventLoop: any EventLoop, to output: (any RPCConnectionOutput)?, _ complete: @escaping @Sendable () -> Void
    ) {
        let answer = RPCConnectionAnswer(complete: complete)
        if eventLoop.inEventLoop { return here.add(answer, for: output) }
        if let index = elsewhere.firstIndex(where: { $0.loop === eventLoop }) {
            elsewhere[index].batches.add(answer, for: output)
        } else {
            var batches = Batches()
            batches.add(answer, for: output)
            elsewhere.append((eventLoop, batches))
        }
    }

    /// The end of the burst: each connection gets its answers.
    func finish() {
        // Taken out while delivered: the answers run their connections' code, which must not find this burst
        // in the middle of a change (an access that overlaps one in progress traps).
        var due = here
        here = Batches()
        due.deliver()
        due.clear()
        if here.isEmpty { here = due }  // its storage, for the next burst
        for (loop, batches) in elsewhere {
            loop.execute { batches.deliver() }
        }
        elsewhere.removeAll()
    }

    /// Answers by connection, in the order of each connection's first answer; the storage of one burst's is
    /// kept for the next, so that answers on the link's own loop allocate nothing.
    private struct Batches: Sendable {
        private struct Batch: Sendable {
            var output: (any RPCConnectionOutput)?
            var answers: [RPCConnectionAnswer]
        }

        /// The first `used` hold this burst's answers; the rest are empty, kept for their storage.
        private var batches: [Batch] = []
        private var used = 0
        /// Each connection's batch (nil: the answers of calls without one).
        private var index: [ObjectIdentifier?: Int] = [:]

        var isEmpty: Bool { used == 0 }

        mutating func add(_ answer: RPCConnectionAnswer, for output: (any RPCConnectionOutput)?) {
            let key = output.map { ObjectIdentifier($0) }
            if let slot = index[key] { return batches[slot].answers.append(answer) }
            index[key] = used
            if used < batches.count {
                batches[used].output = output
                batches[used].answers.append(answer)
            } else {
                batches.append(Batch(output: output, answers: [answer]))
            }
            used += 1
        }

        /// Hands each connection its batch; answers without one run as they are.
        func deliver() {
            for batch in batches[..<used] {
                if let output = batch.output {
                    output.deliver(batch.answers[...])
                } else {
                    for answer in batch.answers { answer.complete() }
                }
            }
        }

        /// Forgets the answers and their connections, keeping the storage.
        mutating func clear() {
            for slot in 0..<used {
                batches[slot].output = nil
                batches[slot].answers.removeAll(keepingCapacity: true)
            }
            used = 0
            index.removeAll(keepingCapacity: true)
        }
    }
}
