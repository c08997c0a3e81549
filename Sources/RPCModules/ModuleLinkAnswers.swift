import NIOCore
import RPCCore

/// The answers that arrived in one read burst of a link (rpcd's end), handed to their callers together.
///
/// A host writes all the answers it has in one buffer, so one read of the link brings many, for many
/// connections. Handed over one by one, each would be a write to its client of its own (a connection flushes
/// a reply that completes outside its read burst at once). Here each caller's connection gathers what the
/// burst writes (`RPCConnectionOutput.gatherWrites`) and flushes once at its end, and the answers for
/// connections on other event loops go there in one task per loop, not one per answer:
///
///     link read: [result 7|result 9|error 12|result 8]      channelReadComplete
///       conn A (this loop):  reply 7, reply 8 ──────────────► one flush
///       conn B (this loop):  reply 9 ───────────────────────► one flush
///       conn C (loop 2):     answer 12 ─ queued ────────────► one task on loop 2: deliver, one flush
///
/// The burst ends with the link's `channelReadComplete` (or its closing), never on a timer: a lone answer
/// goes out as soon as the read that brought it is handled. Confined to the link's event loop.
final class ModuleLinkAnswers {
    private struct Delivery: Sendable {
        let output: (any RPCConnectionOutput)?
        let deliver: @Sendable () -> Void
    }

    /// The connections of this loop that gather, in the order of their first answer.
    private var gathering = Gathering()
    /// Answers for connections on other loops, by loop, in arrival order.
    private var elsewhere: [(loop: any EventLoop, deliveries: [Delivery])] = []

    /// Hands an answer to its caller on `eventLoop`, the caller's connection's: at once when that is this
    /// loop, with the connection's flush held back until `finish`; else at `finish`, with the others of its loop.
    func deliver(on eventLoop: any EventLoop, to output: (any RPCConnectionOutput)?, _ deliver: @escaping @Sendable () -> Void) {
        if eventLoop.inEventLoop {
            gathering.add(output)
            return deliver()
        }
        let delivery = Delivery(output: output, deliver: deliver)
        if let index = elsewhere.firstIndex(where: { $0.loop === eventLoop }) {
            elsewhere[index].deliveries.append(delivery)
        } else {
            elsewhere.append((eventLoop, [delivery]))
        }
    }

    /// The end of the burst: what it wrote is flushed, and the other loops get their answers.
    func finish() {
        gathering.flush()
        for (loop, deliveries) in elsewhere {
            loop.execute {
                var gathering = Gathering()
                for delivery in deliveries {
                    gathering.add(delivery.output)
                    delivery.deliver()
                }
                gathering.flush()
            }
        }
        elsewhere.removeAll()
    }

    /// Connections holding their flushes, each once.
    private struct Gathering {
        private var outputs: [any RPCConnectionOutput] = []
        private var seen: Set<ObjectIdentifier> = []

        mutating func add(_ output: (any RPCConnectionOutput)?) {
            guard let output, seen.insert(ObjectIdentifier(output)).inserted else { return }
            output.gatherWrites()
            outputs.append(output)
        }

        mutating func flush() {
            for output in outputs { output.flushGathered() }
            outputs.removeAll(keepingCapacity: true)
            seen.removeAll(keepingCapacity: true)
        }
    }
}
