import NIOCore

/// Work that has had its turn on an event loop and waits for the next, behind the loop's input: a connection
/// with a deep pipeline, a long batch. One per event loop (`RPCRouter.turns(on:)`).
///
/// Why not `eventLoop.execute`: NIO's loop runs tasks until none is ready before it polls its sockets again,
/// so work that re-submits itself would keep every other connection of the loop waiting as surely as work
/// that never yields. Here the work that yielded runs in rounds, one turn each, and the next round is
/// scheduled `pause` after the end of the last: no task of ours is ready then, so the loop polls, serves the
/// other connections' input (root's `rpcd.ping`), and only then runs the next round. Confined to its loop;
/// `@unchecked Sendable` so that the router can hand it out from any thread.
package final class RPCLoopTurns: @unchecked Sendable {
    /// How long one piece of work may keep the loop before it waits for the next round.
    package static let turn = TimeAmount.milliseconds(2)
    /// How far after a round the next one is scheduled: long enough that the loop polls before it.
    static let pause = TimeAmount.microseconds(100)

    let eventLoop: any EventLoop
    private var waiting: [() -> Void] = []
    /// A round is scheduled or running: work that yields meanwhile joins the next one.
    private var active = false

    package init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `work` in the next round. On the loop.
    package func yield(_ work: @escaping () -> Void) {
        eventLoop.preconditionInEventLoop()
        waiting.append(work)
        guard !active else { return }
        active = true
        eventLoop.scheduleTask(in: Self.pause) { self.round() }
    }

    private func round() {
        let due = waiting
        waiting = []
        for work in due { work() }
        if waiting.isEmpty {
            active = false
        } else {
            eventLoop.scheduleTask(in: Self.pause) { self.round() }
        }
    }
}
