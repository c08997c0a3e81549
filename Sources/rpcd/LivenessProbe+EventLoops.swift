import NIOCore
import NIOPosix
import RPCSystemd

extension LivenessProbe {
    /// A probe of every event loop of `group` and of the worker `pool`: the things that must make progress for
    /// calls to be answered.
    init(group: any EventLoopGroup, pool: NIOThreadPool) {
        let loops = Array(group.makeIterator())
        var participants = loops.enumerated().map { index, loop in
            Participant(name: "event loop \(index)") { answer in loop.execute(answer) }
        }
        if let first = loops.first {
            // The future only reports the pool being shut down, which leaves the round incomplete: right, as
            // nothing can run there any more.
            participants.append(Participant(name: "thread pool") { answer in _ = pool.runIfActive(eventLoop: first, answer) })
        }
        self.init(participants: participants)
    }
}
