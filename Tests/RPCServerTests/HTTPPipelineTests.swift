import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCCore
import RPCLogging
import RPCProtocol
@testable import RPCServer
import RPCTestSupport
import XCTest

/// Drives the exact pipeline of an HTTP listener's connection (`HTTPConnectionPipeline`) with raw request
/// bytes through an `EmbeddedChannel`, and reads back the raw response bytes.
final class HTTPPipelineTests: XCTestCase {
    private var channel: EmbeddedChannel!
    private var router: RPCRouter!
    private var ledger: PeerLedger!

    private func makeChannel(
        http: HTTPSettings = HTTPSettings(), resources: [HTTPResource] = [], access: RPCAccessPolicy = .unrestricted,
        peer: RPCPeer = .ip("127.0.0.1", port: 5), socket: HeldWrites? = nil, change: (inout ConnectionLimits) -> Void = { _ in }
    ) throws {
        router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: [SleepEchoService(), RPCDiscoverService(), DaemonService(state: RPCServerState(), statistics: RPCStatistics())],
                access: access),
            parser: RPCEnvelopeParser())
        let limits = ConnectionLimits {
            $0.maxFrameSize = 4096
            $0.idleTimeout = nil
            change(&$0)
        }
        var configuration = RPCServer.Configuration(listen: [], limits: limits, http: http)
        configuration.httpResources = resources
        ledger = PeerLedger(limits: limits, administrators: RPCPeerSet([]), statistics: router.statistics)
        let account = try XCTUnwrap(ledger.open(peer))
        let connection = RPCConnectionInfo(id: 1, peer: peer, logger: Logger(label: "test"), account: account)
        channel = EmbeddedChannel()
        if let socket { try channel.pipeline.syncOperations.addHandler(socket) }
        channel.closeFuture.whenComplete { _ in account.close() }
        try HTTPConnectionPipeline.addHandlers(
            to: channel,
            .init(
                configuration: configuration, router: router, connection: connection,
                refusalLog: LogRateLimiter(burst: 10, per: .seconds(1)),
                policy: HTTPRequestPolicy(settings: http, machineNames: ["box", "box.local"])))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    }

    override func tearDown() {
        _ = try? channel?.finish()
    }

    private func send(_ text: String) throws {
        try channel.writeInbound(ByteBuffer(string: text))
    }

    private func post(
        _ body: String, path: String = "/rpc", contentType: String = "application/json", headers: String = "Host: 127.0.0.1:7380\r\n"
    ) -> String {
        "POST \(path) HTTP/1.1\r\n\(headers)Content-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    private func written() throws -> String {
        var bytes = ByteBuffer()
        while var part = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&part) }
        return bytes.readString(length: bytes.readableBytes) ?? ""
    }

    /// The status lines and bodies of the responses written so far, in order. After a refusal that closes the
    /// connection, NIO's decoder reports the cut-off request as the channel closes and its error handler writes
    /// a 400 no socket carries any more (an `EmbeddedChannel` records it): such tests look at the first.
    private func responses() throws -> [(status: String, headers: String, body: String)] {
        var rest = Substring(try written())
        var found: [(String, String, String)] = []
        while let headEnd = rest.range(of: "\r\n\r\n") {
            let head = rest[..<headEnd.lowerBound]
            let status = String(head.split(separator: "\r\n").first ?? "")
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            let bodyStart = headEnd.upperBound
            let body = rest[bodyStart...].utf8.prefix(length)
            found.append((status, String(head), String(decoding: body, as: UTF8.self)))
            rest = rest[rest.utf8.index(bodyStart, offsetBy: length)...]
        }
        return found
    }

    func testPostedCallIsAnsweredInA200Body() throws {
        try makeChannel()
        try send(post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#))
        let answers = try responses()
        XCTAssertEqual(answers.map(\.status), ["HTTP/1.1 200 OK"])
        XCTAssertEqual(answers.first?.body, #"{"jsonrpc":"2.0","result":"pong","id":1}"#)
        XCTAssertTrue(answers.first?.headers.contains("content-type: application/json") ?? false)
        XCTAssertTrue(channel.isActive, "kept alive")
    }

    func testBatchErrorsAndNotificationsMapToJSONRPCNotToStatus() throws {
        try makeChannel()
        try send(post(#"[{"jsonrpc":"2.0","method":"echo.echo","params":[1],"id":1},{"jsonrpc":"2.0","method":"no.such","id":2}]"#))
        try send(post(#"{"jsonrpc":"2.0","method":"echo.echo","params":[1]}"#))
        try send(post(#"{"jsonrpc":"2.0","method""#))
        let answers = try responses()
        XCTAssertEqual(answers.map(\.status), ["HTTP/1.1 200 OK", "HTTP/1.1 204 No Content", "HTTP/1.1 200 OK"])
        XCTAssertTrue(answers[0].body.contains(#""result":[1],"id":1"#), answers[0].body)
        XCTAssertTrue(answers[0].body.contains(#""code":-32601"#), answers[0].body)
        XCTAssertEqual(answers[1].body, "")
        XCTAssertTrue(answers[2].body.contains(#""code":-32700"#), answers[2].body)
    }

    func testPipelinedRequestsAreAnsweredInOrderThoughTheFirstIsSlower() throws {
        try makeChannel()
        try send(
            post(#"{"jsonrpc":"2.0","method":"echo.sleep","params":{"ms":50},"id":"slow"}"#)
                + post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":"fast"}"#))
        XCTAssertEqual(try responses().count, 0)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(50))
        let answers = try responses()
        XCTAssertEqual(answers.map(\.body), [#"{"jsonrpc":"2.0","result":"done","id":"slow"}"#, #"{"jsonrpc":"2.0","result":"pong","id":"fast"}"#])
    }

    func testRequestArrivingByteByByte() throws {
        try makeChannel()
        for byte in post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#).utf8 {
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
        }
        XCTAssertEqual(try responses().map(\.body), [#"{"jsonrpc":"2.0","result":"pong","id":1}"#])
    }

    func testBodyIncompleteAtTheEndOfAReadIsKeptAndChargedUntilItEnds() throws {
        try makeChannel()
        let request = post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        let cut = request.index(request.endIndex, offsetBy: -10)
        try send(String(request[..<cut]))
        XCTAssertGreaterThan(ledger.charged, 0, "the body so far is held in a buffer of its own, and charged")
        try send(String(request[cut...]))
        XCTAssertEqual(try responses().map(\.body), [#"{"jsonrpc":"2.0","result":"pong","id":1}"#])
        XCTAssertEqual(ledger.charged, 0)
    }

    func testEveryRequestsHostIsCheckedThoughTheConnectionsFirstWasAccepted() throws {
        try makeChannel()
        try send(post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#) + post("{}", headers: "Host: attacker.example\r\n"))
        XCTAssertEqual(try responses().map(\.status), ["HTTP/1.1 200 OK", "HTTP/1.1 421 Misdirected Request"])
    }

    func testNonJSONContentTypeIsRefusedSoNoFormCanPost() throws {
        for contentType in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            try makeChannel()
            try send(post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#, contentType: contentType))
            let answers = try responses()
            XCTAssertEqual(answers.first?.status, "HTTP/1.1 415 Unsupported Media Type", contentType)
            XCTAssertTrue(answers.first?.body.contains("Content-Type: application/json") ?? false)
            XCTAssertFalse(channel.isActive, "the unread body ends the connection")
        }
        try makeChannel()
        try send(post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#, contentType: "application/json; charset=utf-8"))
        XCTAssertEqual(try responses().map(\.status), ["HTTP/1.1 200 OK"])
    }

    func testForeignHostIsRefusedAgainstDNSRebinding() throws {
        for host in ["attacker.example", "127.0.0.1.attacker.example:7380", "rpcd.example.net"] {
            try makeChannel()
            try send(post("{}", headers: "Host: \(host)\r\n"))
            XCTAssertEqual(try responses().map(\.status), ["HTTP/1.1 421 Misdirected Request"], host)
        }
        for host in ["127.0.0.1:7380", "[::1]:7380", "localhost:7380", "BOX.local:7380", "box", "10.1.2.3", "rpcd.example.net"] {
            try makeChannel(http: HTTPSettings(serverNames: ["rpcd.example.net"]))
            try send(post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#, headers: "Host: \(host)\r\n"))
            XCTAssertEqual(try responses().map(\.status), ["HTTP/1.1 200 OK"], host)
        }
    }

    func testCrossOriginPostIsRefusedUnlessAllowedAndThenGetsCORSHeaders() throws {
        try makeChannel()
        try send(post("{}", headers: "Host: 127.0.0.1:7380\r\nOrigin: https://attacker.example\r\n"))
        XCTAssertEqual(try responses().map(\.status), ["HTTP/1.1 403 Forbidden"])

        try makeChannel()
        try send(post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#, headers: "Host: 127.0.0.1:7380\r\nOrigin: http://127.0.0.1:7380\r\n"))
        let sameOrigin = try responses()
        XCTAssertEqual(sameOrigin.map(\.status), ["HTTP/1.1 200 OK"])
        XCTAssertFalse(sameOrigin[0].headers.contains("access-control"), "no CORS for the same origin")

        try makeChannel(http: HTTPSettings(allowOrigins: ["https://dashboard.example.net"]))
        try send(
            "OPTIONS /rpc HTTP/1.1\r\nHost: 127.0.0.1:7380\r\nOrigin: https://dashboard.example.net\r\n"
                + "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n\r\n")
        try send(post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#, headers: "Host: 127.0.0.1:7380\r\nOrigin: https://dashboard.example.net\r\n"))
        let allowed = try responses()
        XCTAssertEqual(allowed.map(\.status), ["HTTP/1.1 204 No Content", "HTTP/1.1 200 OK"])
        XCTAssertTrue(allowed[0].headers.contains("access-control-allow-origin: https://dashboard.example.net"), allowed[0].headers)
        XCTAssertTrue(allowed[0].headers.contains("access-control-allow-headers: Content-Type"), allowed[0].headers)
        XCTAssertTrue(allowed[1].headers.contains("access-control-allow-origin: https://dashboard.example.net"), allowed[1].headers)

        try makeChannel()
        try send("OPTIONS /rpc HTTP/1.1\r\nHost: 127.0.0.1:7380\r\nOrigin: https://attacker.example\r\n\r\n")
        XCTAssertEqual(try responses().map(\.status), ["HTTP/1.1 403 Forbidden"])
    }

    func testNotJSONRPCProblemsGetTheirStatus() throws {
        try makeChannel()
        try send("GET /nothing HTTP/1.1\r\nHost: localhost\r\n\r\n")
        try send("GET /rpc HTTP/1.1\r\nHost: localhost\r\n\r\n")
        try send("DELETE /rpc HTTP/1.1\r\nHost: localhost\r\n\r\n")
        XCTAssertEqual(
            try responses().map(\.status),
            ["HTTP/1.1 404 Not Found", "HTTP/1.1 405 Method Not Allowed", "HTTP/1.1 405 Method Not Allowed"])
        XCTAssertTrue(channel.isActive)
    }

    func testBodyLargerThanMaxFrameSizeIs413AndCloses() throws {
        try makeChannel()
        try send("POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n")
        let announced = try responses()
        XCTAssertEqual(announced.first?.status, "HTTP/1.1 413 Payload Too Large")
        XCTAssertTrue(announced[0].body.contains(#""code":-32000"#), announced[0].body)
        XCTAssertFalse(channel.isActive)

        try makeChannel()
        try send("POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        try send("800\r\n" + String(repeating: " ", count: 2048) + "\r\n")
        try send("800\r\n" + String(repeating: " ", count: 2048) + "\r\n")
        try send("800\r\n" + String(repeating: " ", count: 2048) + "\r\n")
        XCTAssertEqual(try responses().first?.status, "HTTP/1.1 413 Payload Too Large")
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)
    }

    /// Each chunk costs the loop as much as a small request: a body of one-byte chunks is refused once its
    /// chunks, past the first 64, average under 256 bytes; a body in chunks of a slow link's size is served.
    func testBodyInTinyChunksIs400AndCloses() throws {
        let head = "POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        try makeChannel()
        try send(head)
        for _ in 0..<64 { try send("1\r\n \r\n") }
        XCTAssertEqual(try responses().count, 0, "64 chunks of any size pass")
        try send("1\r\n \r\n")
        let refused = try responses()
        XCTAssertEqual(refused.first?.status, "HTTP/1.1 400 Bad Request")
        XCTAssertTrue(refused[0].body.contains(#""code":-32600"#), refused[0].body)
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)

        try makeChannel { $0.maxFrameSize = 1 << 20 }
        try send(head)
        let call = #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#
        try send(String(format: "%x\r\n", call.utf8.count) + call + "\r\n")
        for _ in 0..<200 { try send("200\r\n" + String(repeating: " ", count: 512) + "\r\n") }
        try send("0\r\n\r\n")
        XCTAssertEqual(try responses().map(\.status), ["HTTP/1.1 200 OK"])
        XCTAssertTrue(channel.isActive)
    }

    func testBodyPastThePeersShareIs503AndGivesEverythingBack() throws {
        try makeChannel { $0.maxBufferedBytesPerPeer = 4096 }
        // Another connection of the same peer holds most of its share.
        let other = try XCTUnwrap(ledger.open(.ip("127.0.0.1", port: 6)))
        XCTAssertTrue(other.charge(3000))
        try send("POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 3000\r\n\r\n")
        try send(String(repeating: " ", count: 2000))
        let answers = try responses()
        XCTAssertEqual(answers.first?.status, "HTTP/1.1 503 Service Unavailable")
        XCTAssertTrue(answers.first?.body.contains(#""code":-32009"#) ?? false)
        XCTAssertFalse(channel.isActive)
        other.close()
        XCTAssertEqual(ledger.charged, 0)
    }

    func testBodyNotCompleteWithinFrameTimeoutIs408() throws {
        try makeChannel { $0.frameTimeout = .seconds(5) }
        try send("POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        XCTAssertEqual(try responses().first?.status, "HTTP/1.1 408 Request Timeout")
        XCTAssertFalse(channel.isActive)
    }

    func testResourceIsServedToThePeersTheMethodsRuleAllows() throws {
        let metrics = HTTPResource(path: "/metrics", method: "rpcd.metrics", contentType: "text/plain; version=0.0.4") { request in
            request.eventLoop.makeSucceededFuture(ByteBuffer(string: "rpcd_up 1\n"))
        }
        let readers = RPCAccessPolicy(default: RPCAccessRule(allow: [], allowRead: [.local]))
        try makeChannel(resources: [metrics], access: readers)
        try send("GET /metrics?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let served = try responses()
        XCTAssertEqual(served.map(\.status), ["HTTP/1.1 200 OK"])
        XCTAssertEqual(served[0].body, "rpcd_up 1\n")
        XCTAssertTrue(served[0].headers.contains("content-type: text/plain; version=0.0.4"))

        try makeChannel(resources: [metrics], access: readers, peer: .ip("192.0.2.7", port: 5))
        try send("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let refused = try responses()
        XCTAssertEqual(refused.map(\.status), ["HTTP/1.1 403 Forbidden"])
        XCTAssertTrue(refused[0].body.contains(#""code":-32007"#), refused[0].body)
    }

    /// A request head must arrive whole within `FrameTimeout=` of its first byte, however often a trickle of bytes
    /// resets the idle timer (the slowloris attack): the connection is closed (there is no request to answer;
    /// NIO's decoder, closed mid-head, writes a 400). What the decoder holds of it meanwhile
    /// is charged to the peer, and given back.
    func testRequestHeadTricklingPastFrameTimeoutIsClosed() throws {
        try makeChannel { $0.frameTimeout = .seconds(5) }
        let head = Array("GET /rpc HTTP/1.1\r\nHost: localhost\r\nX-Padding: ".utf8)
        for byte in head.prefix(5) {
            if byte != head[0] { channel.embeddedEventLoop.advanceTime(by: .seconds(1)) }
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
        }
        XCTAssertTrue(channel.isActive, "4 s after its first byte")
        XCTAssertEqual(ledger.charged, 5, "what the decoder holds of the head")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertFalse(channel.isActive)
        XCTAssertFalse(try written().contains("200 OK"))  // NIO's decoder answers the head cut short with 400
        XCTAssertEqual(ledger.charged, 0)
    }

    /// A head that arrives in pieces within its time is answered; between requests the clock does not run, and
    /// once answered nothing stays charged.
    func testRequestHeadsInTimeAreServed() throws {
        try makeChannel { $0.frameTimeout = .seconds(5) }
        let request = post(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        let cut = request.utf8.index(request.utf8.startIndex, offsetBy: 20)
        try send(String(request[..<cut]))
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try send(String(request[cut...]))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        try send(request)
        XCTAssertEqual(try responses().map(\.body), Array(repeating: #"{"jsonrpc":"2.0","result":"pong","id":1}"#, count: 2))
        XCTAssertTrue(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)
    }

    /// What the handler answers itself (a resource, a refusal) is charged to the peer until the socket takes it,
    /// as replies are: a peer that pipelines `GET /metrics` and reads nothing is answered 503 and closed once the
    /// answers fill its share, and pipelined refusals past the share end the connection; all is given back.
    func testOwnAnswersAreChargedUntilTheSocketTakesThem() throws {
        let metrics = HTTPResource(path: "/metrics", method: "rpcd.metrics", contentType: "text/plain; version=0.0.4") { request in
            request.eventLoop.makeSucceededFuture(ByteBuffer(repeating: UInt8(ascii: "m"), count: 3000))
        }
        let socket = HeldWrites()
        try makeChannel(resources: [metrics], socket: socket) { $0.maxBufferedBytesPerPeer = 8192 }
        try send(String(repeating: "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 10))
        // Two answers fit the share (a head is charged as 256 bytes), then the 503 that closes, with its body.
        XCTAssertTrue((2 * (256 + 3000) + 256 + 50..<2 * (256 + 3000) + 256 + 300).contains(ledger.charged), "\(ledger.charged)")
        socket.peerReads()
        let answers = try responses()
        XCTAssertEqual(answers.map(\.status), ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 503 Service Unavailable"])
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)

        let refusals = HeldWrites()
        try makeChannel(socket: refusals) { $0.maxBufferedBytesPerPeer = 8192 }
        try send(String(repeating: "GET /nothing HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 100))
        refusals.peerReads()
        let refused = try responses()
        XCTAssertLessThan(refused.count, 100, "the connection ends once the refusals fill the share")
        XCTAssertEqual(Set(refused.map(\.status)), ["HTTP/1.1 404 Not Found"])
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)
    }

    /// Pipelined `GET`s of a resource that costs work are answered a turn of the loop (2 ms) at a time, then wait
    /// for the loop's next round, as pipelined calls do: the loop's other connections are served between.
    func testPipelinedResourceAnswersTakeTurnsOnTheLoop() throws {
        let made = AnswerCount()
        let costly = HTTPResource(path: "/metrics", method: "rpcd.metrics", contentType: "text/plain") { request in
            made.count += 1
            // Each answer takes 1 ms of the loop (no task is due while it does: time moves and nothing runs).
            (request.eventLoop as! EmbeddedEventLoop).advanceTime(by: .milliseconds(1))
            return request.eventLoop.makeSucceededFuture(ByteBuffer(string: "rpcd_up 1\n"))
        }
        try makeChannel(resources: [costly])
        try send(String(repeating: "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 5))
        XCTAssertEqual(made.count, 2, "a turn: the third waits for the loop's next round")
        channel.embeddedEventLoop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(made.count, 4, "the next round: another turn")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(10))
        XCTAssertEqual(made.count, 5)
        XCTAssertEqual(try responses().map(\.status), Array(repeating: "HTTP/1.1 200 OK", count: 5), "all, in order")
    }

    /// A resource that answers a whole response (the console's 304): its status and headers go out as made,
    /// the request's headers reach it, and a 304 carries no length and no body.
    func testResourceResponseKeepsItsStatusAndHeaders() throws {
        let page = HTTPResource(path: "/", method: "rpc.discover") { request in
            let fresh = request.headers.first(name: "if-none-match") == "\"v1\""
            return request.eventLoop.makeSucceededFuture(HTTPResource.Response(
                status: fresh ? .notModified : .ok, headers: ["content-type": "text/html", "etag": "\"v1\""],
                body: ByteBuffer(string: fresh ? "" : "<!doctype html>")))
        }
        let readers = RPCAccessPolicy(default: RPCAccessRule(allow: [], allowRead: [.local]))
        try makeChannel(resources: [page], access: readers)
        try send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\nGET / HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: \"v1\"\r\n\r\n")
        let answers = try responses()
        XCTAssertEqual(answers.map(\.status), ["HTTP/1.1 200 OK", "HTTP/1.1 304 Not Modified"])
        XCTAssertEqual(answers[0].body, "<!doctype html>")
        XCTAssertTrue(answers[1].headers.contains("etag: \"v1\""), answers[1].headers)
        XCTAssertFalse(answers[1].headers.lowercased().contains("content-length"), answers[1].headers)
        XCTAssertEqual(answers[1].body, "")
    }

    func testSubscribingNeedsWebSocket() throws {
        try makeChannel()
        try send(post(#"{"jsonrpc":"2.0","method":"rpc.subscribe","params":{"event":"x.y"},"id":1}"#))
        let answers = try responses()
        XCTAssertTrue(answers[0].body.contains("subscribe over WebSocket"), answers[0].body)
    }

    func testWebSocketCarriesMessagesPingsAndCloseCodes() throws {
        try makeUpgradedChannel()
        try channel.writeInbound(Self.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#))
        XCTAssertEqual(try serverFrames(), [Frame(opcode: 0x1, payload: #"{"jsonrpc":"2.0","result":"pong","id":1}"#)])
        // A message in two fragments, a notification (nothing sent back), a ping.
        try channel.writeInbound(Self.clientFrame(opcode: 0x1, fin: false, #"{"jsonrpc":"2.0","#))
        try channel.writeInbound(Self.clientFrame(opcode: 0x0, #""method":"echo.echo","params":[2],"id":2}"#))
        try channel.writeInbound(Self.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"echo.echo","params":[3]}"#))
        try channel.writeInbound(Self.clientFrame(opcode: 0x9, "hi"))
        XCTAssertEqual(
            try serverFrames(),
            [Frame(opcode: 0x1, payload: #"{"jsonrpc":"2.0","result":[2],"id":2}"#), Frame(opcode: 0xA, payload: "hi")])
        try channel.writeInbound(Self.clientFrame(opcode: 0x2, "binary"))
        XCTAssertEqual(try serverFrames(), [Frame(opcode: 0x8, bytes: [0x03, 0xEB])])  // 1003
        XCTAssertFalse(channel.isActive)
    }

    /// A frame that arrives in the same read as the upgrade request is held by NIO's upgrader and handed to
    /// the WebSocket handlers once they are in place: it is unmasked and answered like any other.
    func testFrameInTheUpgradeRequestsReadIsAnswered() throws {
        try makeChannel()
        var read = ByteBuffer(
            string: "GET /rpc HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        var frame = Self.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        read.writeBuffer(&frame)
        try channel.writeInbound(read)
        channel.embeddedEventLoop.run()
        let written = try written()
        XCTAssertTrue(written.hasPrefix("HTTP/1.1 101 Switching Protocols"), written)
        XCTAssertTrue(written.hasSuffix(#"{"jsonrpc":"2.0","result":"pong","id":1}"#), written)
    }

    func testWebSocketMessageLargerThanMaxFrameSizeIsClosed1009() throws {
        try makeUpgradedChannel()
        try channel.writeInbound(Self.clientFrame(opcode: 0x1, fin: false, String(repeating: " ", count: 3000)))
        try channel.writeInbound(Self.clientFrame(opcode: 0x0, String(repeating: " ", count: 3000)))
        XCTAssertEqual(try serverFrames(), [Frame(opcode: 0x8, bytes: [0x03, 0xF1])])  // 1009
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)
    }

    /// A WebSocket frame still arriving sits in `WebSocketFrameReceiver`: it is charged to the peer by the buffer
    /// holding what has arrived (never by the length it announces), given back once whole, and one the peer's
    /// share cannot cover ends the connection with 1008 and gives everything back.
    func testWebSocketFrameStillArrivingIsChargedToThePeer() throws {
        try makeChannel { $0.maxBufferedBytesPerPeer = 4096 }
        try send(
            "GET /rpc HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        channel.embeddedEventLoop.run()
        _ = try written()
        let call = #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1"# + String(repeating: " ", count: 2900) + "}"
        var frame = Self.clientFrame(opcode: 0x1, call)
        let total = frame.readableBytes
        try channel.writeInbound(frame.readSlice(length: 1)!)  // half a header: nothing known, one byte held
        XCTAssertEqual(ledger.charged, 1)
        try channel.writeInbound(frame.readSlice(length: 999)!)
        XCTAssertTrue(
            (1000..<2000).contains(ledger.charged),
            "\(ledger.charged): the buffer holding the 1 000 bytes that have arrived, not the 2 950 bytes announced")
        try channel.writeInbound(frame)
        XCTAssertEqual(try serverFrames(), [Frame(opcode: 0x1, payload: #"{"jsonrpc":"2.0","result":"pong","id":1}"#)])
        XCTAssertEqual(ledger.charged, 0, "a whole frame of \(total) bytes is the message handler's, and answered")

        // Another connection of the same peer holds most of its share: the next frame arriving cannot be held.
        let other = try XCTUnwrap(ledger.open(.ip("127.0.0.1", port: 6)))
        XCTAssertTrue(other.charge(3000))
        frame = Self.clientFrame(opcode: 0x1, call)
        try channel.writeInbound(frame.readSlice(length: 1000)!)
        try channel.writeInbound(frame.readSlice(length: 1000)!)
        XCTAssertEqual(try serverFrames(), [Frame(opcode: 0x8, bytes: [0x03, 0xF0])])  // 1008
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 3000, "the refused connection holds nothing")
        other.close()
        XCTAssertEqual(ledger.charged, 0)
    }

    func testWebSocketFrameLongerThanMaxFrameSizeIsClosed1009ByItsHeader() throws {
        try makeUpgradedChannel()
        // The receiver refuses the frame by its announced length, as NIO's decoder would; the close code is sent here.
        var header = ByteBuffer(bytes: [0x81, 0x80 | 127])
        header.writeInteger(UInt64(5000))
        header.writeBytes([1, 2, 3, 4])
        _ = try? channel.writeInbound(header)
        XCTAssertEqual(try serverFrames().first, Frame(opcode: 0x8, bytes: [0x03, 0xF1]))  // 1009
        XCTAssertFalse(channel.isActive)
    }

    func testUnmaskedWebSocketFrameIsClosed1002() throws {
        try makeUpgradedChannel()
        let payload = Array(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#.utf8)
        _ = try? channel.writeInbound(ByteBuffer(bytes: [0x81, UInt8(payload.count)] + payload))
        XCTAssertEqual(try serverFrames(), [Frame(opcode: 0x8, bytes: [0x03, 0xEA])])  // 1002, and no reply
        XCTAssertFalse(channel.isActive)
    }

    /// A WebSocket message must arrive whole, all its fragments, within `FrameTimeout=` of its first byte, however
    /// often a trickle of bytes (or of fragments) resets the idle timer: 1008, and everything given back.
    func testWebSocketFrameTricklingPastFrameTimeoutIsClosed1008() throws {
        try makeUpgradedChannel { $0.frameTimeout = .seconds(5) }
        var frame = Self.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        for _ in 0..<4 {
            try channel.writeInbound(frame.readSlice(length: 1)!)
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        XCTAssertEqual(try serverFrames(), [], "within its time")
        try channel.writeInbound(frame.readSlice(length: 1)!)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertEqual(try serverFrames(), [Frame(opcode: 0x8, bytes: [0x03, 0xF0])])  // 1008
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)
    }

    func testWebSocketMessageFragmentedPastFrameTimeoutIsClosed1008() throws {
        try makeUpgradedChannel { $0.frameTimeout = .seconds(5) }
        try channel.writeInbound(Self.clientFrame(opcode: 0x1, fin: false, #"{"jsonrpc":"2.0","#))
        for _ in 0..<3 {
            channel.embeddedEventLoop.advanceTime(by: .seconds(2))
            try channel.writeInbound(Self.clientFrame(opcode: 0x0, fin: false, " "))  // each fragment whole
        }
        XCTAssertEqual(try serverFrames(), [Frame(opcode: 0x8, bytes: [0x03, 0xF0])])  // 1008, 6 s after its first fragment
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)
    }

    /// The clock runs only while a message is arriving: messages that arrive whole, with time between them, and
    /// one whose fragments all arrive in time, are answered, and the connection stays.
    func testWebSocketMessagesInTimeAreServed() throws {
        try makeUpgradedChannel { $0.frameTimeout = .seconds(5) }
        var frame = Self.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        try channel.writeInbound(frame.readSlice(length: 3)!)
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try channel.writeInbound(frame)
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try channel.writeInbound(Self.clientFrame(opcode: 0x1, fin: false, #"{"jsonrpc":"2.0","method":"#))
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try channel.writeInbound(Self.clientFrame(opcode: 0x0, #""rpcd.ping","id":2}"#))
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        XCTAssertEqual(
            try serverFrames(),
            [Frame(opcode: 0x1, payload: #"{"jsonrpc":"2.0","result":"pong","id":1}"#),
             Frame(opcode: 0x1, payload: #"{"jsonrpc":"2.0","result":"pong","id":2}"#)])
        XCTAssertTrue(channel.isActive)
    }

    /// Refused by its header: the payload it announces is never waited for, nor held.
    func testUnmaskedWebSocketFrameIsRefusedByItsHeader() throws {
        try makeUpgradedChannel()
        _ = try? channel.writeInbound(ByteBuffer(bytes: [0x81, 126, 0x10, 0x00, 0x7B]))
        XCTAssertEqual(try serverFrames(), [Frame(opcode: 0x8, bytes: [0x03, 0xEA])])  // 1002
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)
    }

    func testWebSocketUpgradeFromAForeignOriginIsRefused() throws {
        try makeChannel()
        try send(
            "GET /rpc HTTP/1.1\r\nHost: localhost\r\nOrigin: https://attacker.example\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        XCTAssertEqual(try responses().map(\.status), ["HTTP/1.1 403 Forbidden"])
    }

    // MARK: WebSocket frames (RFC 6455 §5.2), small ones only

    /// A channel upgraded to WebSocket by `GET /rpc`, its 101 response read.
    private func makeUpgradedChannel(_ configure: (inout ConnectionLimits) -> Void = { _ in }) throws {
        try makeChannel(change: configure)
        try send(
            "GET /rpc HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        channel.embeddedEventLoop.run()  // the upgrade completes through futures
        XCTAssertTrue(try written().hasPrefix("HTTP/1.1 101 Switching Protocols"))
    }

    private typealias Frame = WebSocketWire.Frame

    private static func clientFrame(opcode: UInt8, fin: Bool = true, _ text: String) -> ByteBuffer {
        WebSocketWire.clientFrame(opcode: opcode, fin: fin, text)
    }

    private func serverFrames() throws -> [Frame] {
        var bytes = ByteBuffer()
        while var part = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&part) }
        return WebSocketWire.serverFrames(in: &bytes)
    }
}

/// How many answers a resource made, counted on the embedded loop's one thread.
private final class AnswerCount: @unchecked Sendable {
    var count = 0
}
