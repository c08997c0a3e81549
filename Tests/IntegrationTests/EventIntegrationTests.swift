#if canImport(Glibc)
import Glibc
#endif
import Foundation
import RPCClient
import RPCJSON
import RPCTestSupport
import XCTest

/// Events end to end: the example modules emit (`kv.changed` from Swift, `sysinfo.load` from C), clients
/// subscribe over plain sockets (`RawConnection`, no client library) and the real daemon delivers.
final class EventIntegrationTests: XCTestCase {
    private var handlers: HandlersDirectory!

    override func setUpWithError() throws {
        handlers = try HandlersDirectory()
    }

    override func tearDown() {
        handlers = nil
    }

    private static let kv = "[Handler]\nModule=kv\n"

    private func request(_ method: String, _ params: String, id: Int = 1) -> String {
        #"{"jsonrpc":"2.0","method":"\#(method)","params":\#(params),"id":\#(id)}"#
    }

    /// Subscribes `connection` to `event`; returns the subscription id.
    private func subscribe(_ connection: RawConnection, _ event: String, file: StaticString = #filePath, line: UInt = #line) throws -> Int {
        let reply = try connection.call(request("rpc.subscribe", #"{"event":"\#(event)"}"#))
        XCTAssertEqual(reply["result"]?["event"]?.stringValue, event, file: file, line: line)
        return try XCTUnwrap(reply["result"]?["subscription"]?.intValue, "\(reply)", file: file, line: line)
    }

    private func eventCounters(_ daemon: DaemonProcess) throws -> JSONValue {
        let info = try RawConnection(daemon.tcpEndpoint).call(request("rpcd.info", "[]"))
        return try XCTUnwrap(info["result"]?["events"])
    }

    func testKVChangesReachASubscriberUntilItUnsubscribes() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["kv": Self.kv], handlers: handlers))
        let watcher = try RawConnection(daemon.tcpEndpoint)
        let id = try subscribe(watcher, "kv.changed")
        let admin = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try admin.call(request("kv.set", #"{"key":"a","value":{"n":[1]}}"#))["result"], true)
        XCTAssertEqual(try admin.call(request("kv.delete", #"["a"]"#))["result"], true)
        XCTAssertEqual(try admin.call(request("kv.delete", #"["a"]"#))["result"], false, "no change, no event")

        let set = try watcher.receiveJSON()
        XCTAssertEqual(set["method"], "rpc.event")
        XCTAssertNil(set["id"], "events are notifications")
        XCTAssertEqual(set["params"], ["subscription": .number(id), "event": "kv.changed", "seq": 1, "data": ["key": "a", "value": ["n": [1]]]])
        let deleted = try watcher.receiveJSON()
        XCTAssertEqual(deleted["params"]?["seq"], 2)
        XCTAssertEqual(deleted["params"]?["data"], ["key": "a", "deleted": true])

        XCTAssertEqual(try watcher.call(request("rpc.unsubscribe", #"{"subscription":\#(id)}"#))["result"], true)
        XCTAssertEqual(try watcher.call(request("rpc.unsubscribe", "[\(id)]"))["result"], false, "already ended")
        XCTAssertEqual(try admin.call(request("kv.set", #"["b",2]"#))["result"], true)
        // The next frame is the ping's reply, not an event.
        XCTAssertEqual(try watcher.call(request("rpcd.ping", "[]", id: 9))["id"], 9)
        XCTAssertEqual(try eventCounters(daemon)["delivered"], 2)
    }

    func testAConnectionThatNeverSubscribesGetsNoEvents() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["kv": Self.kv], handlers: handlers))
        let bystander = try RawConnection(daemon.tcpEndpoint)
        let admin = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try admin.call(request("kv.set", #"["a",1]"#))["result"], true)
        XCTAssertEqual(try bystander.call(request("rpcd.ping", "[]", id: 3))["id"], 3)
        XCTAssertEqual(try eventCounters(daemon)["published"], 1)
    }

    func testSubscribingRefusesUnknownEventsAndFiltersAndHonoursTheLimit() throws {
        let daemon = try DaemonProcess(DaemonOptions(config: "MaxSubscriptionsPerConnection=1\n", handlerFiles: ["kv": Self.kv], handlers: handlers))
        let c = try RawConnection(daemon.tcpEndpoint)
        let unknown = try c.call(request("rpc.subscribe", #"{"event":"kv.nothing"}"#))
        XCTAssertEqual(unknown["error"]?["code"], -32602)
        XCTAssertTrue(unknown["error"]?["data"]?["detail"]?.stringValue?.contains("kv.nothing") ?? false)
        XCTAssertEqual(try c.call(request("rpc.subscribe", #"{"event":"kv.changed","filter":{"key":"a"}}"#))["error"]?["code"], -32602)
        _ = try subscribe(c, "kv.changed")
        let second = try c.call(request("rpc.subscribe", #"["kv.changed"]"#))
        XCTAssertEqual(second["error"]?["code"], -32012)
        XCTAssertEqual(second["error"]?["data"]?["limit"], 1)
    }

    func testDiscoverListsEventsWithTheirSchemas() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["kv": Self.kv, "sysinfo": "[Handler]\nModule=sysinfo\n"], handlers: handlers))
        let document = try RawConnection(daemon.tcpEndpoint).call(request("rpc.discover", "[]"))["result"]
        let events = try XCTUnwrap(document?["x-events"]?.arrayValue)
        XCTAssertEqual(events.compactMap { $0["name"]?.stringValue }.sorted(), ["kv.changed", "sysinfo.load"])
        XCTAssertEqual(events.first { $0["name"] == "kv.changed" }?["schema"]?["required"], ["key"])
        XCTAssertEqual(events.first { $0["name"] == "sysinfo.load" }?["schema"]?["required"], ["loadavg"])
    }

    func testACModuleEmitsFromItsOwnThread() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["sysinfo": "[Handler]\nModule=sysinfo\n[Config]\nLoadInterval=0.05\n"], handlers: handlers))
        let watcher = try RawConnection(daemon.tcpEndpoint)
        let id = try subscribe(watcher, "sysinfo.load")
        for _ in 0..<3 {
            let event = try watcher.receiveJSON()
            XCTAssertEqual(event["params"]?["subscription"]?.intValue, id)
            XCTAssertEqual(event["params"]?["data"]?["loadavg"]?.arrayValue?.count, 3)
        }
    }

    func testClosingTheConnectionEndsItsSubscriptions() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["kv": Self.kv], handlers: handlers))
        var watcher: RawConnection? = try RawConnection(daemon.tcpEndpoint)
        _ = try subscribe(watcher!, "kv.changed")
        _ = try subscribe(watcher!, "kv.changed")
        XCTAssertEqual(try eventCounters(daemon)["subscriptions"], 2)
        watcher = nil
        // The close reaches the daemon asynchronously, with no event a test sees: poll its counter.
        try blockingWaitUntil("the closed connection's subscriptions to end") { try eventCounters(daemon)["subscriptions"] == 0 }
        let admin = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try admin.call(request("kv.set", #"["a",1]"#))["result"], true)
        XCTAssertEqual(try eventCounters(daemon)["delivered"], 0)
    }

    /// A subscriber that stops reading loses events (counted, and told how many), while the module's calls and
    /// another subscriber of the same events go on unaffected.
    func testASlowSubscriberLosesEventsWithoutSlowingTheModuleOrOthers() throws {
        let daemon = try DaemonProcess(DaemonOptions(config: "MaxQueuedEvents=64\n", handlerFiles: ["kv": Self.kv], handlers: handlers))
        let slow = try RawConnection(daemon.tcpEndpoint, receiveBufferSize: 4096)
        let slowID = try subscribe(slow, "kv.changed")
        let fast = try RawConnection(daemon.tcpEndpoint)
        _ = try subscribe(fast, "kv.changed")

        // 32 KiB values under one key: the store stays small, the slow subscriber's buffers (its socket's, the
        // server's, then its queue) fill within a few hundred events.
        let sets = 600
        let value = String(repeating: "x", count: 32 << 10)
        let fastReceived = Counter()
        nonisolated(unsafe) let reading = fast  // only the reader thread uses it from here on
        let readerEnded = DispatchSemaphore(value: 0)
        let reader = Thread {
            defer { readerEnded.signal() }
            for _ in 0..<sets {
                // Only a look at the frame's head: this reader must keep up, also in a debug build under load.
                guard let frame = try? reading.receiveFrame(), frame.hasPrefix(#"{"jsonrpc":"2.0","method":"rpc.event""#) else { return }
                fastReceived.add()
            }
        }
        reader.start()
        let admin = try RawConnection(.unix(path: daemon.socketPath))
        for index in 0..<sets {
            XCTAssertEqual(try admin.call(request("kv.set", #"["k","\#(value)"]"#, id: index))["result"], true)
        }
        // The reader ends after the last event, or at a receive that timed out (10 s) or read something else.
        XCTAssertEqual(readerEnded.wait(timeout: .now() + 60), .success, "the reader ended")
        XCTAssertEqual(fastReceived.value, sets, "the subscriber that reads got every event")

        let counters = try eventCounters(daemon)
        let lost = try XCTUnwrap(counters["lost"]?.intValue)
        XCTAssertGreaterThan(lost, 0)
        // The slow subscriber, reading at last: events in order, then the loss notice, then events again, with
        // seq showing the gap; lost and received together account for every event.
        var received = 0
        var told = 0
        var lastSeq = 0
        while received + told < sets {
            let frame = try slow.receiveJSON()
            XCTAssertEqual(frame["params"]?["subscription"]?.intValue, slowID)
            if frame["method"] == "rpc.eventsLost" {
                told += try XCTUnwrap(frame["params"]?["count"]?.intValue)
            } else {
                let seq = try XCTUnwrap(frame["params"]?["seq"]?.intValue)
                XCTAssertGreaterThan(seq, lastSeq)
                lastSeq = seq
                received += 1
            }
        }
        XCTAssertEqual(lastSeq, sets)
        XCTAssertEqual(told, lost)
    }

    /// Reload: a service that stays keeps its subscribers (the new instance's events reach them); a service
    /// that goes away ends its subscriptions with `rpc.subscriptionEnded`.
    func testReloadKeepsSubscribersOfServicesThatStayAndTellsTheOthers() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["kv": Self.kv, "sysinfo": "[Handler]\nModule=sysinfo\n[Config]\nLoadInterval=0\n"], handlers: handlers))
        let watcher = try RawConnection(daemon.tcpEndpoint)
        let kvID = try subscribe(watcher, "kv.changed")
        let sysinfoID = try subscribe(watcher, "sysinfo.load")

        // kv gets a new instance (its configuration changed); sysinfo goes away.
        try handlers.write("kv", Self.kv + "[Config]\nMaxKeys=5\n")
        try handlers.remove("sysinfo")
        try daemon.reload()

        let ended = try watcher.receiveJSON()
        XCTAssertEqual(ended["method"], "rpc.subscriptionEnded")
        XCTAssertEqual(ended["params"], ["subscription": .number(sysinfoID), "reason": "service removed"])
        let admin = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try admin.call(request("kv.set", #"["a",1]"#))["result"], true)
        let event = try watcher.receiveJSON()
        XCTAssertEqual(event["params"]?["subscription"]?.intValue, kvID)
        XCTAssertEqual(event["params"]?["data"], ["key": "a", "value": 1])
    }

    func testAccessRulesApplyToSubscribing() throws {
        // kv's own rules: only the test's user (over the Unix socket) may read it; rpc.* keeps the shipped
        // rules, so a loopback TCP peer may call rpc.subscribe but not subscribe to kv's events.
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["kv": Self.kv + "[Access]\nAllow=user:root user:\(getuid())\nAllowRead=\n"], handlers: handlers))
        let outsider = try RawConnection(daemon.tcpEndpoint)
        let refused = try outsider.call(request("rpc.subscribe", #"{"event":"kv.changed"}"#))
        XCTAssertEqual(refused["error"]?["code"], -32007)
        XCTAssertEqual(refused["error"]?["data"]?["method"], "kv.changed")
        let local = try RawConnection(.unix(path: daemon.socketPath))
        _ = try subscribe(local, "kv.changed")
    }
}

/// `RPCClient.subscribe` and `rpcctl watch` against the real daemon.
final class EventClientTests: XCTestCase {
    private func set(_ daemon: DaemonProcess, _ key: String, _ value: JSONValue) async throws {
        let admin = try await RPCClient.connect(to: .unix(path: daemon.socketPath))
        defer { Task { await admin.close() } }
        _ = try await admin.call("kv.set", params: [.string(key), value])
    }

    private func openSubscriptions(_ client: RPCClient) async throws -> Int? {
        try await client.call("rpcd.info")["events"]?["subscriptions"]?.intValue
    }

    private struct Change: Decodable, Sendable, Equatable {
        var key: String
        var value: Int?
        var deleted: Bool?
    }

    func testEventsArriveTypedAndCancellingTheTaskUnsubscribes() async throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["kv"]))
        let client = try await RPCClient.connect(to: daemon.tcpEndpoint)
        let events = try await client.subscribe(to: "kv.changed", as: Change.self)
        XCTAssertEqual(events.event, "kv.changed")
        let reader = Task { () -> [Change] in
            var received: [Change] = []
            for try await item in events {
                if case .event(_, let change) = item { received.append(change) }
                if received.count == 2 { break }
            }
            return received
        }
        try await set(daemon, "a", 1)
        try await set(daemon, "b", 2)
        let received = try await reader.value
        XCTAssertEqual(received, [Change(key: "a", value: 1), Change(key: "b", value: 2)])

        // A second subscription, whose iterating task is cancelled: the server hears of it.
        let second = try await client.subscribe(to: "kv.changed")
        let openBefore = try await openSubscriptions(client)
        XCTAssertEqual(openBefore, 2, "the first sequence is still held, so its subscription stays")
        let waiting = Task { for try await _ in second {} }
        waiting.cancel()
        _ = await waiting.result
        try await waitUntil("cancelling the iterating task to unsubscribe") { try await openSubscriptions(client) == 1 }
        await client.close()
    }

    func testAPayloadThatDoesNotDecodeEndsTheSequenceWithAnError() async throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["kv"]))
        let client = try await RPCClient.connect(to: daemon.tcpEndpoint)
        defer { Task { await client.close() } }
        let events = try await client.subscribe(to: "kv.changed", as: Change.self)
        try await set(daemon, "a", "not a number")
        let failure = await Self.failure(of: events)
        guard case .protocolViolation(let detail)? = failure else { return XCTFail("\(String(describing: failure))") }
        XCTAssertTrue(detail.contains("kv.changed"), detail)
    }

    /// How `events` ends: the error it throws, or nil when it just ends.
    private static func failure<Payload>(of events: RPCEventSubscription<Payload>) async -> RPCClientError? {
        var iterator = events.makeAsyncIterator()
        do {
            while try await iterator.next() != nil {}
            return nil
        } catch {
            return error
        }
    }

    func testRefusedSubscriptionsThrowTheServersError() async throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["kv"]))
        let client = try await RPCClient.connect(to: daemon.tcpEndpoint)
        defer { Task { await client.close() } }
        do {
            _ = try await client.subscribe(to: "kv.nothing")
            XCTFail("subscribed to an event nobody declares")
        } catch {
            XCTAssertEqual(error, .remote(RPCError(code: -32602, message: "Invalid params", data: ["detail": "no event 'kv.nothing' (rpc.discover lists them under x-events)"])))
        }
    }

    func testASubscriptionComesBackAfterTheDaemonRestartsWithAGapMarker() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-resubscribe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let shared = directory.appendingPathComponent("shared.sock").path
        var daemon = try DaemonProcess(DaemonOptions(config: "Listen=\(shared)\n", modules: ["kv"]))
        let client = try await RPCClient.connect(to: .unix(path: shared))
        var events = try await client.subscribe(to: "kv.changed", as: Change.self).makeAsyncIterator()
        _ = try await client.call("kv.set", params: ["a", 1])
        guard case .event(1, let first)? = try await events.next() else { return XCTFail("no first event") }
        XCTAssertEqual(first.key, "a")

        XCTAssertEqual(daemon.terminate(), 0)
        daemon = try DaemonProcess(DaemonOptions(config: "Listen=\(shared)\n", modules: ["kv"]))
        guard case .resubscribed? = try await events.next() else { return XCTFail("no gap marker after the restart") }
        // The marker is yielded once the new subscription is registered: the next change reaches it.
        _ = try await client.call("kv.set", params: ["b", 2], options: RPCCallOptions(timeout: .seconds(10)))
        guard case .event(1, let second)? = try await events.next() else { return XCTFail("no event after the restart") }
        XCTAssertEqual(second.key, "b")

        // Closing the client ends the sequence for good.
        await client.close()
        do {
            while try await events.next() != nil {}
        } catch {
            XCTAssertEqual(error, .connectionClosed)
        }
        _ = daemon
    }

    func testRpcctlWatchPrintsEventsAsJSONLines() async throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["kv"]))
        let watcher = Task.detached {
            try DaemonProcess.runTool("rpcctl", ["watch", "kv.changed", "--count", "2", "--json", "--address", daemon.tcpEndpoint.description])
        }
        // Set until the watcher, which subscribes on its own schedule, has seen two events.
        let client = try await RPCClient.connect(to: daemon.tcpEndpoint)
        try await waitUntil("rpcctl watch to subscribe") { try await openSubscriptions(client) == 1 }
        await client.close()
        try await set(daemon, "a", 1)
        try await set(daemon, "b", ["x": true])
        let (status, stdout, stderr) = try await watcher.value
        XCTAssertEqual(status, 0, stderr)
        XCTAssertEqual(
            stdout.split(separator: "\n").map(String.init),
            [#"{"event":"kv.changed","seq":1,"data":{"key":"a","value":1}}"#,
             #"{"event":"kv.changed","seq":2,"data":{"key":"b","value":{"x":true}}}"#])
    }
}
