import Foundation
import RPCBinding
import RPCJSON
import RPCProtocol
import XCTest

/// The binder alone; the SDK's and the built-ins' own tests cover it through their method declarations.
final class ParamsBindingTests: XCTestCase {
    private let declared = [RPCParam.number("a"), .integer("b", minimum: 0, optional: true)]

    private struct Params: Decodable, Equatable {
        var a: Double
        var b: Int?
    }

    private func bind(_ params: JSONValue) throws -> Params {
        try ParamsBinding.decode(Params.self, from: ParamsBinding.bind(params, to: declared))
    }

    func testPositionNameAndAbsence() throws {
        XCTAssertEqual(try bind([1.5, 2]), Params(a: 1.5, b: 2))
        XCTAssertEqual(try bind(["a": 1, "b": 2]), Params(a: 1, b: 2))
        XCTAssertEqual(try bind([3]), Params(a: 3, b: nil))
        XCTAssertEqual(try bind(["a": 3, "b": .null]), Params(a: 3, b: nil))
    }

    func testProblemsAreInvalidParamsWithADetail() {
        let cases: [(JSONValue, String)] = [
            (.null, "missing parameter 'a'"),
            ([1, 2, 3], "too many parameters: expected at most 2, got 3"),
            (["a": 1, "c": 2], "unknown parameter 'c'"),
            (["a": "x"], "parameter 'a': expected a number, got a string"),
            ([1, -1], "parameter 'b': must be at least 0"),
            ([1, 1.5], "parameter 'b': expected an integer, got a number"),
            ("text", "params must be an array or an object, not a string"),
        ]
        for (params, detail) in cases {
            XCTAssertThrowsError(try bind(params), "\(params)") { error in
                XCTAssertEqual(error as? RPCError, .invalidParams(detail), "\(params)")
            }
        }
    }

    /// A method keeps one binder for all its calls; each call's values come out by position of declaration.
    func testABinderBindsEveryCallByDeclaredPosition() throws {
        let binder = ParamsBinder(declared)
        let byName = try binder.bind(["b": 2, "a": 1])
        XCTAssertEqual(byName.values, [1, 2])
        XCTAssertEqual(byName.value(named: "b"), 2)
        XCTAssertNil(byName.value(named: "c"))
        XCTAssertEqual(try binder.bind([5]).values, [5, nil])
        XCTAssertEqual(try binder.bind(["a": 5, "b": .null]).members, ["a": 5], "null for an optional is absent")
    }

    /// Params bound from their text member by member come out exactly as from the parsed tree: the same values,
    /// the same errors.
    func testBindingFromTextAgreesWithBindingTheTree() throws {
        let binder = ParamsBinder(declared)
        let texts = [
            "", " ", "null", "[]", "{}", "[1]", "[1, 2]", "[1,2,3]", #"{"a":1}"#, #"{"b":2,"a":1.5}"#, #"{"a":1,"a":2}"#,
            #"{"a":1,"c":2,"b":0}"#, #"{"a":"x"}"#, "[1,-1]", "[1,null]", #" { "a" : [1,{"x":[]}] } "#, "\"text\"", "7",
            #"{"\u0061":3}"#,
        ]
        for text in texts {
            let bytes = Array(text.utf8)
            let fromText = Result { try bytes.withUnsafeBytes { try binder.bind(text: $0) } }
            let tree: JSONValue = text.allSatisfy(\.isWhitespace) ? .null : try JSONValue(parsing: text)
            let fromTree = Result { try binder.bind(tree) }
            switch (fromText, fromTree) {
            case (.success(let a), .success(let b)): XCTAssertEqual(a.values, b.values, text)
            case (.failure(let a), .failure(let b)): XCTAssertEqual(a as? RPCError, b as? RPCError, text)
            default: XCTFail("\(text): \(fromText) from the text, \(fromTree) from the tree")
            }
        }
        XCTAssertThrowsError(try Array("{\"a\":".utf8).withUnsafeBytes { try binder.bind(text: $0) }) { error in
            XCTAssertEqual((error as? RPCError)?.code, -32602)
            XCTAssertTrue("\(error)".contains("params are not valid JSON"), "\(error)")
        }
    }

    /// Of several undeclared names, the first in sorted order is reported, whatever order they were sent in.
    func testTheFirstUnknownNameInSortedOrderIsReported() {
        let binder = ParamsBinder(declared)
        for params: JSONValue in [["a": 1, "z": 1, "m": 1, "q": 1], ["q": 1, "m": 1, "z": 1]] {
            XCTAssertThrowsError(try binder.bind(params)) { error in
                XCTAssertEqual(error as? RPCError, .invalidParams("unknown parameter 'm'"))
            }
        }
    }

    /// The schema keywords the binder enforces, read once: a type list, `enum` (numbers by value), bounds.
    func testCompiledSchemasCheckTypeListsEnumsAndBounds() {
        let schema: JSONValue = ["type": ["integer", "string"], "enum": [1, "one", 2], "maximum": 1.5]
        XCTAssertNil(ParamsBinding.problem(with: 1.0, against: schema))
        XCTAssertNil(ParamsBinding.problem(with: "one", against: schema))
        XCTAssertEqual(ParamsBinding.problem(with: true, against: schema), "expected an integer or a string, got a boolean")
        XCTAssertEqual(ParamsBinding.problem(with: "two", against: schema), #"must be one of [1,"one",2]"#)
        XCTAssertEqual(ParamsBinding.problem(with: 2, against: schema), "must be at most 1.5")
        XCTAssertNil(ParamsBinding.problem(with: "anything", against: ["type": "uuid"]), "unknown type names pass")
        XCTAssertNil(ParamsBinding.problem(with: 5, against: "not a schema object"))
    }

    /// Scalars skip JSONEncoder: the bytes must be what it writes (compared as parsed JSON).
    func testScalarFastPathsMatchJSONEncoder() throws {
        func same<T: Encodable>(_ value: T) throws {
            let fast = try JSONValue(parsing: ResultEncoding.encode(value))
            let slow = try JSONValue(parsing: Array(JSONEncoder().encode(value)))
            XCTAssertEqual(fast.doubleValue ?? 0, slow.doubleValue ?? 0, "\(value)")
            XCTAssertEqual(fast.kind, slow.kind, "\(value)")
            XCTAssertEqual(fast.stringValue, slow.stringValue, "\(value)")
        }
        for value in [0.0, -0.0, 3.0, 0.1, 1e16, -2.5e-8, 1.7976931348623157e308] { try same(value) }
        for value in [0, -1, Int.max, Int.min] { try same(value) }
        for value in ["", "a\"b\\c\n\u{1}é/"] { try same(value) }
        try same(true)
        XCTAssertEqual(String(decoding: try ResultEncoding.encode(3.0), as: UTF8.self), "3")
    }

    func testResultsEncodeExactlyAndNonFiniteNumbersThrow() throws {
        XCTAssertEqual(String(decoding: try ResultEncoding.encode(["b": 1, "a": 2] as [String: Int]), as: UTF8.self), #"{"a":2,"b":1}"#)
        XCTAssertEqual(String(decoding: try ResultEncoding.encode(JSONValue.number("1e400")), as: UTF8.self), "1e400")
        XCTAssertThrowsError(try ResultEncoding.encode(Double.infinity))
        XCTAssertThrowsError(try ResultEncoding.encode([Double.nan]))
    }

    /// Results that are not scalars go through `JSONValueEncoder`, not Foundation's `JSONEncoder` (issue 20: a
    /// module host process without libFoundationEssentials). The bytes must be what `JSONEncoder` with sorted keys
    /// writes, Foundation's own types included.
    func testResultsEncodeAsJSONEncoderDoes() throws {
        struct Members: Encodable {
            var b = 1
            var a10 = "x"
            var a9 = 2.0
            var B: Float = 0.1
            var absent: Int? = nil
            var present: Int? = 3
            var doubles = [1.5, 1e20, 1e-7, -0.0, 100]
            var floats: [Float] = [1, 3.4e38, -0.0, 1e-7]
            var integers: [Int64] = [Int64.min, 0]
            var unsigned = UInt64.max
            var small: Int8 = -5
            var text = "ü/\"\\\u{1}\n\t"
            var keys = ["9": 1, "10": 2, "é": 3, "Z": 4, "z": 5, "a_b": 6, "a-b": 7, "aB": 8, "ab": 9]
            var numberKeys = [1: "a", 2: "b"]
            var nested = [[Int?]](arrayLiteral: [nil, 1], [])
            var bytes = Data([0, 1, 2, 255, 3])
            var moreBytes = [Data(), Data([104]), Data([104, 105])]
            var date = Date(timeIntervalSinceReferenceDate: 12.5)
            var url = URL(string: "http://x/a/b?c=d")!
            var decimals = [Decimal(string: "3.14159")!, Decimal(string: "-1e30")!, Decimal(0)]
            var nothing = Nothing()
        }
        struct Nothing: Encodable {
            func encode(to encoder: any Encoder) throws {}
        }
        class Base: Encodable {
            var x = 1
        }
        final class Derived: Base {
            var y = 2
            enum Keys: CodingKey { case y }
            override func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(y, forKey: .y)
                try super.encode(to: container.superEncoder())
            }
        }
        let reference = JSONEncoder()
        reference.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func same<T: Encodable>(_ value: T, line: UInt = #line) throws {
            XCTAssertEqual(
                String(decoding: try ResultEncoding.encode(value), as: UTF8.self),
                String(decoding: try reference.encode(value), as: UTF8.self), line: line)
        }
        try same(Members())
        try same([Members(), Members()])
        try same(Derived())
        try same(Data([1, 2, 3]))
        try same(Decimal(string: "0.5")!)
        try same(URL(string: "file:///tmp/a%20b")!)
        try same(Float(2.5))
        try same(["a": [Nothing()]])
        XCTAssertThrowsError(try ResultEncoding.encode(Nothing()), "JSONEncoder refuses a top-level value that encodes nothing")
        XCTAssertThrowsError(try ResultEncoding.encode(["x": Float.nan]))
        XCTAssertThrowsError(
            try ResultEncoding.encode(URL(string: "b", relativeTo: URL(string: "http://x/a/"))!),
            "only Foundation resolves a URL against its base")
        // A JSONValue is written exactly as it is, inside other values too.
        XCTAssertEqual(
            String(decoding: try ResultEncoding.encode(["v": [JSONValue.number("1e400"), .number("1.0")]]), as: UTF8.self),
            #"{"v":[1e400,1.0]}"#)
    }
}
