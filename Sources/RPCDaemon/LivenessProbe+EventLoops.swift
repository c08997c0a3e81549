import NIOCore
import RPCModuleHost
import RPCModules
import RPCSystemd

extension LivenessProbe {
    /// A probe of every event loop of `group` and of the worker `pool`: the things that must make progress for
    /// calls to be answered. A loop answers when it runs the probe; the pool when any of its jobs finishes
    /// (see `WorkerPool.whenProgressing`), so a long queue of blocking calls is not mistaken for a stall.
    init(group: any EventLoopGroup, pool: WorkerPool) {
        let loops = Array(group.makeIterator())
        var participants = loops.enumerated().map { index, loop in
            Participant(name: "event loop \(index)") { answer in loop.execute(answer) }
        }
        participants.append(Participant(name: "worker pool") { answer in pool.whenProgressing(answer) })
        self.init(participants: participants)
    }
}
