// rpcd-systemtest-client ADDRESS STOP_FILE
//
// An application on the Swift client library, for the restart system test (test_systemd.py): through the
// typed proxies, four tasks alternate kv.set (key restart-swift-N: it changes state, so it is never sent
// again when its fate is unknown) and calc.add (read-only: the proxy marks it idempotent), and one task holds
// a kv.changed subscription, until STOP_FILE exists. No handling of its own: the client sends again what rpcd
// did not run and subscribes again. Prints one JSON line: calls that succeeded and failed (with the first
// errors), the last acknowledged value of each key, resubscriptions, events since the last one, and the
// longest gap between two successful calls.
import Glibc
import RPCClient
import RPCExampleInterfaces
import RPCJSON
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count == 3, let endpoint = try? RPCEndpoint(parsing: arguments[1]) else {
    print("usage: rpcd-systemtest-client ADDRESS STOP_FILE")
    exit(64)
}
let stopFile = arguments[2]

struct WrongSum: Error {}

struct Report {
    var ok = 0
    var failed = 0
    var errors: [String] = []
    var acknowledged: [String: Int] = [:]
    var resubscribed = 0
    var events_after_last = 0
    var max_gap_ms = 0.0
    var lastSuccess = ContinuousClock.now

    mutating func succeeded() {
        let now = ContinuousClock.now
        let gap = now - lastSuccess
        let milliseconds = Double(gap.components.seconds) * 1000 + Double(gap.components.attoseconds) / 1e15
        max_gap_ms = max(max_gap_ms, (milliseconds * 10).rounded() / 10)
        lastSuccess = now
        ok += 1
    }

    mutating func failed(_ error: any Error) {
        failed += 1
        if errors.count < 20 { errors.append(String("\(error)".prefix(200))) }
    }

    var json: JSONValue {
        [
            "ok": .number(String(ok)), "failed": .number(String(failed)), "errors": .array(errors.map { .string($0) }),
            "acknowledged": .object(acknowledged.mapValues { .number(String($0)) }),
            "resubscribed": .number(String(resubscribed)), "events_after_last": .number(String(events_after_last)),
            "max_gap_ms": .number(String(max_gap_ms)),
        ]
    }
}

let report = Mutex(Report())
let client: RPCClient
do {
    client = try await RPCClient.connect(to: endpoint)
} catch {
    print(#"{"error":"cannot connect: \#(error)"}"#)
    exit(69)
}
let calc = try await client.proxy(CalculatorProxy.self)
let kv = try await client.proxy(KeyValueStoreProxy.self)

let watcher = Task {
    do {
        for try await item in try await client.subscribe(to: "kv.changed") {
            switch item {
            case .event: report.withLock { $0.events_after_last += 1 }
            case .lost: break
            case .resubscribed:
                report.withLock {
                    $0.resubscribed += 1
                    $0.events_after_last = 0
                }
            }
        }
    } catch {
        report.withLock { $0.failed(error) }
    }
}

await withTaskGroup(of: Void.self) { group in
    for n in 0..<4 {
        group.addTask {
            var i = 0
            while access(stopFile, F_OK) != 0 {
                i += 1
                do {
                    if i % 2 == 1 {
                        _ = try await kv.set(key: "restart-swift-\(n)", value: .number(String(i)))
                        report.withLock { $0.acknowledged["restart-swift-\(n)"] = i }
                    } else if try await calc.add(a: Double(i), b: 1) != Double(i + 1) {
                        throw WrongSum()
                    }
                    report.withLock { $0.succeeded() }
                } catch {
                    report.withLock { $0.failed(error) }
                }
            }
        }
    }
}
try await Task.sleep(for: .milliseconds(200))  // the last sets' events
watcher.cancel()
await client.close()
print(report.withLock { $0.json }.jsonText)
