import RPCDNSSD

/// Turns Avahi's browse and resolve callbacks into `RPCDiscoveryEvent`s: pure bookkeeping, no Avahi, so it
/// is tested on its own.
///
/// Keys are Avahi's (interface, protocol, name, domain): one instance seen over two interfaces is two
/// instances with two addresses. Records that are not rpcd's (no `service=`/`fp=`) are ignored. `settled`
/// is emitted once, after Avahi's "all for now" when no resolve is outstanding.
struct DiscoveryTracker<Key: Hashable> {
    private var pending = Set<Key>()
    private var known: [Key: RPCDiscoveredInstance] = [:]
    private var allForNow = false
    private var settledSent = false

    /// The browser saw `key`; its resolution follows.
    mutating func found(_ key: Key) -> [RPCDiscoveryEvent] {
        if known[key] == nil { pending.insert(key) }
        return []
    }

    mutating func resolved(_ key: Key, _ instance: RPCDiscoveredInstance?) -> [RPCDiscoveryEvent] {
        pending.remove(key)
        var events: [RPCDiscoveryEvent] = []
        if let instance {
            switch known.updateValue(instance, forKey: key) {
            case nil: events.append(.appeared(instance))
            case let previous? where previous != instance: events.append(.updated(instance))
            default: break
            }
        }
        return events + settleIfDone()
    }

    mutating func resolveFailed(_ key: Key) -> [RPCDiscoveryEvent] {
        pending.remove(key)
        return settleIfDone()
    }

    mutating func removed(_ key: Key) -> [RPCDiscoveryEvent] {
        pending.remove(key)
        let events: [RPCDiscoveryEvent] = known.removeValue(forKey: key).map { [.disappeared($0)] } ?? []
        return events + settleIfDone()
    }

    mutating func allForNowReached() -> [RPCDiscoveryEvent] {
        allForNow = true
        return settleIfDone()
    }

    private mutating func settleIfDone() -> [RPCDiscoveryEvent] {
        guard allForNow, pending.isEmpty, !settledSent else { return [] }
        settledSent = true
        return [.settled]
    }
}
