import NIOCore

/// What a client connection keeps to act on a stopping server's `rpc.goingAway` {"accepted": N}
/// (docs/PROTOCOL.md §4 "Shutdown"): the frames it wrote, numbered from 1 as the server counts them (each
/// call, batch, notification and `rpc.cancel` is one), the cut once the server names it, and the
/// notifications not yet known to have been read, which are to be sent again elsewhere when the cut comes
/// before them. A value owned by `RPCClientHandler`, on its event loop.
struct RPCFrameLedger {
    /// Notifications kept at most: a client that only notifies never learns which were read, and the server
    /// reads frames as they come, so older ones were.
    static let maxUnsureNotifications = 1024

    /// Frames written so far; the last one's number.
    private(set) var written = 0
    /// How many frames the server accepted (`rpc.goingAway`); nil until it says.
    private(set) var accepted: Int?
    private var unsureNotifications: [(frame: Int, payload: ByteBuffer)] = []

    /// A frame written (a call, a batch, an `rpc.cancel`); returns its number.
    mutating func wrote() -> Int {
        written += 1
        return written
    }

    /// A notification written; kept until it is known to have been read.
    mutating func wroteNotification(_ payload: ByteBuffer) {
        if unsureNotifications.count == Self.maxUnsureNotifications { unsureNotifications.removeFirst() }
        unsureNotifications.append((wrote(), payload))
    }

    /// The frame `frame` was answered, so the server read every frame before it.
    mutating func answered(frame: Int) {
        if !unsureNotifications.isEmpty { unsureNotifications.removeAll { $0.frame < frame } }
    }

    /// Whether the frame `frame` came after the cut: it did not run.
    func isAfterTheCut(_ frame: Int) -> Bool {
        accepted.map { frame > $0 } ?? false
    }

    /// The server's cut: the payloads of the notifications after it (they did not run), or nil when a cut
    /// was known already (the first one counts).
    mutating func cut(accepted count: Int) -> [[UInt8]]? {
        guard accepted == nil else { return nil }
        accepted = count
        defer { unsureNotifications = [] }
        return unsureNotifications.filter { $0.frame > count }.map { Array($0.payload.readableBytesView) }
    }
}
