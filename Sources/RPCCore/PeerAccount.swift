package import RPCLogging
import Synchronization

/// One connection's account in the `PeerLedger`: what it holds for its peer now, charged when it is spent and
/// given back when it is freed, and all of it given back when the connection closes (`close`), whatever its
/// parts forgot — except what is held for its calls outside the connection (`chargeCallBound`: the copies a
/// call to a module host makes), which is the peer's until it is freed, after the connection too: a peer that
/// leaves calls behind in a hung module still pays for them, and a new connection of its finds its share spent.
/// Thread-safe: the connection's loop charges frames and replies, publishers charge events.
package final class PeerAccount: Sendable {
    private let ledger: PeerLedger
    let share: PeerShare
    /// On the Unix socket and named by `Administrators=`: may use the ledger's reserve.
    package let isAdministrator: Bool
    private let state = Mutex<State>(State())

    private struct State {
        var charged = 0
        /// Held for calls, given back by `releaseCallBound` alone, after `close` too.
        var callBound = 0
        var closed = false
    }

    init(ledger: PeerLedger, share: PeerShare, isAdministrator: Bool) {
        self.ledger = ledger
        self.share = share
        self.isAdministrator = isAdministrator
    }

    /// What one peer may hold (`MaxBufferedBytesPerPeer=`).
    package var shareLimit: Int { ledger.perPeerLimit }

    /// A call of this connection was routed: counted for its peer (the heaviest peers' report).
    package func countCall() {
        share.calls.increment()
    }

    /// What the peer's calls may log, shared by all its connections.
    package var log: LogRateLimiter { share.log }

    /// The connection has ended: work still running for it has nobody to answer.
    package var isClosed: Bool { state.withLock { $0.closed } }

    /// Bytes this connection holds now, its calls' included.
    package var charged: Int { state.withLock { $0.charged + $0.callBound } }

    /// Charges `bytes`, or nothing and false when that would pass the peer's share or what the ledger has
    /// left for this peer (or the connection has closed).
    package func charge(_ bytes: Int) -> Bool {
        take(bytes) { $0.charged += bytes }
    }

    /// Charges `bytes` held for a call outside the connection, which stay charged after it closes until
    /// `releaseCallBound` gives them back; refused as `charge` is.
    package func chargeCallBound(_ bytes: Int) -> Bool {
        take(bytes) { $0.callBound += bytes }
    }

    /// Gives back `bytes` that `chargeCallBound` charged, before or after the connection closed.
    package func releaseCallBound(_ bytes: Int) {
        let drained = state.withLock { state -> Bool in
            giveBackCallBound(bytes, &state)
            return state.closed && state.callBound == 0
        }
        if drained { ledger.drained(share) }
    }

    /// `releaseCallBound(released)`, then `chargeCallBound(charged)`, under one acquisition of the lock: what a
    /// call held on its way out is given back as what its answer holds is charged. False when the charge is
    /// refused (the release is done all the same).
    package func exchangeCallBound(release released: Int, charge charged: Int) -> Bool {
        precondition(charged >= 0, "a charge is a number of bytes")
        let (taken, drained) = state.withLock { state -> (Bool, Bool) in
            giveBackCallBound(released, &state)
            guard take(charged, &state) else { return (false, state.closed && state.callBound == 0) }
            state.callBound += charged
            return (true, false)
        }
        if drained { ledger.drained(share) }
        return taken
    }

    private func giveBackCallBound(_ bytes: Int, _ state: inout State) {
        let bytes = min(bytes, state.callBound)
        state.callBound -= bytes
        share.used.increment(by: -bytes)
        ledger.give(bytes)
    }

    private func take(_ bytes: Int, into account: (inout State) -> Void) -> Bool {
        precondition(bytes >= 0, "a charge is a number of bytes")
        return state.withLock { state in
            guard take(bytes, &state) else { return false }
            account(&state)
            return true
        }
    }

    /// Takes `bytes` from the peer's share and the ledger, under the lock; false, having taken nothing, when
    /// either cannot cover them or the connection has closed.
    private func take(_ bytes: Int, _ state: inout State) -> Bool {
        guard !state.closed, share.used.add(bytes, ifAtMost: ledger.perPeerLimit) else { return false }
        guard ledger.take(bytes, isAdministrator: isAdministrator) else {
            share.used.increment(by: -bytes)
            return false
        }
        return true
    }

    /// Charges `bytes` whatever the limits say: for bytes that were charged already under another name (an
    /// event moving from its queue to the socket) and must be counted on the way, but cannot be refused.
    package func forceCharge(_ bytes: Int) {
        state.withLock { state in
            guard !state.closed else { return }
            share.used.increment(by: bytes)
            ledger.forceTake(bytes)
            state.charged += bytes
        }
    }

    /// Gives back `bytes` charged earlier. After `close`, nothing: closing gave everything back.
    package func release(_ bytes: Int) {
        state.withLock { state in
            guard !state.closed else { return }
            let bytes = min(bytes, state.charged)
            state.charged -= bytes
            share.used.increment(by: -bytes)
            ledger.give(bytes)
        }
    }

    /// The connection has ended: everything it still holds is given back but what its calls hold outside it
    /// (`chargeCallBound`), and its peer has one connection fewer. Later charges fail and releases do nothing
    /// (but `releaseCallBound`). Idempotent.
    package func close() {
        let wasOpen = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.closed = true
            share.used.increment(by: -state.charged)
            ledger.give(state.charged)
            state.charged = 0
            return true
        }
        if wasOpen { ledger.closed(share) }
    }
}
