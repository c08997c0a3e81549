package import NIOCore
package import RPCModuleLink
import Synchronization

/// Messages waiting to go out on one end of a link, written in one burst with one flush.
///
/// Calls reach rpcd's end from every connection's event loop, and answers the host's end from every worker
/// thread: a `writeAndFlush` each would be a task on the link's loop and a `write` system call per message.
/// Here the first message of a burst schedules one task, and everything sent until it runs goes out with it
/// (a reply per read the host handled, a call per tick of rpcd's loops). They go down the pipeline as one
/// array, and out as one buffer (`ModuleLinkCodec`).
///
/// The host's end holds the outbox while it handles a read of the link (`hold`, `release`): what is sent
/// meanwhile, the answers of the calls its loop runs at once, goes out when the read ends, with no task,
/// which at one call at a time is a measurable share of the host's work (bench/README.md, "One call at a
/// time"). Thread-safe; `hold` and `release` on the link's loop.
package final class ModuleLinkOutbox: Sendable {
    private struct Pending {
        var messages = ModuleLinkBurst()
        /// A task to drain is scheduled on the link's loop.
        var scheduled = false
        /// A read of the link is being handled: `release` drains.
        var held = false
    }

    private let channel: any Channel
    private let pending = Mutex(Pending())

    package init(channel: any Channel) {
        self.channel = channel
    }

    package var eventLoop: any EventLoop { channel.eventLoop }

    package func send(_ message: ModuleLinkMessage) {
        let schedule = pending.withLock { pending in
            pending.messages.append(message)
            guard !pending.scheduled, !pending.held else { return false }
            pending.scheduled = true
            return true
        }
        guard schedule else { return }
        channel.eventLoop.execute { self.drain() }
    }

    /// From now until `release`, what is sent waits for `release` (unless a task already drains it).
    package func hold() {
        channel.eventLoop.preconditionInEventLoop()
        pending.withLock { $0.held = true }
    }

    /// Writes what was sent since `hold`, unless a scheduled task will.
    package func release() {
        channel.eventLoop.preconditionInEventLoop()
        let messages = pending.withLock { pending -> [ModuleLinkMessage] in
            pending.held = false
            guard !pending.scheduled else { return [] }
            return pending.messages.take()
        }
        if !messages.isEmpty { channel.writeAndFlush(messages, promise: nil) }
    }

    private func drain() {
        let messages = pending.withLock { pending in
            pending.scheduled = false
            return pending.messages.take()
        }
        if !messages.isEmpty { channel.writeAndFlush(messages, promise: nil) }
    }
}
