import Foundation
import XCTest

/// `@exclusivity(unchecked)` leaves out the run-time check that two accesses to a stored property do not
/// overlap. rpcd allows it on one kind of property only: one holding a state machine, a struct whose methods
/// take events and return actions and call nothing outside the value (no closure parameter, no stored closure).
/// An access to such a value ends before anything else can run, so no other access can overlap it.
final class UncheckedExclusivityTests: XCTestCase {
    func testOnlyStateMachineValuesGoUnchecked() throws {
        let sources = PackageManifest.repository.appendingPathComponent("Sources")
        let files = try XCTUnwrap(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        var texts: [String: String] = [:]  // by path, and by file name for a type's own file
        var byName: [String: String] = [:]
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            texts[file.path] = text
            byName[file.lastPathComponent] = text
        }
        var found = 0
        for (file, text) in texts {
            for line in text.split(separator: "\n") where line.contains("@exclusivity(unchecked)") {
                found += 1
                guard let type = Self.declaredType(of: String(line)) else {
                    XCTFail("\(file): `\(line.trimmingCharacters(in: .whitespaces))` does not name its type")
                    continue
                }
                guard let declaration = byName["\(type).swift"], declaration.contains("struct \(type)") else {
                    XCTFail("\(file): \(type) goes unchecked but is not a struct declared in \(type).swift")
                    continue
                }
                // A closure-typed parameter or stored property (`: (Int) -> Bool`, `: @escaping () -> Void`) is a way
                // out of the value.
                if let closure = declaration.range(of: #":\s*(@escaping\s*)?(@Sendable\s*)?\([^()]*\)\s*(throws\s*)?->"#, options: .regularExpression) {
                    XCTFail("\(file): \(type) goes unchecked but \(type).swift takes or holds a closure (`\(declaration[closure])`)")
                }
            }
        }
        XCTAssertGreaterThan(found, 0, "the search found no use at all: is it still looking in the right place?")
    }

    /// `Foo` from `@exclusivity(unchecked) private var x: Foo` or `… var x = Foo()`.
    static func declaredType(of line: String) -> String? {
        if let colon = line.range(of: ": ") {
            return String(line[colon.upperBound...].prefix { $0.isLetter || $0.isNumber })
        }
        if let equals = line.range(of: "= ") {
            return String(line[equals.upperBound...].prefix { $0.isLetter || $0.isNumber })
        }
        return nil
    }
}
