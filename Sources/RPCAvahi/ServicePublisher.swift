package import RPCDNSSD
import Synchronization

/// Announces rpcd's services on the network. A tiny interface with one implementation per backend (as in
/// redis' ae.c): `AvahiServicePublisher` for DNS-SD over avahi-daemon, `NoopServicePublisher` when
/// advertising is off and in tests.
///
/// Implementations are thread-safe and never block an event loop; call them from tasks, not from loops.
package protocol ServicePublisher: Sendable {
    /// Begins publishing (or waiting for the backend to appear). Throws only for failures no later retry can
    /// fix; a missing avahi-daemon is not one of them.
    func start() throws
    /// Replaces the set of advertised services: new ones appear, missing ones are withdrawn, and changed
    /// versions or fingerprints update their TXT records in place.
    func publish(_ advertisements: [RPCAdvertisement])
    /// Withdraws every record and releases the backend. Idempotent.
    func stop() async
}

/// Publishes nothing, remembering what it was asked to publish (for tests and for `[Avahi] Enabled=no`).
package final class NoopServicePublisher: ServicePublisher {
    private let state = Mutex<(advertisements: [RPCAdvertisement], running: Bool)>(([], false))

    package init() {}

    package func start() { state.withLock { $0.running = true } }
    package func publish(_ advertisements: [RPCAdvertisement]) { state.withLock { $0.advertisements = advertisements } }
    package func stop() async { state.withLock { $0 = ([], false) } }

    /// What would be on the network now.
    package var advertisements: [RPCAdvertisement] { state.withLock { $0.running ? $0.advertisements : [] } }
}
