import RPCCore
import RPCLogging
import Synchronization

/// How many connections each peer has open, across every listener: one IP address over TCP, one user on the
/// Unix socket. Enforces `MaxConnectionsPerPeer=` so that no single client can take every connection, and
/// gives each peer one `LogRateLimiter` shared by all its connections, so that opening more connections does
/// not buy a peer more of the journal. Thread-safe (connections open and close on every loop).
final class PeerConnectionCounts: Sendable {
    /// Log entries a peer's calls may cause per second (failed and slow calls), all its connections together.
    static let logBurst = 10

    private let limit: Int
    private let peers = Mutex<[String: Peer]>([:])

    private struct Peer {
        var open: Int
        let log: LogRateLimiter
    }

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a new connection of `peer` and returns the peer's log limiter, or nil (counting nothing) when the
    /// peer is at the limit. A Unix-socket peer whose credentials could not be read is only counted against
    /// `MaxConnections=`, and gets a limiter of its own.
    func admit(_ peer: RPCPeer) -> LogRateLimiter? {
        guard let key = Self.key(peer) else { return LogRateLimiter(burst: Self.logBurst) }
        return peers.withLock { peers in
            guard var entry = peers[key] else {
                let log = LogRateLimiter(burst: Self.logBurst)
                peers[key] = Peer(open: 1, log: log)
                return log
            }
            guard entry.open < limit else { return nil }
            entry.open += 1
            peers[key] = entry
            return entry.log
        }
    }

    /// A connection `admit` counted has closed.
    func release(_ peer: RPCPeer) {
        guard let key = Self.key(peer) else { return }
        peers.withLock { peers in
            guard var entry = peers[key] else { return }
            entry.open -= 1
            peers[key] = entry.open > 0 ? entry : nil
        }
    }

    private static func key(_ peer: RPCPeer) -> String? {
        switch peer.address {
        case .ip(let address, _): return "ip " + address
        case .unixSocket: return peer.credentials.map { "uid \($0.uid)" }
        }
    }
}
