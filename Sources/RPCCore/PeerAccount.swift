import RPCLogging
import Synchronization

/// One connection's account in the `PeerLedger`: what it holds for its peer now, charged when it is spent and
/// given back when it is freed, and all of it given back when the connection closes (`close`), whatever its
/// parts forgot. Thread-safe: the connection's loop charges frames and replies, publishers charge events.
package final class PeerAccount: Sendable {
    private let ledger: PeerLedger
    let share: PeerShare
    /// On the Unix socket and named by `Administrators=`: may use the ledger's reserve.
    package let isAdministrator: Bool
    private let state = Mutex<State>(State())

    private struct State {
        var charged = 0
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

    /// Bytes this connection holds now.
    package var charged: Int { state.withLock { $0.charged } }

    /// Charges `bytes`, or nothing and false when that would pass the peer's share or what the ledger has
    /// left for this peer (or the connection has closed).
    package func charge(_ bytes: Int) -> Bool {
        precondition(bytes >= 0, "a charge is a number of bytes")
        return state.withLock { state in
            guard !state.closed, share.used.add(bytes, ifAtMost: ledger.perPeerLimit) else { return false }
            guard ledger.take(bytes, isAdministrator: isAdministrator) else {
                share.used.increment(by: -bytes)
                return false
            }
            state.charged += bytes
            return true
        }
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

    /// The connection has ended: everything it still holds is given back, and its peer has one connection
    /// fewer. Later charges fail and releases do nothing. Idempotent.
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
