import RPCConfig
import RPCProtocol
import XCTest

final class ServerConfigurationTests: XCTestCase {
    func testDefaults() {
        let defaults = ServerConfiguration.defaults
        XCTAssertEqual(defaults.listen, [.unix(path: "/run/rpcd/rpcd.sock"), .tcp(host: "127.0.0.1", port: 7390)])
        XCTAssertNil(defaults.threads)
        XCTAssertEqual(defaults.limits.maxFrameSize, 4 * 1024 * 1024)
        XCTAssertEqual(defaults.limits.maxBatchLength, 1024)
        XCTAssertEqual(defaults.limits.maxNestingDepth, 64)
        XCTAssertEqual(defaults.limits.maxConnections, 4096)
        XCTAssertEqual(defaults.limits.maxCallsPerConnection, 128)
        XCTAssertEqual(defaults.limits.maxBufferedBytes, 128 << 20)
        XCTAssertEqual(defaults.limits.maxBufferedBytesPerPeer, 16 << 20)
        XCTAssertEqual(defaults.limits.administrators, [.user("root"), .group("rpcd")])
        XCTAssertEqual(defaults.limits.frameTimeout, .seconds(60))
        XCTAssertEqual(defaults.limits.idleTimeout, .seconds(300))
        XCTAssertEqual(defaults.logLevel, .info)
        XCTAssertEqual(ServerConfiguration.defaultPath, "/etc/rpcd/rpcd.conf")
    }

    func testEmptyFileAndEmptySectionGiveDefaults() throws {
        XCTAssertEqual(try configuration(""), .defaults)
        XCTAssertEqual(try configuration("# nothing\n[Server]\n"), .defaults)
        XCTAssertEqual(try ServerConfiguration(documents: []), .defaults)
    }

    func testEveryKeyIsApplied() throws {
        let text = """
            [Server]
            Listen=[::1]:9000
            Threads=8
            MaxFrameSize=1M
            MaxBatchLength=10
            MaxNestingDepth=32
            MaxConnections=100
            MaxCallsPerConnection=4
            IdleTimeout=1min 30s
            LogLevel=debug
            """
        let expected = ServerConfiguration(
            listen: [.tcp(host: "::1", port: 9000)], threads: 8,
            limits: ConnectionLimits {
                $0.maxFrameSize = 1 << 20
                $0.maxBatchLength = 10
                $0.maxNestingDepth = 32
                $0.maxConnections = 100
                $0.maxCallsPerConnection = 4
                $0.idleTimeout = .seconds(90)
            },
            logLevel: .debug)
        XCTAssertEqual(try configuration(text), expected)
    }

    func testLaterAssignmentsOverrideEarlierOnes() throws {
        let config = try configuration("[Server]\nMaxConnections=10\nLogLevel=error\n[Server]\nMaxConnections=20\n")
        XCTAssertEqual(config.limits.maxConnections, 20)
        XCTAssertEqual(config.logLevel, .error)
    }

    func testEmptyAssignmentResetsToTheDefault() throws {
        let config = try configuration("[Server]\nMaxConnections=10\nMaxConnections=\nThreads=4\nThreads=\nIdleTimeout=1s\nIdleTimeout=\n")
        XCTAssertEqual(config, .defaults)
    }

    func testThreadsTakesAutoOrACount() throws {
        XCTAssertNil(try configuration("[Server]\nThreads=4\nThreads=auto\n").threads)
        XCTAssertEqual(try configuration("[Server]\nThreads=1024\n").threads, 1024)
        XCTAssertEqual(
            configError { try configuration("[Server]\nThreads=0\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: value 0 for Threads= is out of range: expected an integer from 1 to 1024 or 'auto'")
        XCTAssertEqual(
            configError { try configuration("[Server]\nThreads=many\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'many' for Threads=: expected an integer from 1 to 1024 or 'auto'")
    }

    func testIdleTimeoutZeroAndInfinityDisable() throws {
        XCTAssertNil(try configuration("[Server]\nIdleTimeout=0\n").limits.idleTimeout)
        XCTAssertNil(try configuration("[Server]\nIdleTimeout=infinity\n").limits.idleTimeout)
        XCTAssertEqual(try configuration("[Server]\nIdleTimeout=500ms\n").limits.idleTimeout, .milliseconds(500))
        XCTAssertEqual(try configuration("[Server]\nIdleTimeout=45\n").limits.idleTimeout, .seconds(45))
    }

    func testRangeBoundsOfEveryLimitedKey() throws {
        let cases: [(key: String, low: String, high: String, below: String, above: String)] = [
            ("Threads", "1", "1024", "0", "1025"),
            ("MaxFrameSize", "64", "1G", "63", "1073741825"),
            ("MaxBatchLength", "1", "1000000", "0", "1000001"),
            ("MaxNestingDepth", "2", "512", "1", "513"),
            ("MaxConnections", "1", "1000000", "0", "1000001"),
            ("MaxCallsPerConnection", "1", "65536", "0", "65537"),
            ("MaxBufferedBytes", "64K", "1T", "65535", "1099511627777"),
            ("FrameTimeout", "1s", "365d", "999ms", "366d"),
        ]
        for item in cases {
            XCTAssertNoThrow(try configuration("[Server]\n\(item.key)=\(item.low)\n"), item.key)
            XCTAssertNoThrow(try configuration("[Server]\n\(item.key)=\(item.high)\n"), item.key)
            for bad in [item.below, item.above] {
                let error = configError { try configuration("[Server]\n\n\(item.key)=\(bad)\n") }
                XCTAssertEqual(error?.line, 3, item.key)
                XCTAssertEqual(error?.file, "/etc/rpcd/rpcd.conf")
                XCTAssertTrue(error?.message.hasPrefix("value \(bad) for \(item.key)= is out of range: expected ") ?? false, "\(error as Any)")
            }
        }
    }

    /// Time spans longer than a year used to pass and trap later, when converted to nanoseconds (issue 14).
    func testTimeSpansLongerThanAYearAreRefusedWhereTheyAreRead() throws {
        for key in ["IdleTimeout", "SlowCallThreshold"] {
            XCTAssertNoThrow(try configuration("[Server]\n\(key)=365d\n"), key)
            XCTAssertNoThrow(try configuration("[Server]\n\(key)=infinity\n"), key)
            for tooLong in ["300years", "366d", "9223372036s"] {
                XCTAssertEqual(
                    configError { try configuration("[Server]\n\(key)=\(tooLong)\n") }?.description,
                    "/etc/rpcd/rpcd.conf:2: value \(tooLong) for \(key)= is out of range: expected a time span from 0 to 365d (or infinity)")
            }
        }
    }

    /// A frame without a deadline could be trickled for ever (issue 14): `FrameTimeout=` takes no infinity.
    func testFrameTimeoutMustBeFinite() throws {
        XCTAssertEqual(try configuration("[Server]\nFrameTimeout=2min\n").limits.frameTimeout, .seconds(120))
        for endless in ["infinity", "0"] {
            XCTAssertEqual(
                configError { try configuration("[Server]\nFrameTimeout=\(endless)\n") }?.line, 2, endless)
        }
    }

    func testBadValuesNameFileLineKeyAndExpectedForm() {
        XCTAssertEqual(
            configError { try configuration("[Server]\nMaxFrameSize=16MB\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value '16MB' for MaxFrameSize=: expected a size in bytes with an optional K, M, G or T suffix (base 1024), such as 16M")
        XCTAssertEqual(
            configError { try configuration("[Server]\nMaxFrameSize=2G\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: value 2G for MaxFrameSize= is out of range: expected a size from 64 to 1G")
        XCTAssertEqual(
            configError { try configuration("[Server]\nIdleTimeout=soon\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'soon' for IdleTimeout=: expected a time span such as 30s, 5min, 1min 30s or 500ms, or infinity")
        XCTAssertEqual(
            configError { try configuration("[Server]\nMaxConnections=10 # was 4096\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value '10 # was 4096' for MaxConnections=: expected an integer from 1 to 1000000 (comments must be on lines of their own)")
        XCTAssertEqual(
            configError { try configuration("[Server]\nLogLevel=loud\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'loud' for LogLevel=: expected one of trace, debug, info, notice, warning, error, critical")
    }

    func testLimitsMatchTheDocumentedRanges() {
        XCTAssertEqual(RPCLimits.threads.range, 1...1024)
        XCTAssertEqual(RPCLimits.maxFrameSize.range, 64...1_073_741_824)
        XCTAssertEqual(RPCLimits.maxBatchLength.range, 1...1_000_000)
        XCTAssertEqual(RPCLimits.maxNestingDepth.range, 2...512)
        XCTAssertEqual(RPCLimits.maxConnections.range, 1...1_000_000)
        XCTAssertEqual(RPCLimits.maxCallsPerConnection.range, 1...65536)
    }
}
