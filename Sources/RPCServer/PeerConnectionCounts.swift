import RPCCore
import Synchronization

/// How many connections each peer has open, across every listener: one IP address over TCP, one user on the
/// Unix socket. Enforces `MaxConnectionsPerPeer=` so that no single client can take every connection.
/// Thread-safe (connections open and close on every loop).
final class PeerConnectionCounts: Sendable {
    private let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a new connection of `peer`, or returns false (counting nothing) when the peer is at the limit.
    /// A Unix-socket peer whose credentials could not be read is only counted against `MaxConnections=`.
    func admit(_ peer: RPCPeer) -> Bool {
        guard let key = Self.key(peer) else { return true }
        return counts.withLock { counts in
            let open = counts[key, default: 0]
            guard open < limit else { return false }
            counts[key] = open + 1
            return true
        }
    }

    /// A connection `admit` counted has closed.
    func release(_ peer: RPCPeer) {
        guard let key = Self.key(peer) else { return }
        counts.withLock { counts in
            let open = counts[key, default: 1] - 1
            counts[key] = open > 0 ? open : nil
        }
    }

    private static func key(_ peer: RPCPeer) -> String? {
        switch peer.address {
        case .ip(let address, _): return "ip " + address
        case .unixSocket: return peer.credentials.map { "uid \($0.uid)" }
        }
    }
}
