package import NIOCore
import Synchronization

/// Work that has had its turn on an event loop and waits for the next, behind the loop's input: a connection
/// with a deep pipeline, a long batch, a module host's messages, a fan-out of events. One per event loop
/// (`RPCLoopTurns.of`): two would each schedule their next round a pause after their own, and on a busy loop
/// each round would find the other's due, so that the loop ran them back to back and never polled.
///
/// Why not `eventLoop.execute`: NIO's loop runs tasks until none is ready before it polls its sockets again,
/// so work that re-submits itself would keep every other connection of the loop waiting as surely as work
/// that never yields. Here the work that yielded runs in rounds, one turn each, a round no longer than a turn
/// (what does not fit waits for the next), and the next round is scheduled `pause` after the end of the last:
/// no task of ours is ready then, so the loop polls, serves the other connections' input (root's `rpcd.ping`),
/// and only then runs the next round. Confined to its loop;
/// `@unchecked Sendable` so that the router can hand it out from any thread.
package final class RPCLoopTurns: @unchecked Sendable {
    /// How long one piece of work may keep the loop before it waits for the next round.
    package static let turn = TimeAmount.milliseconds(2)
    /// How far after a round the next one is scheduled: long enough that the loop polls before it.
    static let pause = TimeAmount.microseconds(100)

    let eventLoop: any EventLoop
    /// The clock turns are measured by: the loop's (an `EmbeddedEventLoop`'s moves only when a test moves it),
    /// or a test's own.
    package var now: () -> NIODeadline
    private var waiting = CircularBuffer<() -> Void>()
    /// A round is scheduled or running: work that yields meanwhile joins the next one.
    private var active = false

    private init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.now = { eventLoop.now }
    }

    private struct Registered {
        weak var turns: RPCLoopTurns?
    }

    /// Every loop's turns while someone holds them, by the loop's identity (a loop cannot go away while its
    /// turns, which hold it, are alive, so an identity is never reused for a live entry).
    private static let registry = Mutex<[ObjectIdentifier: Registered]>([:])

    /// The turns of `eventLoop` (made on first use). Any thread.
    package static func of(_ eventLoop: any EventLoop) -> RPCLoopTurns {
        registry.withLock { registry in
            let key = ObjectIdentifier(eventLoop)
            if let existing = registry[key]?.turns { return existing }
            registry = registry.filter { $0.value.turns != nil }
            let made = RPCLoopTurns(eventLoop: eventLoop)
            registry[key] = Registered(turns: made)
            return made
        }
    }

    /// When the loop began handling the input it handles now, outside any round (its sockets' reads): work done
    /// there shares one turn, and what does not fit in it yields to the rounds. A task clears it, and a task
    /// runs once the loop has handled the input of its sockets. On the loop.
    package func inputStarted() -> NIODeadline {
        if let inputSince { return inputSince }
        let started = now()
        inputSince = started
        eventLoop.execute { self.inputSince = nil }
        return started
    }

    private var inputSince: NIODeadline?

    /// Runs `work` in the next round. On the loop.
    package func yield(_ work: @escaping () -> Void) {
        eventLoop.preconditionInEventLoop()
        waiting.append(work)
        guard !active else { return }
        active = true
        eventLoop.scheduleTask(in: Self.pause) { self.round() }
    }

    /// Runs the work that was waiting when the round began, in order, each its turn — but the round itself ends
    /// once it has kept the loop for a turn, and what is left of it waits for the next one: with 200 connections
    /// yielding, a round of a turn each would keep everyone else waiting 400 ms.
    private func round() {
        let started = now()
        var due = waiting.count
        while due > 0, let work = waiting.popFirst() {
            due -= 1
            work()
            if now() - started >= Self.turn { break }
        }
        if waiting.isEmpty {
            active = false
        } else {
            eventLoop.scheduleTask(in: Self.pause) { self.round() }
        }
    }
}
