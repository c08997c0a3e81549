import Foundation
import RPCJSON
import RPCTestSupport
import XCTest

/// The real rpcd binary over real sockets: the protocol as a client sees it.
final class DaemonProtocolTests: XCTestCase {
    func testPingOverTCPAndUnixSocket() throws {
        let daemon = try DaemonProcess()
        for endpoint in [daemon.tcpEndpoint!, .unix(path: daemon.socketPath)] {
            let connection = try RawConnection(endpoint)
            XCTAssertEqual(try connection.call(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#),
                           ["jsonrpc": "2.0", "result": "pong", "id": 1], "\(endpoint)")
        }
        XCTAssertEqual(daemon.terminate(), 0)
    }

    func testPipelinedCallsAreAnsweredAsTheyComplete() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["echo"]))
        let connection = try RawConnection(daemon.tcpEndpoint)
        try connection.send(WireFrame.bytes(#"{"jsonrpc":"2.0","method":"echo.sleep","params":{"ms":300},"id":"slow"}"#)
                            + WireFrame.bytes(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":"fast"}"#))
        XCTAssertEqual(try connection.receiveJSON()["id"], "fast")
        XCTAssertEqual(try connection.receiveJSON()["id"], "slow")
    }

    func testSpecificationBatchOverTheWire() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["calc", "echo"]))
        let connection = try RawConnection(daemon.tcpEndpoint)
        let reply = try connection.call(#"""
            [{"jsonrpc":"2.0","method":"calc.add","params":[1,2],"id":"1"},
             {"jsonrpc":"2.0","method":"echo.echo","params":[7]},
             {"foo":"boo"},
             {"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},
             {"jsonrpc":"2.0","method":"echo.echo","params":{"x":[1,{"y":null}]},"id":9}]
            """#)
        let replies = try XCTUnwrap(reply.arrayValue)
        XCTAssertEqual(replies.count, 4)
        XCTAssertEqual(replies.first { $0["id"] == "1" }?["result"]?.doubleValue, 3)
        XCTAssertEqual(replies.first { $0["id"] == "5" }?["error"]?["code"], -32601)
        XCTAssertEqual(replies.first { $0["id"] == .null }?["error"]?["code"], -32600)
        XCTAssertEqual(replies.first { $0["id"] == 9 }?["result"], ["x": [1, ["y": nil]]])

        // A batch of notifications: no reply at all; the next call's reply is the next frame.
        try connection.sendFrame(#"[{"jsonrpc":"2.0","method":"rpcd.ping"},{"jsonrpc":"2.0","method":"rpcd.ping"}]"#)
        XCTAssertEqual(try connection.call(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":2}"#)["id"], 2)
    }

    func testBigIntegerAndOddIdsAreEchoedExactly() throws {
        let daemon = try DaemonProcess()
        let connection = try RawConnection(daemon.tcpEndpoint)
        for id in ["123456789012345678901234567890", "-1.50e+3", #""\ud83d\ude00""#] {
            try connection.sendFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":\#(id)}"#)
            XCTAssertEqual(try connection.receiveFrame(), #"{"jsonrpc":"2.0","result":"pong","id":\#(id)}"#)
        }
    }

    func testRequestSentByteByByte() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["echo"]))
        let connection = try RawConnection(daemon.tcpEndpoint)
        for byte in WireFrame.bytes(#"{"jsonrpc":"2.0","method":"echo.echo","params":["slow"],"id":1}"#) {
            try connection.send([byte])
        }
        XCTAssertEqual(try connection.receiveJSON()["result"], ["slow"])
    }

    func testRpcDiscoverListsBuiltInsAndModules() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: DaemonProcess.exampleModules))
        let connection = try RawConnection(daemon.tcpEndpoint)
        let document = try connection.call(#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#)["result"]
        let names = Set(document?["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [])
        XCTAssertTrue(names.isSuperset(of: ["rpc.discover", "rpcd.ping", "rpcd.info", "echo.echo", "calc.add", "kv.get"]), "\(names)")
        let info = try connection.call(#"{"jsonrpc":"2.0","method":"rpcd.info","id":2}"#)["result"]
        XCTAssertEqual(info?["listeners"]?.arrayValue?.count, 2)
        XCTAssertEqual(info?["connections"]?["open"], 1)
    }

    /// What PROTOCOL.md §5 and §6 promise a client reads from `rpc.discover` and `rpcd.info`: a module's
    /// documented errors under its methods' `errors` (through the module ABI's `errors_json`), `by-position` for
    /// a method that takes a list, and the limits a client paces itself by.
    func testDiscoverListsErrorsAndParamStructureAndInfoTheLimits() throws {
        let daemon = try DaemonProcess(DaemonOptions(config: "MaxFrameSize=64K\nMaxCallsPerConnection=7\n", modules: ["calc", "echo"]))
        let connection = try RawConnection(daemon.tcpEndpoint)
        let document = try connection.call(#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#)["result"]
        let methods = Dictionary(
            uniqueKeysWithValues: (document?["methods"]?.arrayValue ?? []).map { ($0["name"]?.stringValue ?? "", $0) })
        XCTAssertEqual(methods["calc.divide"]?["errors"], [["code": 1, "message": "Division by zero"], ["code": 2, "message": "Result out of range"]])
        XCTAssertEqual(methods["calc.add"]?["errors"], [["code": 2, "message": "Result out of range"]])
        XCTAssertEqual(methods["calc.sum"]?["paramStructure"], "by-position")
        XCTAssertEqual(methods["calc.add"]?["paramStructure"], "either")
        XCTAssertNil(methods["echo.echo"]?["errors"])
        let overflow = try connection.call(#"{"jsonrpc":"2.0","method":"calc.add","params":[1e308,1e308],"id":2}"#)
        XCTAssertEqual(overflow["error"]?["code"], 2)
        let info = try connection.call(#"{"jsonrpc":"2.0","method":"rpcd.info","id":3}"#)["result"]
        XCTAssertEqual(info?["limits"], ["max_frame_size": 65536, "max_calls_per_connection": 7])
    }

    /// Methods for trying rpcd out live in the example modules, not in the daemon: without handlers rpcd
    /// serves only its own `rpc.*` and `rpcd.*` methods.
    func testWithoutModulesOnlyBuiltInsAreServed() throws {
        let daemon = try DaemonProcess()
        let connection = try RawConnection(daemon.tcpEndpoint)
        let document = try connection.call(#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#)["result"]
        let names = try XCTUnwrap(document?["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue })
        XCTAssertTrue(names.contains("rpcd.ping"), "\(names)")
        XCTAssertEqual(names.filter { !$0.hasPrefix("rpc.") && !$0.hasPrefix("rpcd.") }, [], "\(names)")
        let services = document?["x-rpcd-services"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        XCTAssertEqual(Set(services ?? []), ["rpc", "rpcd"])
        XCTAssertEqual(try connection.call(#"{"jsonrpc":"2.0","method":"demo.echo","id":2}"#)["error"]?["code"], -32601)
    }
}
