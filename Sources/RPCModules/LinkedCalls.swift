import NIOCore

/// The calls a `ModuleHostSupervisor` has sent to its host and not yet had answered, with the host's phase
/// as far as it decides them: a value that takes the calls' and the host's events and says what to do about
/// each; the supervisor does it (answers callers, sends on the link, gives back charges, cancels timers).
///
///                 admit                                 host answers
///     caller ────────────────▶ waiting ──────────────────────────────────────▶ off the books
///                                 │                                                  ▲
///         cancelled, or past      │                                                  │ host answers:
///         `Timeout=`: answered    ▼                                                  │ its answer dropped
///         by the supervisor, ── caller answered ─────────────────────────────────────┘
///         the host told
///
///     host ends: every call off the books at once; callers still waiting are answered by the supervisor
///
/// - **Admission**: only a running host takes calls, at most `maxConcurrency` at once (`MaxConcurrency=`); a
///   call holds its slot until the host answers it or its caller cancels. One past `Timeout=` keeps it: the
///   host still works on it.
/// - **Tokens** name calls on the link; they are never reused, so a late answer finds no call, or its own. A
///   call is found by its token's slot in a ring (`TokenSlots`), not by a hash; the ring grows and shrinks
///   with the calls on the books, each of them charged to its caller's peer while there.
/// - **Charges**: a call's peer pays for its copy on the link (`linkCharge`) and for its reply as it arrives
///   across reads (`replyCharge`); what a call taken off the books was charged is the supervisor's to give back.
/// - **A retired host** takes no calls and is stopped once its last call is off the books (`Finished.drained`).
///
/// `Caller` is who waits for an answer and `Link` what calls are sent on; neither is looked at here. Plain
/// value, no I/O; the supervisor keeps it behind its lock, one acquisition per event.
struct LinkedCalls<Caller, Link> {
    enum Phase {
        /// A host is spawned and loads its module; calls are refused meanwhile.
        case starting
        /// Calls go out on `Link`.
        case running(Link)
        /// The host died; a new one starts after the backoff.
        case waitingToRestart
        /// Down until the next reload: the module failed to start, or the start limit was hit.
        case failed(reason: String)
        /// No new calls; the host is stopped once the last call in flight is off the books.
        case retired
    }

    /// One call sent to the host and not yet answered by it.
    struct Call {
        let caller: Caller
        /// What its peer was charged for the copy of its params on the link and in the host.
        let linkCharge: Int
        /// What its peer was charged for its reply as the reply arrived; 0 for a reply whole in one read.
        fileprivate(set) var replyCharge = 0
        /// The caller has its answer already: it cancelled, or `Timeout=` passed.
        fileprivate(set) var callerAnswered = false
        /// Counted against `maxConcurrency`: until the host answers it, or its caller cancels.
        fileprivate(set) var holdsSlot = true
        /// Its `Timeout=`, while the caller waits.
        fileprivate(set) var timer: Scheduled<Void>?

        /// What its peer was charged for it, to be given back once it is off the books.
        var charged: Int { linkCharge + replyCharge }
    }

    /// What to do with a new call.
    enum Admission {
        /// Send it on the link as call `token`.
        case send(token: UInt64, on: Link)
        /// Every slot is taken: -32004.
        case busy
        /// No host serves: -32005 for `reason`.
        case unavailable(reason: String)
    }

    /// What to do for a caller that has its answer from the supervisor (it cancelled, or timed out).
    struct Abandonment {
        /// The call's `Timeout=`, to cancel.
        let timer: Scheduled<Void>?
        /// Where to tell the host to cancel the call; nil when no host serves.
        let cancelOn: Link?
    }

    /// A reply to a waiting call that the link is about to gather across reads, as the caller's peer takes it.
    enum ReplyCharge {
        /// Charged to the peer: the reply is held.
        case charged
        /// The caller's connection has closed: nobody waits for it.
        case callerLeft
        /// The peer's share cannot cover it: -32009.
        case overShare
    }

    /// What to do with a reply about to be gathered across reads.
    enum ReplyArrival {
        /// Gather it: the caller still waits, and its peer was charged for it.
        case hold
        /// Skip it: nobody waits for it; what was taken off the books, if anything.
        case skip(Finished?)
        /// Skip it and answer its caller -32009: the peer's share cannot cover it.
        case refuse(Finished)
    }

    /// A call taken off the books (the host answered it, or its reply is skipped): its slot is free, and the
    /// supervisor cancels its timer, answers its caller unless `callerAnswered`, and gives back `charged`.
    struct Finished {
        let call: Call
        /// It was a retired host's last call: the host is to be stopped (after the answer).
        let drained: Bool
    }

    /// `MaxConcurrency=`.
    let maxConcurrency: Int
    private(set) var phase = Phase.starting
    private var calls = TokenSlots<Call>()
    /// Calls holding a slot.
    private(set) var slotsTaken = 0

    init(maxConcurrency: Int) {
        self.maxConcurrency = maxConcurrency
    }

    /// No call is on the books.
    var isEmpty: Bool { calls.isEmpty }

    /// Where calls go out, while a host serves.
    var link: Link? {
        guard case .running(let link) = phase else { return nil }
        return link
    }

    // MARK: Calls

    /// A call from `caller`, whose peer was charged `linkCharge` for it.
    mutating func admit(_ caller: Caller, linkCharge: Int) -> Admission {
        let link: Link
        switch phase {
        case .running(let running): link = running
        case .starting, .waitingToRestart: return .unavailable(reason: "restarting")
        case .failed(let reason): return .unavailable(reason: reason)
        case .retired: return .unavailable(reason: "stopped")
        }
        guard slotsTaken < maxConcurrency else { return .busy }
        slotsTaken += 1
        return .send(token: calls.insert(Call(caller: caller, linkCharge: linkCharge)), on: link)
    }

    /// Call `token`'s `Timeout=` was scheduled after its admission: kept, or false when the call is off the
    /// books already (the host answered first), and the timer is to be cancelled.
    mutating func timerStarted(_ timer: Scheduled<Void>, for token: UInt64) -> Bool {
        guard let index = calls.index(of: token) else { return false }
        calls[index].timer = timer
        return true
    }

    /// The caller of call `token` gave up (the router answered it -32011): its slot is free at once, and the
    /// host is told. Nil when the caller was answered already, or the call is off the books.
    mutating func callerCancelled(_ token: UInt64) -> Abandonment? {
        guard let index = calls.index(of: token), !calls[index].callerAnswered else { return nil }
        calls[index].callerAnswered = true
        if calls[index].holdsSlot {
            calls[index].holdsSlot = false
            slotsTaken -= 1
        }
        let timer = calls[index].timer
        calls[index].timer = nil
        return Abandonment(timer: timer, cancelOn: link)
    }

    /// Call `token` passed `Timeout=`: its caller is answered -32003 and the host told, as for a cancellation,
    /// but the call keeps its slot until the host answers. Nil when the caller was answered already, or the
    /// call is off the books.
    mutating func timedOut(_ token: UInt64) -> (caller: Caller, cancelOn: Link?)? {
        guard let index = calls.index(of: token), !calls[index].callerAnswered else { return nil }
        calls[index].callerAnswered = true
        calls[index].timer = nil
        return (calls[index].caller, link)
    }

    /// A reply to call `token`, `length` bytes, is about to be gathered across reads; `charge` asks the
    /// caller's peer to take it (asked only while the caller waits).
    mutating func replyArriving(_ token: UInt64, length: Int, charge: (Caller) -> ReplyCharge) -> ReplyArrival {
        guard let index = calls.index(of: token) else { return .skip(nil) }
        guard !calls[index].callerAnswered else { return .skip(takeOff(at: index)) }
        switch charge(calls[index].caller) {
        case .charged:
            calls[index].replyCharge += length
            return .hold
        case .callerLeft:
            return .skip(takeOff(at: index))
        case .overShare:
            return .refuse(takeOff(at: index))
        }
    }

    /// The host answered call `token`: the call is taken off the books. Nil when no such call is on them.
    mutating func answered(_ token: UInt64) -> Finished? {
        guard let index = calls.index(of: token) else { return nil }
        return takeOff(at: index)
    }

    private mutating func takeOff(at index: Int) -> Finished {
        let call = calls.remove(at: index)
        if call.holdsSlot { slotsTaken -= 1 }
        guard case .retired = phase else { return Finished(call: call, drained: false) }
        return Finished(call: call, drained: calls.isEmpty)
    }

    // MARK: The host

    /// A host is to be spawned: false unless one is due (first start, or a restart after the backoff).
    mutating func hostStarting() -> Bool {
        switch phase {
        case .starting, .waitingToRestart:
            phase = .starting
            return true
        case .running, .failed, .retired:
            return false
        }
    }

    /// The starting host serves, on `link`.
    mutating func hostReady(on link: Link) {
        phase = .running(link)
    }

    /// The host ended: every call is taken off the books at once, and the supervisor answers those whose
    /// callers still wait. The phase is the supervisor's to set next (`waitsToRestart`, `failed`), unless the
    /// host was retired.
    mutating func hostEnded() -> [UInt64: Call] {
        slotsTaken = 0
        return Dictionary(uniqueKeysWithValues: calls.removeAll().map { ($0.token, $0.element) })
    }

    /// A new host starts after the backoff.
    mutating func waitsToRestart() {
        phase = .waitingToRestart
    }

    /// Down until the next reload, for `reason`.
    mutating func failed(reason: String) {
        phase = .failed(reason: reason)
    }

    /// No new calls from now on. Returns whether the host is to be stopped now: no call is on the books.
    mutating func retire() -> Bool {
        phase = .retired
        return calls.isEmpty
    }
}
