import Logging
import RPCAvahi
import RPCConfig
import RPCCore
import RPCDNSSD
import RPCLogging
import RPCProtocol
import RPCServer
import RPCWideArea
import ServiceLifecycle
import Synchronization

/// The daemon's DNS-SD advertising as one lifecycle `Service`: it waits until the server has bound its
/// listeners (their ports go into the records), then runs the publisher until graceful shutdown, when every
/// record is withdrawn. `update` may come at any time, before or after the listeners are bound; the latest
/// set wins. Placed after the server in the `ServiceGroup`, it stops first, so records vanish before the
/// listeners close.
final class AdvertisingService: Service, Sendable {
    private let settings: ServerConfiguration
    private let tsigKey: TSIGKey?
    /// The path of the page HTTP listeners serve for people (the console), announced as `_http._tcp`.
    private let webPagePath: String?
    private let logger: Logger
    private let bound: AsyncStream<[RPCEndpoint]>
    private let boundContinuation: AsyncStream<[RPCEndpoint]>.Continuation
    private let state = Mutex<(publisher: (any ServicePublisher)?, latest: [RPCAdvertisement])>((nil, []))

    /// `settings` gives `[Avahi]` and `[WideArea]`; `tsigKey` is `[WideArea] KeyFile=`'s, read at start-up.
    init(settings: ServerConfiguration, tsigKey: TSIGKey?, webPagePath: String? = nil, logger: Logger) {
        self.settings = settings
        self.tsigKey = tsigKey
        self.webPagePath = webPagePath
        self.logger = logger
        (bound, boundContinuation) = AsyncStream.makeStream(of: [RPCEndpoint].self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Called once the server's listeners are bound.
    func listenersBound(_ endpoints: [RPCEndpoint]) {
        boundContinuation.yield(endpoints)
        boundContinuation.finish()
    }

    /// The services to advertise from now on.
    func update(_ advertisements: [RPCAdvertisement]) {
        // Publishing under the lock keeps updates in order; Avahi's callbacks never take this lock.
        state.withLock { state in
            state.latest = advertisements
            state.publisher?.publish(advertisements)
        }
    }

    func run() async throws {
        var listeners: [RPCEndpoint]?
        for await endpoints in bound.cancelOnGracefulShutdown() {
            listeners = endpoints
        }
        guard let listeners else { return }  // shut down before the server was listening
        var publishers: [any ServicePublisher] = [
            Advertising.makePublisher(settings: settings.avahi, listeners: listeners, webPagePath: webPagePath, logger: logger)
        ]
        if let wideArea = WideAreaAdvertising.makePublisher(settings: settings, key: tsigKey, listeners: listeners, logger: logger) {
            publishers.append(wideArea)
        }
        let publisher = PublisherGroup(publishers: publishers)
        state.withLock { state in
            state.publisher = publisher
            publisher.publish(state.latest)
        }
        do {
            try await PublisherService(publisher: publisher).run()
        } catch {
            // Advertising is a convenience: when it cannot run, rpcd keeps serving (a throwing service would
            // cancel the whole group).
            logger.error("DNS-SD advertising stopped; rpcd keeps serving", metadata: [LogField.error: "\(error)"])
            try? await gracefulShutdown()
            await publisher.stop()
        }
    }
}
