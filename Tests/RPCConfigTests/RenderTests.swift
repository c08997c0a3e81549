import RPCConfig
import RPCProtocol
import XCTest

final class RenderTests: XCTestCase {
    func testDefaultsRenderEveryKey() {
        XCTAssertEqual(
            ServerConfiguration.defaults.rendered(),
            """
            [Server]
            Listen=/run/rpcd/rpcd.sock
            Listen=127.0.0.1:7390
            Threads=auto
            MaxFrameSize=4M
            MaxBatchLength=1024
            MaxNestingDepth=64
            MaxConnections=4096
            MaxConnectionsPerPeer=256
            MaxCallsPerConnection=128
            MaxSubscriptionsPerConnection=64
            MaxQueuedEvents=1024
            MaxBufferedBytes=128M
            MaxBufferedBytesPerPeer=16M
            Administrators=user:root group:rpcd
            FrameTimeout=1min
            IdleTimeout=5min
            LogLevel=info
            LogCalls=no
            Metrics=yes
            SlowCallThreshold=1s
            ShutdownGracePeriod=10s

            [Avahi]
            Enabled=yes
            InstanceName=%s on %h
            Interfaces=
            Protocols=any

            [WideArea]
            Domain=
            Server=
            KeyFile=
            TTL=120
            Lease=120
            AdvertiseAddress=

            [Access]
            Allow=user:root group:rpcd
            AllowRead=local

            [TLS]
            Certificate=
            PrivateKey=
            ClientCA=
            RequireClientCertificate=no

            [HTTP]
            AllowOrigins=
            ServerNames=
            Console=yes

            """)
    }

    func testCustomConfigurationRendersItsValues() {
        let config = ServerConfiguration(
            listen: [.tcp(host: "::1", port: 9000)], threads: 3,
            limits: ConnectionLimits {
                $0.maxFrameSize = 1000
                $0.idleTimeout = nil
            }, logLevel: .trace)
        let text = config.rendered()
        XCTAssertTrue(text.contains("\nListen=[::1]:9000\nThreads=3\nMaxFrameSize=1000\n"), text)
        XCTAssertTrue(text.contains("\nIdleTimeout=infinity\nLogLevel=trace\n"), text)
    }

    func testRenderedTextParsesBackToAnEqualConfiguration() throws {
        let configurations = [
            ServerConfiguration.defaults,
            ServerConfiguration(
                listen: [.unix(path: "/tmp/x y.sock"), .tcp(host: "::", port: 0), .tcp(host: "example.org", port: 65535)],
                threads: 1024,
                limits: ConnectionLimits {
                    $0.maxFrameSize = 64
                    $0.maxBatchLength = 1
                    $0.maxNestingDepth = 2
                    $0.maxConnections = 1_000_000
                    $0.maxCallsPerConnection = 65536
                    $0.idleTimeout = .milliseconds(90_500)
                }, logLevel: .critical, logCalls: true,
                slowCallThreshold: nil, shutdownGracePeriod: .milliseconds(2500)),
            ServerConfiguration(
                listen: [],
                limits: ConnectionLimits {
                    $0.maxFrameSize = (1 << 30) - 1
                    $0.idleTimeout = nil
                }),
            ServerConfiguration(limits: ConnectionLimits { $0.idleTimeout = .microseconds(1) }),
        ]
        for config in configurations {
            let text = config.rendered()
            XCTAssertEqual(try configuration(text, file: "rendered"), config, text)
        }
    }

    func testEmptyListenListRendersAsAnEmptyAssignment() {
        XCTAssertTrue(ServerConfiguration(listen: []).rendered().contains("[Server]\nListen=\nThreads=auto\n"))
    }
}
