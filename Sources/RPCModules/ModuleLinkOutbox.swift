import NIOCore
import RPCModuleLink
import Synchronization

/// Messages waiting to go out on one end of a link, written in one burst with one flush.
///
/// Calls reach rpcd's end from every connection's event loop, and answers the host's end from every worker
/// thread: a `writeAndFlush` each would be a task on the link's loop and a `write` system call per message.
/// Here the first message of a burst schedules one task, and everything sent until it runs goes out with it
/// (a reply per read the host handled, a call per tick of rpcd's loops). They go down the pipeline as one
/// array, and out as one buffer (`ModuleLinkCodec`). Thread-safe.
final class ModuleLinkOutbox: Sendable {
    private let channel: any Channel
    private let pending = Mutex<[ModuleLinkMessage]>([])

    init(channel: any Channel) {
        self.channel = channel
    }

    var eventLoop: any EventLoop { channel.eventLoop }

    func send(_ message: ModuleLinkMessage) {
        let first = pending.withLock { pending in
            pending.append(message)
            return pending.count == 1
        }
        guard first else { return }
        channel.eventLoop.execute { self.drain() }
    }

    private func drain() {
        let messages = pending.withLock { pending in
            defer { pending = [] }
            return pending
        }
        channel.writeAndFlush(messages, promise: nil)
    }
}
