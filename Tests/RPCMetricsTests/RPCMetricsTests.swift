import Foundation
import RPCMetrics
import RPCProtocol
import XCTest

final class RPCMetricsTests: XCTestCase {
    func testACallIsCountedByOutcomeAndTimed() throws {
        let metrics = RPCMetrics()
        let add = metrics.method(service: "calc", method: "add", documentedCodes: [1001])
        add.started()
        add.ended()
        add.succeeded(after: .microseconds(30))
        add.started()
        add.ended()
        add.failed(code: RPCError.Code.invalidParams, after: .milliseconds(2))
        add.started()
        add.ended()
        add.failed(code: 1001, after: .milliseconds(2))
        // Answered at once (a built-in method): never in flight.
        add.failed(code: 77, after: .milliseconds(2))
        add.refused()
        let samples = RPCMetricSamples(exposition: metrics.exposition())
        let labels = ["service": "calc", "method": "add"]
        func calls(_ outcome: String) -> Double { samples.sum("rpcd_calls_total", labels.merging(["outcome": outcome]) { $1 }) }
        XCTAssertEqual(calls("ok"), 1)
        XCTAssertEqual(calls("-32602"), 1)
        XCTAssertEqual(calls("1001"), 1, "a documented code keeps its number")
        XCTAssertEqual(calls("other"), 1, "an undocumented one does not become a label")
        XCTAssertEqual(calls("-32007"), 1)
        XCTAssertEqual(samples.sum("rpcd_access_denied_total", ["service": "calc"]), 1)
        XCTAssertEqual(samples.sum("rpcd_call_duration_seconds_count", labels), 4, "refused calls never ran")
        XCTAssertEqual(samples.sum("rpcd_call_duration_seconds_bucket", labels.merging(["le": "0.00005"]) { $1 }), 1)
        XCTAssertEqual(samples.sum("rpcd_calls_in_flight"), 0)
    }

    /// The lock-free histogram writes what swift-prometheus' did: cumulative buckets with bounds as plain
    /// decimals, `+Inf`, the sum in seconds and the count, under one `# TYPE` for every method.
    func testDurationsAreRenderedAsAPrometheusHistogram() throws {
        let metrics = RPCMetrics()
        let add = try XCTUnwrap(metrics.method(service: "calc", method: "add", documentedCodes: []))
        _ = metrics.method(service: "calc", method: "sub", documentedCodes: [])
        add.succeeded(after: .microseconds(10))
        add.succeeded(after: .microseconds(11))
        add.succeeded(after: .milliseconds(2500))
        add.succeeded(after: .seconds(11))
        let text = metrics.exposition(includingProcess: false)
        XCTAssertEqual(text.components(separatedBy: "# TYPE rpcd_call_duration_seconds histogram\n").count, 2)
        for line in [
            #"rpcd_call_duration_seconds_bucket{service="calc",method="add",le="0.00001"} 1"#,
            #"rpcd_call_duration_seconds_bucket{service="calc",method="add",le="0.000025"} 2"#,
            #"rpcd_call_duration_seconds_bucket{service="calc",method="add",le="2.5"} 3"#,
            #"rpcd_call_duration_seconds_bucket{service="calc",method="add",le="1.0"} 2"#,
            #"rpcd_call_duration_seconds_bucket{service="calc",method="add",le="10.0"} 3"#,
            #"rpcd_call_duration_seconds_bucket{service="calc",method="add",le="+Inf"} 4"#,
            #"rpcd_call_duration_seconds_sum{service="calc",method="add"} 13.500021"#,
            #"rpcd_call_duration_seconds_count{service="calc",method="add"} 4"#,
            #"rpcd_call_duration_seconds_count{service="calc",method="sub"} 0"#,
        ] {
            XCTAssertTrue(text.contains(line + "\n"), line)
        }
        XCTAssertNotNil(metrics.method(service: "calc", method: "add", documentedCodes: []))
        XCTAssertEqual(
            metrics.exposition(includingProcess: false).components(separatedBy: #"_count{service="calc",method="add"} 4"#).count, 2,
            "a reloaded registry's method finds its histogram")
    }

    func testEveryExportedFamilyIsInTheCatalogue() throws {
        let metrics = RPCMetrics()
        _ = metrics.method(service: "calc", method: "add", documentedCodes: [])
        _ = metrics.listener("127.0.0.1:7390", tls: true)
        let text = metrics.exposition()
        let names = Set(RPCMetricFamily.all.map(\.name))
        for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let name = String(line.split(separator: " ")[2])
            XCTAssertTrue(names.contains(name), "\(name) is exported but not in RPCMetricFamily.all")
        }
        XCTAssertTrue(text.contains("process_resident_memory_bytes "))
        XCTAssertTrue(text.contains("rpcd_build_info{version=\"\(RPCDaemonVersion.version)\""))
    }

    /// `Metrics=no` exports nothing and keeps no histogram, but counts: `rpcd.info` reads true numbers.
    func testDisabledMetricsExportNothingButCount() throws {
        let metrics = RPCMetrics(enabled: false)
        let add = metrics.method(service: "calc", method: "add", documentedCodes: [])
        add.started()
        add.ended()
        add.succeeded(after: .microseconds(30))
        metrics.listener("127.0.0.1:7390", tls: false).accepted.increment()
        XCTAssertEqual(metrics.exposition(), "")
        let snapshot = metrics.snapshot()
        XCTAssertEqual(snapshot.callsAnswered, 1)
        XCTAssertNil(try XCTUnwrap(snapshot.methods.first { $0.method == "add" }).duration)
        XCTAssertEqual(snapshot.listeners.map(\.accepted), [1])
    }

    /// The typed snapshot and the exposition read the same series: every figure of one is in the other.
    func testSnapshotAgreesWithTheExposition() throws {
        let metrics = RPCMetrics()
        let add = metrics.method(service: "calc", method: "add", documentedCodes: [])
        for elapsed in [Duration.microseconds(5), .microseconds(30), .milliseconds(3), .seconds(20)] {
            add.started()
            add.ended()
            add.succeeded(after: elapsed)
        }
        add.started()
        add.ended()
        add.failed(code: RPCError.Code.callCancelled, after: .milliseconds(1))
        add.started()
        let listener = metrics.listener("127.0.0.1:7390", tls: true)
        listener.accepted.increment()
        listener.connections.increment()
        listener.received.increment(by: 300)
        listener.refused(.tlsHandshake)
        listener.tlsSucceeded?.increment()

        let samples = RPCMetricSamples(exposition: metrics.exposition())
        let snapshot = metrics.snapshot()
        let method = try XCTUnwrap(snapshot.methods.first { $0.service == "calc" && $0.method == "add" })
        let labels = ["service": "calc", "method": "add"]
        XCTAssertEqual(method.calls, 5)
        XCTAssertEqual(Double(method.calls), samples.sum("rpcd_calls_total", labels))
        XCTAssertEqual(Double(method.calls("-32011")), samples.sum("rpcd_calls_total", labels.merging(["outcome": "-32011"]) { $1 }))
        let duration = try XCTUnwrap(method.duration)
        XCTAssertEqual(duration.count, 5)
        XCTAssertEqual(Double(duration.count), samples.sum("rpcd_call_duration_seconds_count", labels))
        XCTAssertEqual(duration.sumSeconds, samples.sum("rpcd_call_duration_seconds_sum", labels), accuracy: 1e-9)
        for bucket in duration.buckets {
            let exported = samples.series("rpcd_call_duration_seconds_bucket", labels).first {
                Double($0.labels["le"] ?? "") == bucket.bound
            }
            XCTAssertEqual(exported?.value, Double(bucket.count), "le=\(bucket.bound)")
        }
        XCTAssertEqual(duration.buckets.first?.count, 1, "5 µs is in the first bucket, 10 µs")
        XCTAssertEqual(duration.buckets.last?.count, 4, "20 s is above every bound: only in +Inf")
        XCTAssertEqual(samples.sum("rpcd_call_duration_seconds_bucket", labels.merging(["le": "+Inf"]) { $1 }), 5)
        XCTAssertEqual(snapshot.callsInFlight, 1)
        XCTAssertEqual(samples.sum("rpcd_calls_in_flight"), 1)
        XCTAssertEqual(snapshot.listeners, [RPCMetricsSnapshot.Listener(
            listener: "127.0.0.1:7390", open: 1, accepted: 1, refused: 1, receivedBytes: 300, sentBytes: 0,
            tlsHandshakes: 1, tlsResumed: 0)])
        XCTAssertEqual(samples.sum("rpcd_connections_refused_total", ["listener": "127.0.0.1:7390"]), 1)
        XCTAssertEqual(samples.sum("rpcd_received_bytes_total"), 300)
    }

    /// Label values are escaped as the text format asks (a Unix socket's path may hold anything).
    func testLabelValuesAreEscaped() {
        let metrics = RPCMetrics()
        metrics.listener("/run/a\"b\\c\nd.sock", tls: false).accepted.increment()
        let text = metrics.exposition(includingProcess: false)
        XCTAssertTrue(text.contains(#"rpcd_connections_accepted_total{listener="/run/a\"b\\c\nd.sock"} 1"#), text)
        XCTAssertEqual(RPCMetricSamples(exposition: text).sum("rpcd_connections_accepted_total", ["listener": "/run/a\"b\\c\nd.sock"]), 1)
    }

    /// A method declared again (a reload) counts on in the same series, with the codes it now documents.
    func testAMethodDeclaredAgainKeepsItsSeries() {
        let metrics = RPCMetrics()
        let first = metrics.method(service: "calc", method: "add", documentedCodes: [])
        first.succeeded(after: .microseconds(1))
        let again = metrics.method(service: "calc", method: "add", documentedCodes: [1001])
        XCTAssertTrue(first === again)
        XCTAssertEqual(again.outcome(1001), "1001")
        XCTAssertEqual(metrics.snapshot().methods.filter { $0.method == "add" }.map(\.calls), [1])
    }

    func testSamplesReadEscapedLabels() {
        let samples = RPCMetricSamples(exposition: """
            # TYPE x counter
            x{a="q\\"uo\\\\te",b="n\\nl"} 3
            y 2.5
            z_bucket{le="+Inf"} 7
            """)
        XCTAssertEqual(samples.samples.first?.labels, ["a": "q\"uo\\te", "b": "n\nl"])
        XCTAssertEqual(samples.sum("y"), 2.5)
        XCTAssertEqual(samples.series("z_bucket").first?.labels["le"], "+Inf")
    }
}

/// docs/OPERATIONS.md's table of metrics lists exactly the catalogue, with each family's type and labels.
final class MetricsDocumentationTests: XCTestCase {
    func testOperationsDocumentsEveryMetric() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: repository.appendingPathComponent("docs/OPERATIONS.md"), encoding: .utf8)
        let table = try XCTUnwrap(text.range(of: "### What each metric means"))
        var documented: [String: (kind: String, labels: [String])] = [:]
        for line in text[table.upperBound...].split(separator: "\n") {
            guard line.hasPrefix("| `") else {
                if !documented.isEmpty && !line.hasPrefix("|") { break }
                continue
            }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let name = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let labels = cells[2] == "—" ? [] : cells[2].split(separator: ",").map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: "` "))
            }
            documented[name] = (cells[1], labels)
        }
        XCTAssertEqual(Set(documented.keys), Set(RPCMetricFamily.all.map(\.name)), "docs/OPERATIONS.md's table")
        for family in RPCMetricFamily.all {
            XCTAssertEqual(documented[family.name]?.kind, family.kind.rawValue, family.name)
            XCTAssertEqual(documented[family.name]?.labels, family.labels, family.name)
        }
    }
}
