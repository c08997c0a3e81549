import RPCBinding
import RPCJSON
import RPCProtocol
import XCTest

/// The one method declaration on its own, with the params' text as modules get it: which body a closure
/// makes, the binding the factories share, and what a declaration says about itself.
final class RPCMethodTests: XCTestCase {
    private struct Adder: Sendable {
        func add(_ a: Double, _ b: Double) -> Double { a + b }
    }

    private struct AddParams: Decodable {
        var a: Double
        var b: Double
    }

    private let add = RPCMethod<Adder, RPCParamsText>.method(
        "add", params: [.number("a"), .number("b")], result: .number("sum"), flags: .readOnly
    ) { (adder, p: AddParams, _) in adder.add(p.a, p.b) }

    private func text(_ json: String) -> RPCParamsText { RPCParamsText(Array(json.utf8)) }

    private func message(_ body: () throws -> Any) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as RPCError {
            return error.data?["detail"]?.stringValue ?? error.message
        } catch {
            return "\(error)"
        }
    }

    func testABodyWithoutAwaitAnswersNowAndOneWithAwaitSuspends() async throws {
        XCTAssertNotNil(add.runNow)
        let later = RPCMethod<Adder, RPCParamsText>.method("later") { (_, _) async throws -> Bool in
            await Task.yield()
            return true
        }
        XCTAssertNil(later.runNow)
        let answer = try await later.run(Adder(), text(""))
        XCTAssertEqual(answer, Array("true".utf8))
    }

    func testAConstantAnswersTheSameToCallsWithoutParams() throws {
        let ping = RPCMethod<Adder, RPCParamsText>(RPCMethodDescriptor(name: "ping"), body: .constant(Array(#""pong""#.utf8)))
        let run = try XCTUnwrap(ping.runNow)
        XCTAssertEqual(try run(Adder(), text("[]")), Array(#""pong""#.utf8))
        XCTAssertEqual(message { try run(Adder(), text("[1]")) }, "this method takes no parameters")
    }

    func testTypedParamsBindByPositionOrNameFromTheText() throws {
        let run = try XCTUnwrap(add.runNow)
        XCTAssertEqual(try run(Adder(), text("[1, 2]")), Array("3".utf8))
        XCTAssertEqual(try run(Adder(), text(#"{"b": 2, "a": 1.5}"#)), Array("3.5".utf8))
        XCTAssertEqual(message { try run(Adder(), text("[1]")) }, "missing parameter 'b'")
        XCTAssertEqual(message { try run(Adder(), text(#"{"a": 1, "b": 2, "c": 3}"#)) }, "unknown parameter 'c'")
        XCTAssertEqual(message { try run(Adder(), text(#"["1", 2]"#)) }, "parameter 'a': expected a number, got a string")
    }

    func testNoParamsAcceptsNothingOrAnEmptyContainerOnly() throws {
        for accepted in ["", "  ", "[]", "{ }", " [ ] "] {
            XCTAssertNoThrow(try text(accepted).requireNoParams(), accepted)
        }
        XCTAssertEqual(message { try self.text("[1]").requireNoParams() }, "this method takes no parameters")
        XCTAssertEqual(message { try self.text(#"{"x": 1}"#).requireNoParams() }, "unknown parameter 'x'")
        XCTAssertEqual(try text("").paramsValue(), .null)
        XCTAssertEqual(try text(" [1] ").paramsValue(), [1])
    }

    func testTheDeclarationCarriesFlagsAndDocumentedErrors() {
        let documented = add.documenting([RPCError(code: 2, message: "Result out of range")])
        XCTAssertEqual(documented.descriptor.name, "add")
        XCTAssertEqual(documented.descriptor.flags, .readOnly)
        XCTAssertEqual(documented.descriptor.params.map(\.name), ["a", "b"])
        XCTAssertEqual(documented.descriptor.errors.map(\.code), [2])
        XCTAssertEqual(add.descriptor.errors, [])
    }
}
