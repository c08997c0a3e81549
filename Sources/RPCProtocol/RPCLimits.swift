/// rpcd's limits: each default and each allowed range, declared once. The configuration (`[Server]` keys),
/// the server, the envelope parser and the client all take their defaults from here, and docs/CONFIG.md and
/// docs/PROTOCOL.md describe these values.
public enum RPCLimits {
    /// `MaxFrameSize=`: the largest frame (one message, or one reply) accepted, in bytes. 4 MiB, as gRPC's
    /// default message size: larger payloads are better streamed than held whole by both ends.
    public static let maxFrameSize = RPCLimit(default: 4 << 20, range: 64...(1 << 30))
    /// `MaxBufferedBytes=`: the bytes rpcd holds for its peers at once, all peers together: frames still
    /// arriving (the memory that holds what was received, never the length a peer announced), waiting, or
    /// carrying calls in flight; replies and events written but not yet taken by the socket; queued events.
    /// Each is charged to its peer (`PeerLedger`). Past it a frame is refused with -32009 and its connection
    /// closed, so that no set of peers can make rpcd hold more than this, whatever the connection limits allow.
    /// 128 MiB keeps rpcd's memory under 512 MiB however many hostile connections (docs/SECURITY.md).
    public static let maxBufferedBytes = RPCLimit(default: 128 << 20, range: (64 << 10)...(1 << 40))
    /// `MaxBufferedBytesPerPeer=`: of `MaxBufferedBytes=`, what one peer may hold at once (one user on the Unix
    /// socket, all loopback addresses together, one IPv4 address or IPv6 /64), all its connections together;
    /// as much is reserved for `Administrators=`. 16 MiB: a frame of the largest size and its reply, with room.
    public static let maxBufferedBytesPerPeer = RPCLimit(default: 16 << 20, range: (64 << 10)...(1 << 40))
    /// `FrameTimeout=`: how long a frame may take to arrive once its length has been read. A peer that
    /// announces a frame and then trickles it is closed after this, whatever the idle timeout says.
    public static let frameTimeout = RPCLimit<Duration>(default: .seconds(60), range: .seconds(1)...timeSpanCeiling)
    /// `MaxBatchLength=`: the most calls one batch may hold.
    public static let maxBatchLength = RPCLimit(default: 1024, range: 1...1_000_000)
    /// `MaxNestingDepth=`: the deepest JSON nesting of a whole message; the request object is level 1.
    public static let maxNestingDepth = RPCLimit(default: 64, range: 2...512)
    /// `MaxConnections=`: connections open at once, across all listeners.
    public static let maxConnections = RPCLimit(default: 4096, range: 1...1_000_000)
    /// `MaxConnectionsPerPeer=`: connections open at once from one peer — one IP address over TCP, one user on
    /// the Unix socket — so that no single client can take every connection (sd-varlink allows 1024 per user).
    public static let maxConnectionsPerPeer = RPCLimit(default: 256, range: 1...1_000_000)

    /// Connections only `Administrators=` may use: whatever other peers hold, root gets in. A 256th, at least one.
    public static func administratorConnectionReserve(maxConnections: Int) -> Int {
        max(1, maxConnections / 256)
    }

    /// Connections only Unix-socket peers may use: TCP peers get at most `MaxConnections=` minus this, so a
    /// flood from the network cannot lock local administrators out of the socket. A sixteenth, at least one.
    public static func localConnectionReserve(maxConnections: Int) -> Int {
        max(1, maxConnections / 16)
    }

    /// `MaxCallsPerConnection=`: calls in flight on one connection before the server stops reading it.
    public static let maxCallsPerConnection = RPCLimit(default: 128, range: 1...65536)
    /// `MaxSubscriptionsPerConnection=`: event subscriptions (`rpc.subscribe`) one connection may hold at once.
    public static let maxSubscriptionsPerConnection = RPCLimit(default: 64, range: 0...65536)
    /// `MaxQueuedEvents=`: events one subscription holds for a client that does not read them fast enough;
    /// past it the oldest is dropped and the client told how many it lost (`rpc.eventsLost`).
    public static let maxQueuedEvents = RPCLimit(default: 1024, range: 1...1_000_000)
    /// `IdleTimeout=`: how long a connection may stay without traffic and without calls (nil: never closed).
    public static let idleTimeout = RPCLimit<Duration>(default: .seconds(300), range: .zero...timeSpanCeiling)
    /// `SlowCallThreshold=`: calls taking longer are logged as slow.
    public static let slowCallThreshold = RPCLimit<Duration>(default: .seconds(1), range: .zero...timeSpanCeiling)
    /// `ShutdownGracePeriod=`: how long a stop waits for calls in flight. rpcd.service allows 30 s to stop
    /// (`TimeoutStopSec=`), so the grace period must end well before.
    public static let shutdownGracePeriod = RPCLimit<Duration>(default: .seconds(10), range: .zero...(.seconds(25)))
    /// `Threads=`: event-loop threads, when not `auto`.
    public static let threads = RPCLimit(default: 1, range: 1...1024)

    /// The longest finite time span any setting takes: a year. Longer ones are refused where they are read, so
    /// no later arithmetic on them (nanoseconds in 64 bits last 292 years) can overflow.
    public static let timeSpanCeiling = Duration.seconds(365 * 24 * 3600)

    /// How deep the client lets a reply nest: replies carry whatever a module returns, so this is more lenient
    /// than what the server accepts from clients.
    public static let clientMaxNestingDepth = 512
}

/// One limit: its default and the values a setting may take.
public struct RPCLimit<Value: Comparable & Sendable>: Sendable {
    public let defaultValue: Value
    public let range: ClosedRange<Value>

    public init(default defaultValue: Value, range: ClosedRange<Value>) {
        precondition(range.contains(defaultValue), "a limit's default lies in its range")
        self.defaultValue = defaultValue
        self.range = range
    }
}
