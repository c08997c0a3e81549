import NIOCore

/// When a connection runs what it reads, when it reads more, and when its replies are flushed: a value that
/// `RPCConnectionHandler` tells what happens and whose answers it carries out (it does the I/O, this decides),
/// as `ConnectionShutdown` decides how the connection ends.
///
///                frame read                     read burst ended
///     idle ──────────────────────▶ reading ─────────────────────────────▶ idle
///       │                           │    ▲
///       │               frames wait │    │ nothing more
///       │           and a call ends │    │ to run
///       │                           ▼    │
///       └── frames wait ─────────▶ draining ──── nothing more to run ───▶ idle
///           and a call ends, the peer reads again, or the next turn comes
///
/// - **Calls in flight**: at most `maxCallsInFlight` run at once (a batch counts its entries and runs as many
///   as there is room for; a cancellation counts none). Past that, frames wait: the handler keeps them, in
///   order, and this counts them. A read the pipeline asks for meanwhile is held until there is room.
/// - **The peer not reading**: while the channel is not writable, nothing more is run or read. Writability,
///   like the shutdown's phase, is the handler's to say with each event that depends on it.
/// - **Turns** (`RPCLoopTurns`): a read burst, or a drain of waiting frames, is the connection's turn on its
///   loop; frames past `turn` wait for the loop's next round (`Actions.scheduleTurn`, asked for once until
///   `turnGranted`).
/// - **Flushes**: replies written inside a burst, a drain or a delivery of answers that arrived together
///   (`RPCConnectionOutput.deliver`: a module host's answers of one read of its link, run as a burst of the
///   connection's own) wait for its end, to go out in one write; others are flushed at once (`holdsFlushes`).
/// - **The clock**: within a turn the latest reading of the loop's clock is kept (`latestReading`), taken when
///   the turn began and when a call answered at once was answered (the router times such a call from it), so
///   that a burst costs one reading per call for both their durations and the turn. It is dropped when it
///   may be stale: a call started that answers later, or the turn ended. Events that may need the time take
///   `now`, which the handler reads as `latestReading ?? the loop's clock`.
///
/// Plain value, no I/O; owned by one handler, so confined to its event loop. Its events call nothing, not even
/// NIO's arithmetic on deadlines (readings are `Instant`s, plain integers): the handler's accesses to it
/// never overlap, and Swift checks none of them at run time.
struct ConnectionFlow {
    /// A reading of the loop's clock: `NIODeadline.uptimeNanoseconds`.
    typealias Instant = UInt64

    enum Phase: Equatable {
        /// Between read bursts and drains: a reply that completes now (a module's, a timer's) is flushed at once.
        case idle
        /// Inside a read burst (`channelRead`s up to `channelReadComplete`): replies wait for its end. The
        /// connection's turn on the loop began at `turnStarted`.
        case reading(turnStarted: Instant)
        /// Running frames that waited, inside a read burst or on their own turn; replies wait for its end. A
        /// drain does not start another one (calls answered at once call back into it).
        case draining(turnStarted: Instant, withinReadBurst: Bool)
    }

    /// What to do with a frame just read.
    enum FrameAction: Equatable {
        /// Run it now.
        case run
        /// It may not run now (no room, frames ahead of it, the peer not reading, the turn over): queue it
        /// and say so (`frameQueued`); a cancellation runs all the same, uncounted.
        case wait
    }

    /// What the handler does after a drain or a queued frame, in this order.
    struct Actions: OptionSet, Equatable {
        let rawValue: UInt8
        /// Ask the loop for a turn in its next round (`RPCLoopTurns`), then tell `turnGranted` and drain.
        static let scheduleTurn = Actions(rawValue: 1)
        /// Flush what was written.
        static let flush = Actions(rawValue: 2)
    }

    /// `MaxCallsPerConnection=`.
    let maxCallsInFlight: Int
    /// How long a turn on the loop lasts, in nanoseconds (`RPCLoopTurns.turn`).
    let turn: UInt64

    private(set) var phase = Phase.idle
    /// Calls running, each counted once (a batch's entries each).
    private(set) var callsInFlight = 0
    /// Frames queued while they could not run, which the handler keeps.
    private(set) var waitingFrames = 0
    /// The pipeline asked to read while there was no room; honoured once there is.
    private(set) var readHeld = false
    /// Between `answersArrived` and `answersDelivered`: replies wait for the latter, whatever the phase.
    private(set) var deliveringAnswers = false
    /// A drain is asked for in the loop's next round.
    private(set) var nextTurnScheduled = false
    /// The latest reading of the loop's clock within this turn; nil when there is none or it may be stale.
    private(set) var latestReading: Instant?

    init(maxCallsInFlight: Int, turn: TimeAmount) {
        self.maxCallsInFlight = maxCallsInFlight
        self.turn = UInt64(turn.nanoseconds)
    }

    /// No call is running and no frame waits.
    var isQuiet: Bool { callsInFlight == 0 && waitingFrames == 0 }

    /// Whether a reply written now waits for the end of a burst, a drain or a delivery.
    var holdsFlushes: Bool { deliveringAnswers || !isIdle }

    /// Whether answered calls may let waiting frames run, or a held read go on.
    var drainWanted: Bool { waitingFrames > 0 || readHeld }

    // MARK: Reading

    /// A frame was read (while serving); `now` begins the turn when it is the burst's first. (Always inlined:
    /// it is every frame's, and its one caller is the handler's `channelRead`.)
    @inline(__always)
    mutating func frameRead(now: Instant, writable: Bool) -> FrameAction {
        if case .idle = phase {
            phase = .reading(turnStarted: now)
            latestReading = now
        }
        if callsInFlight >= maxCallsInFlight || waitingFrames > 0 || !writable || !hasTurnLeft(now: now) {
            return .wait
        }
        return .run
    }

    /// The frame `frameRead` held back was queued. Returns `.scheduleTurn` when only the turn keeps it waiting.
    mutating func frameQueued(now: Instant, writable: Bool) -> Actions {
        waitingFrames += 1
        return nextTurnIfNeeded(now: now, writable: writable)
    }

    /// The read burst ended (`channelReadComplete`): the turn is over, and the handler flushes.
    mutating func readBurstEnded() {
        phase = .idle
        latestReading = nil
    }

    /// The pipeline asks to read: whether to, now; if not, the read is held until `heldReadResumes`.
    mutating func readRequested(writable: Bool, shutdown: ConnectionShutdown.Phase) -> Bool {
        if readsMore(writable: writable, shutdown: shutdown) { return true }
        readHeld = true
        return false
    }

    /// Whether a held read goes on now (after a drain, or once stopping): there is room again.
    mutating func heldReadResumes(writable: Bool, shutdown: ConnectionShutdown.Phase) -> Bool {
        guard readHeld, readsMore(writable: writable, shutdown: shutdown) else { return false }
        readHeld = false
        return true
    }

    /// Whether to read more: room for calls, nothing queued, and the peer reading its replies. A peer that
    /// stops reading fills the socket, then NIO's outbound buffer to its high-water mark; from then on nothing
    /// more of its input is read or run until it drains, so it cannot make rpcd hold replies without bound.
    /// While stopping, what is read is refused rather than run, so only the peer's reading holds it back.
    func readsMore(writable: Bool, shutdown: ConnectionShutdown.Phase) -> Bool {
        guard shutdown == .serving else { return writable || shutdown == .closed }
        return callsInFlight < maxCallsInFlight && waitingFrames == 0 && writable
    }

    // MARK: Calls

    /// A message with `callCount` calls starts; returns how many it counts for: the room there is, at least
    /// none (a cancellation runs at the limit).
    mutating func callsStarted(_ callCount: Int) -> Int {
        let weight = max(0, min(callCount, maxCallsInFlight - callsInFlight))
        callsInFlight += weight
        return weight
    }

    /// The router took the message: answered at once, its clock read at `clock` (kept within a turn), or
    /// (nil) running on, when the latest reading may be stale by the time anything else runs.
    mutating func dispatched(answeredAt clock: Instant?) {
        latestReading = isIdle ? nil : clock
    }

    /// Calls counted `weight` were answered.
    mutating func callsAnswered(weight: Int) {
        callsInFlight -= weight
    }

    // MARK: Draining

    /// A drain of the waiting frames begins (a call answered, the peer reading again, the next turn), on the
    /// burst's turn or a turn of its own begun at `now`. False when one is running already.
    mutating func drainBegan(now: Instant) -> Bool {
        switch phase {
        case .draining:
            return false
        case .idle:
            phase = .draining(turnStarted: now, withinReadBurst: false)
            latestReading = now
        case .reading(let started):
            phase = .draining(turnStarted: started, withinReadBurst: true)
        }
        return true
    }

    /// Whether the next waiting frame runs now; if so the handler takes it off its queue. `runsMessages`:
    /// the shutdown still runs what was read (`ConnectionShutdown.runsMessages`).
    mutating func nextWaitingFrame(now: Instant, writable: Bool, runsMessages: Bool) -> Bool {
        guard runsMessages, callsInFlight < maxCallsInFlight, writable, hasTurnLeft(now: now), waitingFrames > 0 else {
            return false
        }
        waitingFrames -= 1
        return true
    }

    /// The drain ran what it could: back to the burst it was in, or idle (flushing unless delivering), and a
    /// turn asked for when only the turn keeps frames waiting. A held read is `heldReadResumes`'s to judge,
    /// after the flush.
    mutating func drainEnded(now: Instant, writable: Bool) -> Actions {
        var actions = nextTurnIfNeeded(now: now, writable: writable)
        if case .draining(let started, withinReadBurst: true) = phase {
            phase = .reading(turnStarted: started)
        } else {
            phase = .idle
            latestReading = nil
            if !deliveringAnswers { actions.insert(.flush) }
        }
        return actions
    }

    /// The turn asked for (`Actions.scheduleTurn`) has come: the handler drains.
    mutating func turnGranted() {
        nextTurnScheduled = false
    }

    /// Every waiting frame was taken off the queue without running (refused while stopping, or dropped).
    mutating func waitingFramesDropped() {
        waitingFrames = 0
    }

    // MARK: Answers from elsewhere

    /// Answers that arrived together (`RPCConnectionOutput.deliver`) complete their calls: the replies wait
    /// for `answersDelivered`. False inside such a delivery already, whose end flushes (the handler then does
    /// not tell `answersDelivered`).
    mutating func answersArrived() -> Bool {
        guard !deliveringAnswers else { return false }
        deliveringAnswers = true
        return true
    }

    /// The answers completed their calls. Returns whether to flush now: not inside a burst or a drain, whose
    /// end flushes.
    mutating func answersDelivered() -> Bool {
        deliveringAnswers = false
        return isIdle
    }

    // MARK: Turns

    private var isIdle: Bool {
        if case .idle = phase { return true }
        return false
    }

    /// Whether this connection's turn on the loop, if it has one, has time left at `now` (the latest
    /// reading when there is one, which `now` becomes otherwise).
    private mutating func hasTurnLeft(now: Instant) -> Bool {
        let started: Instant
        switch phase {
        case .idle: return true
        case .reading(let turnStarted), .draining(let turnStarted, _): started = turnStarted
        }
        let reading = latestReading ?? now
        latestReading = reading
        return reading <= started || reading - started < turn
    }

    /// `.scheduleTurn` when frames wait only because the turn is over (nothing else would start them), and no
    /// turn is asked for yet.
    private mutating func nextTurnIfNeeded(now: Instant, writable: Bool) -> Actions {
        guard waitingFrames > 0, callsInFlight < maxCallsInFlight, writable, !hasTurnLeft(now: now), !nextTurnScheduled else {
            return []
        }
        nextTurnScheduled = true
        return .scheduleTurn
    }
}
