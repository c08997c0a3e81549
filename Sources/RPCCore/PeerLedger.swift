import RPCLogging
import RPCMetrics
package import RPCProtocol
import Synchronization

/// What rpcd holds for its peers, charged to the peer it is held for: the one account every part that keeps
/// bytes for a peer charges (frames arriving, WebSocket frames arriving, frames waiting or running, calls and
/// replies crossing the link to a module host, replies not yet taken by the socket, queued events), and the
/// connections each peer has open.
///
/// Every connection opens a `PeerAccount` on its peer's share when it is accepted and closes it when it
/// ends; closing gives back whatever the connection still held, so nothing stays charged after a peer leaves.
/// A charge succeeds only within both bounds:
///
///     the peer's charge + bytes   ≤ perPeerLimit                 MaxBufferedBytesPerPeer=
///     everyone's charge + bytes   ≤ limit − reserve              MaxBufferedBytes=; reserve is 0 for administrators
///
/// so no peer can take more than its share, all peers together cannot take what is reserved for the
/// administrators (`Administrators=` on the Unix socket), and rpcd's memory for peers is bounded by `limit`
/// however many connections there are (docs/SECURITY.md has the formula).
///
/// A peer (`PeerKey`) is a user on the Unix socket (the kernel's `SO_PEERCRED`); over TCP, every loopback address
/// together (any local user may use any of 127.0.0.0/8, so they tell nobody apart), an IPv4 address, or an
/// IPv6 /64 (what one host is usually given). Thread-safe: connections open and close on every loop, and
/// charges from any thread take no lock but the account's own.
package final class PeerLedger: Sendable {
    /// Bytes held for all peers together at most (`MaxBufferedBytes=`, at least one frame).
    package let limit: Int
    /// Bytes held for one peer at most (`MaxBufferedBytesPerPeer=`, at least one frame).
    package let perPeerLimit: Int
    /// Of `limit`, what only administrators may use: one peer's share, at most half of the whole.
    package let reserve: Int
    /// Connections one peer may have open (`MaxConnectionsPerPeer=`).
    package let maxConnectionsPerPeer: Int
    private let administrators: RPCPeerSet
    /// The total, where `rpcd.info` reads it (`buffered_bytes`).
    let total: Atomic<Int>
    private let peers = Mutex<[PeerKey: PeerShare]>([:])

    /// The ledger of a server with `limits`; `administrators` get the reserve. Its totals are exported through
    /// `statistics` (read when scraped or reported: the ledger's own numbers are the only ones).
    package convenience init(limits: ConnectionLimits, administrators: RPCPeerSet, statistics: RPCStatistics) {
        let frame = limits.maxFrameSize
        self.init(
            limit: max(limits.maxBufferedBytes, frame), perPeerLimit: max(limits.maxBufferedBytesPerPeer, frame),
            maxConnectionsPerPeer: limits.maxConnectionsPerPeer, administrators: administrators)
        statistics.attach(self)
    }

    init(limit: Int, perPeerLimit: Int, maxConnectionsPerPeer: Int, administrators: RPCPeerSet) {
        self.limit = limit
        self.perPeerLimit = min(perPeerLimit, limit)
        self.reserve = min(self.perPeerLimit, limit / 2)
        self.maxConnectionsPerPeer = maxConnectionsPerPeer
        self.administrators = administrators
        self.total = Atomic(0)
    }

    /// One peer's use now, as `rpcd.metrics` and `rpcctl top` show the heaviest.
    package struct PeerUse: Sendable, Equatable {
        /// Who: `uid N` on the Unix socket, `loopback`, an IPv4 address or an IPv6 /64.
        package var peer: String
        package var bytes: Int
        package var connections: Int
        /// Calls routed for the peer since its first connection of this stretch (its share is forgotten when its
        /// last connection closes).
        package var calls: Int
    }

    /// The `count` peers holding the most bytes now (then the most calls): bounded, so a scan of thousands of
    /// peers costs a report only `count` entries, and no peer ever becomes a metric label.
    package func heaviest(_ count: Int) -> [PeerUse] {
        let uses = peers.withLock { peers in
            peers.values.map {
                PeerUse(peer: "\($0.key)", bytes: $0.used.load(ordering: .relaxed), connections: $0.connections,
                        calls: $0.calls.load(ordering: .relaxed))
            }
        }
        return Array(uses.sorted { ($0.bytes, $0.calls, $0.peer) > ($1.bytes, $1.calls, $1.peer) }.prefix(count))
    }

    /// An account that nothing limits, on a ledger of its own: for connections made outside a server (tests,
    /// in-process clients).
    package static func unlimitedAccount(for peer: RPCPeer = .unixSocket()) -> PeerAccount {
        PeerLedger(limit: .max / 4, perPeerLimit: .max / 4, maxConnectionsPerPeer: .max, administrators: RPCPeerSet([]))
            .open(peer)!
    }

    /// Opens an account for a new connection of `peer`; nil (nothing counted) when the peer has
    /// `maxConnectionsPerPeer` open already.
    package func open(_ peer: RPCPeer) -> PeerAccount? {
        let key = PeerKey(peer)
        let share: PeerShare? = peers.withLock { peers in
            if let share = peers[key] {
                guard share.connections < maxConnectionsPerPeer else { return nil }
                share.connections += 1
                return share
            }
            let share = PeerShare(key: key)
            peers[key] = share
            return share
        }
        guard let share else { return nil }
        return PeerAccount(ledger: self, share: share, isAdministrator: administrators.contains(peer))
    }

    /// Bytes charged now, all peers together.
    package var charged: Int { total.load(ordering: .relaxed) }

    /// Bytes charged now to `peer`; 0 for a peer with no connection.
    package func charged(to peer: RPCPeer) -> Int {
        peers.withLock { $0[PeerKey(peer)]?.used.load(ordering: .relaxed) ?? 0 }
    }

    /// Peers with a connection open.
    package var peerCount: Int { peers.withLock { $0.count } }

    func take(_ bytes: Int, isAdministrator: Bool) -> Bool {
        total.add(bytes, ifAtMost: isAdministrator ? limit : limit - reserve)
    }

    func forceTake(_ bytes: Int) {
        total.increment(by: bytes)
    }

    func give(_ bytes: Int) {
        total.increment(by: -bytes)
    }

    /// A connection of `share`'s peer has closed. The share is forgotten with the peer's last connection, once
    /// nothing is charged to it any more: bytes its calls still hold keep it (and a new connection finds it).
    func closed(_ share: PeerShare) {
        peers.withLock { peers in
            share.connections -= 1
            forgetIfIdle(share, in: &peers)
        }
    }

    /// What a closed connection's calls held has been given back.
    func drained(_ share: PeerShare) {
        peers.withLock { peers in forgetIfIdle(share, in: &peers) }
    }

    private func forgetIfIdle(_ share: PeerShare, in peers: inout [PeerKey: PeerShare]) {
        if share.connections == 0, share.used.load(ordering: .relaxed) == 0, peers[share.key] === share { peers[share.key] = nil }
    }
}

/// Who a peer is for its share: what `MaxConnectionsPerPeer=` and `MaxBufferedBytesPerPeer=` count by.
enum PeerKey: Hashable, Sendable, CustomStringConvertible {
    case user(UInt32)
    /// A Unix-socket peer whose credentials could not be read: all such together.
    case unknownUser
    case loopback
    case address([UInt8])

    init(_ peer: RPCPeer) {
        switch peer.address {
        case .unixSocket:
            self = peer.credentials.map { .user($0.uid) } ?? .unknownUser
        case .ip:
            guard !peer.isLocal, var bytes = peer.addressBytes else {
                self = .loopback
                return
            }
            let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
            if bytes.count == 16 {
                // An IPv4 client of a dual-stack listener is that IPv4 address; an IPv6 host usually has a /64.
                bytes = bytes.prefix(12).elementsEqual(mappedPrefix) ? Array(bytes.suffix(4)) : Array(bytes.prefix(8))
            }
            self = .address(bytes)
        }
    }

    var description: String {
        switch self {
        case .user(let uid): "uid \(uid)"
        case .unknownUser: "uid unknown"
        case .loopback: "loopback"
        case .address(let bytes) where bytes.count == 4: bytes.map { "\($0)" }.joined(separator: ".")
        case .address(let bytes):
            stride(from: 0, to: bytes.count, by: 2).map {
                String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
            }.joined(separator: ":") + "::/64"
        }
    }
}

/// One peer's part of the ledger, shared by all its connections.
final class PeerShare: @unchecked Sendable {
    let key: PeerKey
    /// Bytes charged to the peer now.
    let used = Atomic<Int>(0)
    /// Calls routed for the peer (`PeerAccount.countCall`).
    let calls = Atomic<Int>(0)
    /// What the peer's calls may log (failed and slow calls), all its connections together: opening more
    /// connections does not buy a peer more of the journal.
    let log = LogRateLimiter(burst: PeerShare.logBurst)
    /// Open connections; only touched under the ledger's lock (hence `@unchecked Sendable`).
    var connections = 1

    /// Log entries a peer's calls may cause per second.
    static let logBurst = 10

    init(key: PeerKey) {
        self.key = key
    }
}

extension Atomic<Int> {
    /// Adds `delta` unless the sum would pass `limit`; whether it did.
    func add(_ delta: Int, ifAtMost limit: Int) -> Bool {
        var current = load(ordering: .relaxed)
        while true {
            guard current + delta <= limit else { return false }
            let (exchanged, original) = weakCompareExchange(expected: current, desired: current + delta, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }
}
