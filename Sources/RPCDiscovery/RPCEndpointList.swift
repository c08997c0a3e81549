package import RPCProtocol

/// The endpoints of a service's instances as discovery reports them, for `RPCClient(configuration:
/// endpointUpdates:)`: every instance that appeared and has not disappeared, in the order they appeared (so a
/// client's pool keeps its place when others come and go), an updated instance at its old place with its new
/// address. Instances whose fingerprint differs from `fingerprint` (when given) are left out: they serve
/// another interface under the same name.
package struct RPCEndpointList: Sendable {
    package let fingerprint: String?
    private var instances: [RPCDiscoveredInstance] = []

    package init(fingerprint: String? = nil) {
        self.fingerprint = fingerprint
    }

    /// The endpoints now.
    package var endpoints: [RPCEndpoint] {
        instances.compactMap { try? RPCEndpoint(parsing: $0.endpointText) }
    }

    /// Applies one event; returns the new list when it changed what a client should use, else nil.
    package mutating func apply(_ event: RPCDiscoveryEvent) -> [RPCEndpoint]? {
        let before = endpoints
        switch event {
        case .appeared(let instance), .updated(let instance):
            let index = instances.firstIndex { $0.name == instance.name && $0.domain == instance.domain }
            let wanted = fingerprint.map { $0 == instance.fingerprint } ?? true
            switch (index, wanted) {
            case (let index?, true): instances[index] = instance
            case (let index?, false): instances.remove(at: index)
            case (nil, true): instances.append(instance)
            case (nil, false): break
            }
        case .disappeared(let instance):
            instances.removeAll { $0.name == instance.name && $0.domain == instance.domain }
        case .settled:
            break
        }
        let after = endpoints
        return after == before ? nil : after
    }
}

extension RPCServiceDiscovery {
    /// The service's endpoints each time they change (`RPCEndpointList`), for a client that follows them: the
    /// first list once the first answers are all in (`settled`), then one per change.
    package func endpointLists(fingerprint: String? = nil) -> AsyncThrowingStream<[RPCEndpoint], any Error> {
        let events = events()
        return AsyncThrowingStream { continuation in
            let task = Task {
                var list = RPCEndpointList(fingerprint: fingerprint)
                // The first answers arrive one instance at a time: a list of the first instance alone would
                // move every connection of the pool to it. Lists are handed on once the browse has settled.
                var settled = false
                do {
                    for try await event in events {
                        let changed = list.apply(event)
                        if case .settled = event, !settled {
                            settled = true
                            continuation.yield(list.endpoints)
                        } else if settled, let endpoints = changed {
                            continuation.yield(endpoints)
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
