import NIOCore
import NIOPosix
import RPCClient
package import RPCJSON
package import RPCProtocol
import RPCWire

/// Records call latencies for one connection of a load run; one instance per connection, used only on that
/// connection's event loop, handed back in the result.
package protocol RPCLatencyRecorder: Sendable {
    init()
    mutating func record(nanoseconds: UInt64)
}

/// What a load run does (`rpcctl bench`).
package struct RPCLoadConfiguration: Sendable {
    package var endpoint: RPCEndpoint
    package var method: String
    package var params: JSONValue?
    /// Number of connections, each on its own socket.
    package var connections: Int
    /// Calls each connection keeps in flight.
    package var depth: Int
    /// The measured time, after the warm-up.
    package var duration: Duration
    /// Time before measuring; calls completing then are not counted.
    package var warmup: Duration
    /// Event loop threads of the load generator.
    package var threads: Int
    package var connectTimeout: Duration
    /// How long after the end to wait for calls still in flight (they are not counted either way).
    package var drainTimeout: Duration
    package var maxFrameSize: Int

    package init(
        endpoint: RPCEndpoint, method: String, params: JSONValue? = nil, connections: Int = 50, depth: Int = 1,
        duration: Duration = .seconds(10), warmup: Duration = .seconds(1), threads: Int = System.coreCount,
        connectTimeout: Duration = .seconds(10), drainTimeout: Duration = .seconds(5), maxFrameSize: Int = RPCLimits.maxFrameSize.defaultValue
    ) {
        self.endpoint = endpoint
        self.method = method
        self.params = params
        self.connections = connections
        self.depth = depth
        self.duration = duration
        self.warmup = warmup
        self.threads = threads
        self.connectTimeout = connectTimeout
        self.drainTimeout = drainTimeout
        self.maxFrameSize = maxFrameSize
    }
}

/// What a load run measured.
package struct RPCLoadResult<Recorder: RPCLatencyRecorder>: Sendable {
    /// One recorder per connection that was established, holding latencies of calls answered in the window.
    package var recorders: [Recorder]
    /// Replies received during the measured window (successes and errors).
    package var calls: Int
    /// Of those, replies with an `error` member.
    package var errors: Int
    /// Replies received during the warm-up (not counted above).
    package var warmupCalls: Int
    /// The measured window's length.
    package var duration: Duration
    /// Connections that could not be established or that ended early, with the reason for each.
    package var connectionFailures: [String]
    /// Calls still unanswered after the drain timeout.
    package var unanswered: Int
    /// The first error reply seen (abbreviated JSON), to explain a run where every call failed.
    package var firstError: String?

    package var callsPerSecond: Double {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return seconds > 0 ? Double(calls) / seconds : 0
    }
}

/// A closed-loop load generator: each connection keeps `depth` identical calls in flight and sends the next as
/// soon as one is answered.
///
/// The request frames are built once (one per in-flight slot; the slot number is the id, since a slot has at
/// most one call in flight), replies are matched by a light scan for `"id"`, and writes are flushed once per
/// read burst, so the client costs little per call. Runs on its own event loop group.
package enum RPCLoadGenerator {
    package static func run<Recorder: RPCLatencyRecorder>(
        _ configuration: RPCLoadConfiguration, recorder: Recorder.Type = Recorder.self
    ) async -> RPCLoadResult<Recorder> {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
        let frames = requestFrames(configuration)

        // Connect every connection before the clock starts.
        var established: [(channel: any Channel, done: EventLoopFuture<LoadConnectionStats<Recorder>>)] = []
        var failures: [String] = []
        await withTaskGroup(of: Result<(any Channel, EventLoopFuture<LoadConnectionStats<Recorder>>), RPCClientError>.self) {
            tasks in
            for _ in 0..<configuration.connections {
                tasks.addTask { await connect(configuration, frames: frames, group: group, recorder: Recorder.self) }
            }
            for await outcome in tasks {
                switch outcome {
                case .success(let connection): established.append(connection)
                case .failure(let error): failures.append(error.description)
                }
            }
        }

        let start = NIODeadline.now()
        let window = LoadWindow(
            measureStart: start + TimeAmount(configuration.warmup),
            measureEnd: start + TimeAmount(configuration.warmup) + TimeAmount(configuration.duration),
            drainTimeout: TimeAmount(configuration.drainTimeout))
        for connection in established {
            connection.channel.pipeline.fireUserInboundEventTriggered(window)
        }

        var result = RPCLoadResult<Recorder>(
            recorders: [], calls: 0, errors: 0, warmupCalls: 0, duration: configuration.duration,
            connectionFailures: failures, unanswered: 0, firstError: nil)
        for connection in established {
            let stats: LoadConnectionStats<Recorder>
            do {
                stats = try await connection.done.get()
            } catch {
                result.connectionFailures.append("\(error)")
                continue
            }
            result.recorders.append(stats.recorder)
            result.calls += stats.calls
            result.errors += stats.errors
            result.warmupCalls += stats.warmupCalls
            result.unanswered += stats.unanswered
            if result.firstError == nil { result.firstError = stats.firstError }
            if let failure = stats.failure { result.connectionFailures.append(failure) }
        }
        for connection in established {
            try? await connection.channel.close()
        }
        try? await group.shutdownGracefully()
        return result
    }

    /// One complete frame (length prefix included) per in-flight slot; slot `n` sends id `n`.
    static func requestFrames(_ configuration: RPCLoadConfiguration) -> [ByteBuffer] {
        (0..<max(1, configuration.depth)).map { slot in
            let payload = RPCRequestEncoding.request(method: configuration.method, params: configuration.params, id: slot)
            var frame = ByteBuffer()
            frame.writeLengthPrefixedFrame(ByteBuffer(bytes: payload))
            return frame
        }
    }

    private static func connect<Recorder: RPCLatencyRecorder>(
        _ configuration: RPCLoadConfiguration, frames: [ByteBuffer], group: MultiThreadedEventLoopGroup,
        recorder: Recorder.Type
    ) async -> Result<(any Channel, EventLoopFuture<LoadConnectionStats<Recorder>>), RPCClientError> {
        let loop = group.next()
        let done = loop.makePromise(of: LoadConnectionStats<Recorder>.self)
        let maxFrameSize = configuration.maxFrameSize
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: maxFrameSize)),
                        LoadConnectionHandler<Recorder>(frames: frames, done: done),
                    ])
                }
            }
        do {
            let channel: any Channel
            switch configuration.endpoint {
            case .tcp(let host, let port):
                channel = try await bootstrap.channelOption(.tcpOption(.tcp_nodelay), value: 1)
                    .connect(host: host, port: port).get()
            case .unix(let path):
                channel = try await bootstrap.connect(unixDomainSocketPath: path).get()
            case .tls, .http, .https, .httpUnix:
                throw RPCClientError.connectFailed(
                    endpoint: configuration.endpoint.description, reason: "the load generator speaks plain TCP and Unix sockets only")
            }
            return .success((channel, done.futureResult))
        } catch {
            done.fail(error)
            return .failure(
                .connectFailed(endpoint: configuration.endpoint.description, reason: ConnectFailure.reason(for: error)))
        }
    }
}

/// Sent to every connection's pipeline to start it: the shared measurement window.
struct LoadWindow: Sendable {
    var measureStart: NIODeadline
    var measureEnd: NIODeadline
    var drainTimeout: TimeAmount
}

struct LoadConnectionStats<Recorder: RPCLatencyRecorder>: Sendable {
    var recorder: Recorder
    var calls = 0
    var errors = 0
    var warmupCalls = 0
    var unanswered = 0
    var firstError: String?
    var failure: String?
}
