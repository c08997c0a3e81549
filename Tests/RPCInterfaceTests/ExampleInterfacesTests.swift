import RPCExampleInterfaces
import RPCInterface
import XCTest

/// The example modules' interfaces, declared with `@RPCInterface`, describe calc and kv exactly as their
/// hand-written method tables did before: same names, parameters, schemas, results and flags, hence the same
/// fingerprints (computed by `RPCServiceDescriptor`, the one algorithm rpcd uses), so existing clients and
/// `rpcctl call --api` see no change.
final class ExampleInterfacesTests: XCTestCase {
    func testCalculatorMatchesCalcsFormerTable() {
        let readOnly: RPCMethodDescriptor.Flags = [.readOnly]
        let former = RPCServiceDescriptor(
            name: "calc", version: "", summary: "", methods: [
                RPCMethodDescriptor(name: "add", params: [.number("a"), .number("b")], result: .number("sum"), flags: readOnly),
                RPCMethodDescriptor(
                    name: "subtract", params: [.number("minuend"), .number("subtrahend")], result: .number("difference"),
                    flags: readOnly),
                RPCMethodDescriptor(name: "multiply", params: [.number("a"), .number("b")], result: .number("product"), flags: readOnly),
                RPCMethodDescriptor(
                    name: "divide", params: [.number("dividend"), .number("divisor")], result: .number("quotient"), flags: readOnly),
                RPCMethodDescriptor(name: "sum", params: [], result: .number("sum"), flags: readOnly),
            ])
        let declared = CalculatorProxy.rpcInterface
        XCTAssertEqual(declared.service, "calc")
        XCTAssertEqual(declared.summary, "Adds, subtracts, multiplies and divides numbers.")
        XCTAssertEqual(declared.methods.map(\.name), former.methods.map(\.name))
        XCTAssertEqual(declared.methods.map(\.params), former.methods.map(\.params))
        XCTAssertEqual(declared.methods.map(\.result), former.methods.map(\.result))
        XCTAssertEqual(declared.methods.map(\.flags), former.methods.map(\.flags))
        XCTAssertEqual(declared.fingerprint(), former.fingerprint)
        XCTAssertEqual(declared.methods[3].errors, [DivisionByZero.documentation, ResultOutOfRange.documentation])
        XCTAssertEqual(DivisionByZero.documentation, RPCError(code: 1, message: "Division by zero"))
    }

    func testKeyValueStoreMatchesKVsFormerTable() {
        let former = RPCServiceDescriptor(
            name: "kv", version: "", summary: "", methods: [
                RPCMethodDescriptor(name: "get", params: [.string("key")], result: .any("value"), flags: [.readOnly]),
                RPCMethodDescriptor(
                    name: "set", params: [.string("key"), .any("value")], result: .boolean("stored"), flags: [.mayBlock]),
                RPCMethodDescriptor(name: "delete", params: [.string("key")], result: .boolean("existed"), flags: [.mayBlock]),
                RPCMethodDescriptor(
                    name: "list", params: [], result: .array("keys", items: ["type": "string"]), flags: [.readOnly]),
            ],
            events: [
                RPCEventDescriptor(
                    name: "changed",
                    schema: [
                        "type": "object", "required": ["key"],
                        "properties": [
                            "key": ["type": "string"], "value": [:], "deleted": ["type": "boolean", "const": true],
                        ],
                    ])
            ])
        let declared = KeyValueStoreProxy.rpcInterface
        XCTAssertEqual(declared.service, "kv")
        XCTAssertEqual(declared.summary, "Stores JSON values under string keys, optionally persisted to a file.")
        XCTAssertEqual(declared.methods.map(\.params), former.methods.map(\.params))
        XCTAssertEqual(declared.methods.map(\.result), former.methods.map(\.result))
        XCTAssertEqual(declared.methods.map(\.flags), former.methods.map(\.flags))
        XCTAssertEqual(declared.fingerprint(), former.fingerprint)
    }

    func testDocumentedErrorsRoundTripThroughTheirErrorObject() {
        let error = StoreFull(limit: "MaxKeys", value: 10)
        XCTAssertEqual(error.rpcError, RPCError(code: 2, message: "Store full", data: ["limit": "MaxKeys", "value": 10]))
        XCTAssertEqual(StoreFull.decoding(error.rpcError), error)
        XCTAssertNil(NoSuchKey.decoding(error.rpcError), "another code")
        XCTAssertNil(StoreFull.decoding(RPCError(code: 2, message: "Store full", data: ["limit": 1])), "data that does not decode")
    }

    func testSchemasComeFromSwiftTypes() {
        XCTAssertEqual(RPCSchema.of(Double.self), ["type": "number"])
        XCTAssertEqual(RPCSchema.of(Int.self), ["type": "integer"])
        XCTAssertEqual(RPCSchema.of(UInt.self), ["type": "integer", "minimum": 0])
        XCTAssertEqual(RPCSchema.of(String?.self), ["type": "string"])
        XCTAssertEqual(RPCSchema.of([Bool].self), ["type": "array", "items": ["type": "boolean"]])
        XCTAssertEqual(RPCSchema.of([JSONValue].self), ["type": "array"])
        XCTAssertEqual(RPCSchema.of([String: Double].self), ["type": "object", "additionalProperties": ["type": "number"]])
        XCTAssertEqual(RPCSchema.of(JSONValue.self), [:])
        XCTAssertEqual(RPCSchema.of(NoSuchKey.self), [:], "a type without a schema of its own accepts any value")
        XCTAssertEqual(RPCSchema.param("n", Int?.self), RPCParam("n", schema: ["type": "integer"], optional: true))
    }
}
