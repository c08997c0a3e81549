import ServiceLifecycle

/// Runs a `ServicePublisher` as a swift-service-lifecycle `Service`: starts it, keeps it until graceful
/// shutdown, then withdraws every record before returning. Placed after the server in the daemon's
/// `ServiceGroup`, it is shut down first, so records vanish before the listeners close.
package struct PublisherService: Service {
    package let publisher: any ServicePublisher

    package init(publisher: any ServicePublisher) {
        self.publisher = publisher
    }

    package func run() async throws {
        try publisher.start()
        // Sleeping until cancellation is the "wait for shutdown"; the error is expected.
        try? await gracefulShutdown()
        await publisher.stop()
    }
}
