/// What rpcd allows its peers, as one value: the `[Server]` limits of rpcd.conf, parsed once by RPCConfig and
/// passed down whole to the server, its connections, their frame receivers and their subscriptions. Every
/// default is `RPCLimits`'; `ConnectionLimits()` is the shipped set.
public struct ConnectionLimits: Hashable, Sendable {
    /// `MaxFrameSize=`: the largest frame (one message, or one reply) accepted, in bytes.
    public var maxFrameSize = RPCLimits.maxFrameSize.defaultValue
    /// `MaxBatchLength=`: the most calls one batch may hold.
    public var maxBatchLength = RPCLimits.maxBatchLength.defaultValue
    /// `MaxNestingDepth=`: the deepest JSON nesting of a whole message; the request object is level 1.
    public var maxNestingDepth = RPCLimits.maxNestingDepth.defaultValue
    /// `MaxConnections=`: connections open at once, across all listeners.
    public var maxConnections = RPCLimits.maxConnections.defaultValue
    /// `MaxConnectionsPerPeer=`: connections open at once from one peer.
    public var maxConnectionsPerPeer = RPCLimits.maxConnectionsPerPeer.defaultValue
    /// `MaxCallsPerConnection=`: calls in flight on one connection before the server stops reading it.
    public var maxCallsPerConnection = RPCLimits.maxCallsPerConnection.defaultValue
    /// `MaxSubscriptionsPerConnection=`: event subscriptions one connection may hold.
    public var maxSubscriptionsPerConnection = RPCLimits.maxSubscriptionsPerConnection.defaultValue
    /// `MaxQueuedEvents=`: events one subscription queues for a slow client before dropping the oldest.
    public var maxQueuedEvents = RPCLimits.maxQueuedEvents.defaultValue
    /// `MaxBufferedBytes=`: the bytes rpcd holds for all peers together.
    public var maxBufferedBytes = RPCLimits.maxBufferedBytes.defaultValue
    /// `MaxBufferedBytesPerPeer=`: the bytes rpcd holds for one peer.
    public var maxBufferedBytesPerPeer = RPCLimits.maxBufferedBytesPerPeer.defaultValue
    /// `Administrators=`: the Unix-socket peers for whom connections and bytes are reserved.
    public var administrators = RPCPrincipal.administrators
    /// `FrameTimeout=`: how long a frame may take to arrive once its length has been read.
    public var frameTimeout = RPCLimits.frameTimeout.defaultValue
    /// `IdleTimeout=`: how long a connection may stay without traffic and calls; nil never closes it.
    public var idleTimeout: Duration? = RPCLimits.idleTimeout.defaultValue

    /// The shipped limits.
    public init() {}

    /// The shipped limits with some changed: `ConnectionLimits { $0.maxFrameSize = 1 << 20 }`.
    public init(_ change: (inout ConnectionLimits) -> Void) {
        change(&self)
    }
}
