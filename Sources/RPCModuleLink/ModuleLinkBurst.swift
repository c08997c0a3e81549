/// The messages of one burst on a link, gathered to be handed on together (`ModuleLinkCodec` inbound,
/// `ModuleLinkOutbox` outbound). Each burst's array is allocated once, at the size the last burst had, rather
/// than grown from one message by doubling (five allocations for a burst of 16).
package struct ModuleLinkBurst: Sendable {
    private var messages: [ModuleLinkMessage] = []
    /// What the last burst held; a rare huge one does not stay reserved.
    private var expected = 4

    package init() {}

    package var isEmpty: Bool { messages.isEmpty }

    package mutating func append(_ message: ModuleLinkMessage) {
        if messages.capacity == 0 { messages.reserveCapacity(expected) }
        messages.append(message)
    }

    /// The burst's messages; the next burst starts empty.
    package mutating func take() -> [ModuleLinkMessage] {
        let taken = messages
        messages = []
        if !taken.isEmpty { expected = min(taken.count, 1024) }
        return taken
    }
}
