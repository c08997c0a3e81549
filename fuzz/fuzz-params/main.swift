// libFuzzer harness for the module SDK's parameter binding: params JSON is bound to declared parameters
// (RPCBinding's ParamsBinder, shared by every typed `RPCMethod`: the built-in services, modules and typed interfaces;
// positions, names, optional, schema checks), then decoded with JSONValueDecoder into a few representative
// Codable types, as a typed method does for every call.
//
// Input layout: byte 0 picks the method shape; the rest is the params text. Inputs that are not JSON are
// skipped (the envelope and JSON harnesses cover those).
//
// Properties: binding and decoding either succeed or throw RPCError.invalidParams; nothing traps, nothing
// else is thrown (anything else would reach the caller as -32603). Binding the params' text member by member
// (`ParamsBinder.bind(text:)`, what every typed method does, `RPCMethodInput.decode`) agrees with binding the
// parsed tree (what `raw` bodies and `ParamsBinding.bind` see): the same values, or the same error.
import FuzzDriver
#if canImport(Glibc)
import Glibc
#endif
import RPCBinding
import RPCProtocol
import RPCJSON

private struct Arithmetic: Decodable {
    var a: Double
    var b: Double
}

private struct Counted: Decodable {
    var count: Int
    var small: UInt8?
    var wide: Int64?
    var ratio: Float?
}

private struct Tagged: Decodable {
    struct Inner: Decodable {
        var name: String
        var values: [Int]?
        var child: [String: Bool]?
    }
    var tags: [String]
    var inner: Inner?
    var raw: JSONValue?
    var flag: Bool?
}

private struct Loose: Decodable {
    var any: JSONValue
    var list: [JSONValue]?
    var mode: String?
    var unsigned: UInt?
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzParams(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let selector = data[0]
    guard let params = try? JSONValue(parsing: UnsafeRawBufferPointer(start: data + 1, count: size - 1)) else {
        return 0
    }
    let text = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    do {
        switch selector % 5 {
        case 0:
            let bound = try agreeing([.number("a"), .number("b")], params, text)
            _ = try ParamsBinding.decode(Arithmetic.self, from: bound)
        case 1:
            let declared: [RPCParam] = [
                .integer("count", minimum: -5, maximum: 1 << 40), .integer("small", maximum: 300, optional: true),
                .integer("wide", optional: true), .number("ratio", optional: true),
            ]
            let bound = try agreeing(declared, params, text)
            _ = try ParamsBinding.decode(Counted.self, from: bound)
        case 2:
            let declared: [RPCParam] = [
                .array("tags", items: ["type": "string"]), .object("inner", optional: true),
                .any("raw", optional: true), .boolean("flag", optional: true),
            ]
            let bound = try agreeing(declared, params, text)
            _ = try ParamsBinding.decode(Tagged.self, from: bound)
        case 3:
            let declared: [RPCParam] = [
                .any("any"), .array("list", optional: true),
                RPCParam("mode", schema: ["type": "string", "enum": ["fast", "slow", 1, 1.5e300]], optional: true),
                RPCParam("unsigned", schema: ["type": ["integer", "null"], "minimum": 0], optional: true),
            ]
            let bound = try agreeing(declared, params, text)
            _ = try ParamsBinding.decode(Loose.self, from: bound)
        default:
            _ = try agreeing([], params, text)
        }
    } catch let error as RPCError {
        precondition(error.code == -32602, "binding threw \(error), not invalid params")
    } catch {
        preconditionFailure("binding threw \(error), which would become -32603")
    }
    return 0
}

/// `ParamsBinding.bind(_:to:)`'s members, after checking that the binder reading the text agrees with it.
private func agreeing(_ declared: [RPCParam], _ params: JSONValue, _ text: UnsafeRawBufferPointer) throws -> [String: JSONValue] {
    let binder = ParamsBinder(declared)
    let fromText = Result { try binder.bind(text: text) }
    let fromTree = Result { try binder.bind(params) }
    switch (fromText, fromTree) {
    case (.success(let a), .success(let b)):
        precondition(a.values == b.values, "bound from the text: \(a.values), from the tree: \(b.values)")
        return b.members
    case (.failure(let a), .failure(let b)):
        precondition(a as? RPCError == b as? RPCError, "from the text: \(a), from the tree: \(b)")
        throw b
    default:
        preconditionFailure("from the text: \(fromText), from the tree: \(fromTree)")
    }
}

exit(runFuzzer(fuzzParams))
