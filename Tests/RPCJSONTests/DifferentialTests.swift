import RPCJSON
import XCTest

/// Compares the scanner with a deliberately simple recursive validator written from RFC 8259 on mutated
/// documents, and checks that the parser agrees with the scanner and round-trips what it accepts.
final class DifferentialTests: XCTestCase {
    private let seeds = [
        #"{"a":[1,-2.5e+3,true,false,null],"b\u00e9":"x\"y\\z","c":{"d":[]},"e":"é😀"}"#,
        #"[0,-0,0.5e-7,10E2,"\ud83d\ude00\/\b\f\n\r\t",{"":[{}]}]"#,
        #"{"jsonrpc":"2.0","method":"calc.add","params":[1,2.5],"id":"x-1"}"#,
    ]

    /// `seeds[round % seeds.count]` with one to three bytes replaced, inserted or removed.
    private func mutated(_ seeds: [String], round: Int, _ generator: inout SplitMix64) -> [UInt8] {
        let alphabet = Array(#"{}[],:"\ 0123456789-+.eEtrufalsn/ubx"#.utf8) + [0x00, 0x0A, 0x80, 0xA9, 0xC3, 0xED, 0xFF]
        var bytes = Array(seeds[round % seeds.count].utf8)
        for _ in 0..<Int(generator.next() % 3 + 1) where !bytes.isEmpty {
            let position = Int(generator.next() % UInt64(bytes.count))
            let byte = alphabet[Int(generator.next() % UInt64(alphabet.count))]
            switch generator.next() % 3 {
            case 0: bytes[position] = byte
            case 1: bytes.insert(byte, at: position)
            default: bytes.remove(at: position)
            }
        }
        return bytes
    }

    func testScannerAgreesWithTheReferenceOnMutatedInputs() throws {
        var generator = SplitMix64(seed: 42)
        var accepted = 0
        for round in 0..<30_000 {
            let bytes = mutated(seeds, round: round, &generator)
            let scanned = scanError(bytes)
            let text = String(decoding: bytes, as: UTF8.self).debugDescription
            guard (scanned == nil) == ReferenceValidator.accepts(bytes) else {
                return XCTFail("scanner \(scanned.map { "rejects (\($0))" } ?? "accepts") \(text), reference disagrees")
            }
            switch Result(catching: { () throws(JSONSyntaxError) in try JSONValue(parsing: bytes) }) {
            case .success(let value):
                XCTAssertNil(scanned, "parsed what the scanner rejected: \(text)")
                XCTAssertEqual(try JSONValue(parsing: value.serialized()), value, text)
                accepted += 1
            case .failure(let error):
                XCTAssertEqual(error, scanned, text)
            }
        }
        XCTAssertGreaterThan(accepted, 1_000, "too few mutations were valid JSON to test the round trip")
    }

    /// An object read with `openObject` and `scanMember`, as the envelope parser reads requests, is accepted or
    /// refused exactly as `scanValue` accepts or refuses it, with the same error at the same offset.
    func testObjectsReadMemberByMemberAgreeWithScanValue() {
        let objects = [seeds[0], seeds[2], #"{"id":1}"#, #"{"a":"b"}"#, #" { "jsonrpc" : "2.0" , "id" : "abcdefgh" } "#]
        var generator = SplitMix64(seed: 7)
        var accepted = 0
        for round in 0..<30_000 {
            let bytes = mutated(objects, round: round, &generator)
            let firstByte = bytes.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
            guard firstByte == UInt8(ascii: "{") else { continue }
            let text = String(decoding: bytes, as: UTF8.self).debugDescription
            let byMembers = bytes.withUnsafeBytes { buffer -> JSONSyntaxError? in
                var scanner = JSONScanner(bytes: buffer, maxDepth: 3)
                do throws(JSONSyntaxError) {
                    var isLast = !(try scanner.openObject(depth: 0))
                    while !isLast { isLast = try scanner.scanMember(depth: 0).isLast }
                    try scanner.expectEnd()
                    return nil
                } catch {
                    return error
                }
            }
            XCTAssertEqual(byMembers, scanError(bytes, maxDepth: 3), text)
            if byMembers == nil { accepted += 1 }
        }
        XCTAssertGreaterThan(accepted, 1_000, "too few mutations were valid objects")
    }

    func testReferenceValidatorItselfDiscriminates() {
        // Guards the guard: a reference that accepted or rejected everything would make the test above vacuous.
        XCTAssertTrue(seeds.allSatisfy { ReferenceValidator.accepts(Array($0.utf8)) })
        for bad in ["[1,]", "01", #""\x""#, "\"\u{1}\"", "1 2", "", "[", "{\"a\"}"] {
            XCTAssertFalse(ReferenceValidator.accepts(Array(bad.utf8)), bad)
        }
        XCTAssertFalse(ReferenceValidator.accepts([0x22, 0xC0, 0x80, 0x22]))
    }
}

/// Recursive-descent JSON validator: slow and stack-hungry, but short enough to check against the RFC by eye.
private struct ReferenceValidator {
    let bytes: [UInt8]
    var index = 0

    static func accepts(_ bytes: [UInt8]) -> Bool {
        var validator = ReferenceValidator(bytes: bytes)
        guard validator.value() else { return false }
        validator.whitespace()
        return validator.index == bytes.count
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func take(_ byte: Character) -> Bool {
        guard current == byte.asciiValue else { return false }
        index += 1
        return true
    }

    private mutating func whitespace() {
        while let byte = current, [0x20, 0x09, 0x0A, 0x0D].contains(byte) { index += 1 }
    }

    private mutating func value() -> Bool {
        whitespace()
        switch current.map({ Character(Unicode.Scalar($0)) }) {
        case "{": return container(close: "}", member: true)
        case "[": return container(close: "]", member: false)
        case "\"": return string()
        case "t": return literal("true")
        case "f": return literal("false")
        case "n": return literal("null")
        default: return number()
        }
    }

    private mutating func container(close: Character, member: Bool) -> Bool {
        index += 1
        whitespace()
        if take(close) { return true }
        repeat {
            if member {
                whitespace()
                guard string() else { return false }
                whitespace()
                guard take(":") else { return false }
            }
            guard value() else { return false }
            whitespace()
        } while take(",")
        return take(close)
    }

    private mutating func literal(_ word: String) -> Bool {
        word.allSatisfy { take($0) }
    }

    private mutating func digits() -> Int {
        let start = index
        while let byte = current, byte >= 0x30 && byte <= 0x39 { index += 1 }
        return index - start
    }

    private mutating func number() -> Bool {
        _ = take("-")
        if take("0") {
            if let byte = current, byte >= 0x30 && byte <= 0x39 { return false }
        } else if digits() == 0 {
            return false
        }
        if take("."), digits() == 0 { return false }
        if take("e") || take("E") {
            _ = take("+") || take("-")
            if digits() == 0 { return false }
        }
        return true
    }

    private mutating func string() -> Bool {
        guard take("\"") else { return false }
        var run: [UInt8] = []  // raw bytes since the last escape, validated as UTF-8 on their own
        while let byte = current {
            index += 1
            if byte == 0x22 { return String(validating: run, as: UTF8.self) != nil }
            if byte < 0x20 { return false }
            guard byte == 0x5C else {
                run.append(byte)
                continue
            }
            guard String(validating: run, as: UTF8.self) != nil, let escape = current else { return false }
            run = []
            index += 1
            if escape == UInt8(ascii: "u") {
                for _ in 0..<4 {
                    guard let hex = current, Character(Unicode.Scalar(hex)).isHexDigit else { return false }
                    index += 1
                }
            } else if !#""\/bfnrt"#.utf8.contains(escape) {
                return false
            }
        }
        return false
    }
}
