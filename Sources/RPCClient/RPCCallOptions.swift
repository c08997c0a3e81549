/// How one call is made: how long to wait, and what the service must be. One value, so that a proxy or a
/// caller can pass its choices along unchanged; `RPCClient.Configuration.defaultOptions` fills in what a call
/// leaves out.
public struct RPCCallOptions: Sendable, Hashable {
    /// How long to wait for the reply, counted from the call (nil: no limit of its own). When it passes, the
    /// call fails with `.timedOut` and the server is told to cancel it (`rpc.cancel`).
    public var timeout: Duration?
    /// A point in time past which the call is given up on, as with `timeout`; the earlier of the two applies.
    /// It also bounds how long a call waits for a connection when the client is reconnecting.
    public var deadline: ContinuousClock.Instant?
    /// The fingerprint the called service must have (`rpc.discover`, docs/PROTOCOL.md); checked by typed
    /// proxies before they call (nil: not checked).
    public var expectedFingerprint: String?
    /// Whether the call is safe to run twice (it changes nothing, or sets what it sets whatever ran before): a
    /// call whose connection ends before its reply, with no word from the server on whether it ran, is then
    /// sent again instead of failing with `.connectionClosed` (docs/CLIENT.md, "Restarts"). A typed proxy sets
    /// it for the methods its interface declares `readOnly`. True in either these options or the defaults wins.
    public var idempotent: Bool

    public init(
        timeout: Duration? = nil, deadline: ContinuousClock.Instant? = nil, expectedFingerprint: String? = nil,
        idempotent: Bool = false
    ) {
        self.timeout = timeout
        self.deadline = deadline
        self.expectedFingerprint = expectedFingerprint
        self.idempotent = idempotent
    }

    /// These options with what they leave out taken from `defaults`.
    func filled(from defaults: RPCCallOptions) -> RPCCallOptions {
        RPCCallOptions(
            timeout: timeout ?? defaults.timeout, deadline: deadline ?? defaults.deadline,
            expectedFingerprint: expectedFingerprint ?? defaults.expectedFingerprint,
            idempotent: idempotent || defaults.idempotent)
    }

    /// When the call must be over, from `now`: the earlier of `deadline` and `now + timeout`.
    func deadline(from now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        switch (deadline, timeout) {
        case (let deadline?, let timeout?): min(deadline, now + timeout)
        case (let deadline?, nil): deadline
        case (nil, let timeout?): now + timeout
        case (nil, nil): nil
        }
    }
}
