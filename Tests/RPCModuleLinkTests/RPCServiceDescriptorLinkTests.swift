import Foundation
import NIOCore
import RPCBinding
import RPCJSON
import RPCModuleLink
import RPCProtocol
import XCTest

/// A module host's descriptor, which rpcd reads from hostile bytes: what `linkJSON` writes reads back exactly,
/// and everything else (a key too many, too few, of the wrong type) is refused with its path.
final class RPCServiceDescriptorLinkTests: XCTestCase {
    private let descriptor = RPCServiceDescriptor(
        name: "kv", version: "1.2.0", summary: "A store",
        methods: [
            RPCMethodDescriptor(
                name: "set", summary: "Sets",
                params: [RPCParam("key", schema: ["type": "string"], summary: "The key"), RPCParam("value", schema: true, optional: true)],
                result: RPCParam("result", schema: ["type": "boolean"]),
                errors: [RPCError(code: 1, message: "Store full", data: ["limit": 10]), RPCError(code: -5, message: "")],
                flags: [.mayBlock, .byPosition]),
            RPCMethodDescriptor(name: "get", flags: [.readOnly]),
        ],
        events: [RPCEventDescriptor(name: "changed", summary: "A key changed", schema: ["type": "object"])])

    private func read(_ value: JSONValue) -> Result<RPCServiceDescriptor, LinkDescriptorError> {
        Result { () throws(LinkDescriptorError) in try RPCServiceDescriptor(linkBuffer: value.linkBuffer) }
    }

    private func assertRefused(_ value: JSONValue, _ path: String, _ problem: String, line: UInt = #line) {
        switch read(value) {
        case .success: XCTFail("accepted: \(value)", line: line)
        case .failure(let error):
            XCTAssertEqual(error.path, path, line: line)
            XCTAssertEqual(error.problem, problem, line: line)
        }
    }

    func testADescriptorReadsBackExactly() throws {
        let written = descriptor.linkJSON
        let decoded = try read(written).get()
        XCTAssertEqual(decoded, descriptor)
        XCTAssertEqual(decoded.linkJSON, written)
        XCTAssertEqual(decoded.fingerprint, descriptor.fingerprint)
    }

    /// Every object in the written tree (schemas and error data are values, not read as objects), with its path.
    private func objects(_ value: JSONValue, at path: String = "") -> [(path: String, members: [String: JSONValue])] {
        guard case .object(let members) = value else { return [] }
        var found = [(path, members)]
        for (key, member) in members where key != "schema" && key != "data" {
            let memberPath = path.isEmpty ? key : "\(path).\(key)"
            if case .array(let elements) = member {
                for (index, element) in elements.enumerated() { found += objects(element, at: "\(memberPath)[\(index)]") }
            } else {
                found += objects(member, at: memberPath)
            }
        }
        return found
    }

    /// `value` with the object at `path` replaced by `members`.
    private func replacing(_ path: String, in value: JSONValue, with members: [String: JSONValue]) -> JSONValue {
        guard !path.isEmpty else { return .object(members) }
        var rest = Substring(path)
        let step = rest.prefix { $0 != "." && $0 != "[" }
        rest = rest.dropFirst(step.count)
        guard case .object(var object) = value else { return value }
        if rest.hasPrefix("[") {
            let index = Int(rest.dropFirst().prefix { $0 != "]" })!
            rest = rest.drop { $0 != "]" }.dropFirst()
            guard case .array(var elements) = object[String(step)] else { return value }
            elements[index] = replacing(String(rest.drop { $0 == "." }), in: elements[index], with: members)
            object[String(step)] = .array(elements)
        } else {
            object[String(step)] = replacing(String(rest.dropFirst()), in: object[String(step)]!, with: members)
        }
        return .object(object)
    }

    func testEveryObjectRefusesAnUnknownKey() {
        let written = descriptor.linkJSON
        let all = objects(written)
        XCTAssertEqual(all.count, 9)  // the service, 2 methods, 3 params (a result is one), 2 errors, 1 event
        for (path, members) in all {
            var extra = members
            extra["Summary"] = .string("")
            assertRefused(replacing(path, in: written, with: extra), path, #"unknown key "Summary""#)
        }
    }

    func testEveryKeyIsRequired() {
        let written = descriptor.linkJSON
        for (path, members) in objects(written) {
            for key in members.keys {
                var fewer = members
                fewer[key] = nil
                assertRefused(replacing(path, in: written, with: fewer), path.isEmpty ? key : "\(path).\(key)", "missing")
            }
        }
    }

    func testEveryKeyHasItsType() {
        let written = descriptor.linkJSON
        for (path, members) in objects(written) {
            for (key, member) in members where key != "schema" && key != "data" {
                // A value of another kind: what no reader of this key takes (`result` takes null or an object).
                let wrong: JSONValue = switch member {
                case .string: .number(1)
                case .number: .string("1")
                case .bool: .number(0)
                case .array, .object, .null: .string("")
                }
                var changed = members
                changed[key] = wrong
                let memberPath = path.isEmpty ? key : "\(path).\(key)"
                XCTAssertThrowsError(try RPCServiceDescriptor(linkJSON: replacing(path, in: written, with: changed)), memberPath) {
                    XCTAssertEqual(($0 as? LinkDescriptorError)?.path, memberPath)
                }
            }
        }
    }

    func testIntegersNamesAndFlagsAreWhatAModuleCanDeclare() {
        let written = descriptor.linkJSON
        let method = objects(written).first { $0.path == "methods[1]" }!.members
        func changed(_ key: String, _ value: JSONValue) -> JSONValue {
            var changed = method
            changed[key] = value
            return replacing("methods[1]", in: written, with: changed)
        }
        // Integers as `linkJSON` writes them, so that what rpcd reads writes back the same.
        assertRefused(changed("flags", .number("2.0")), "methods[1].flags", "not an integer")
        assertRefused(changed("flags", .number("2e0")), "methods[1].flags", "not an integer")
        assertRefused(changed("flags", .number("4294967298")), "methods[1].flags", "4294967298 has a bit no module may declare")
        assertRefused(changed("flags", .number(4)), "methods[1].flags", "4 has a bit no module may declare")  // .anyPeer
        assertRefused(changed("flags", .number(32)), "methods[1].flags", "32 has a bit no module may declare")
        assertRefused(changed("name", "a.b"), "methods[1].name", "not \(MemberName.rule)")
        var service = written.objectValue!
        service["name"] = "rpc.x"
        assertRefused(.object(service), "name", "not \(ServiceName.rule)")
        assertRefused(.array([]), "", "not an object")
        XCTAssertThrowsError(try RPCServiceDescriptor(linkBuffer: ByteBuffer(string: "{"))) {
            XCTAssertEqual("\($0)", "not JSON")
        }
    }

    /// Issue 42: the fuzzer's input (`fuzz/corpus/modulelink/ready-unknown-keys`), a `ready` message whose param
    /// has misspelled `schema` and `optional` keys and whose error has an unknown key instead of `data`.
    func testMisspelledKeysAreRefused() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../fuzz/corpus/modulelink/ready-unknown-keys")
        let input = try Data(contentsOf: corpus)
        // Byte 0 seeds the harness's cuts; the rest is the frame.
        guard case .ready(let json) = try ModuleLinkMessage(frame: ByteBuffer(bytes: input.dropFirst())) else {
            return XCTFail("not a ready message")
        }
        XCTAssertThrowsError(try RPCServiceDescriptor(linkBuffer: json)) {
            XCTAssertEqual("\($0)", #"methods[0].params[0]: unknown key "optiLnal""#)
        }
    }
}
