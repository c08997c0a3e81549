import CRPCDHostSupport
import Foundation
@testable import RPCModuleHost
@testable import RPCModules
import RPCProtocol
import XCTest

final class ModuleLoaderTests: XCTestCase {
    private var directory: URL!

    override func setUp() { directory = TestModule.temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func testLoadsDescriptorFromCModule() throws {
        let image = try ModuleLoader().load(path: TestModule.build(into: directory))
        XCTAssertEqual(image.name, "testmod")
        XCTAssertEqual(image.version, "1.0.0")
        XCTAssertEqual(image.methods.map(\.name), ["ok", "fail", "bad_json", "twice", "later", "block", "greeting", "echo", "wait_cancel", "bound", "stall", "await_cancel"])
        XCTAssertEqual(image.methods[4].params.first?.schema, ["type": "integer"])
        XCTAssertEqual(image.methods[7].params.first?.required, false)
        XCTAssertTrue(image.methods[5].flags.contains(.mayBlock))
        XCTAssertEqual(image.methods[0].result?.schema, ["type": "integer"])
        XCTAssertEqual(image.methods[0].result?.name, "answer", "rpcd_method.result_name")
        XCTAssertEqual(image.methods[7].result?.name, nil)
    }

    func testRefusalsNameTheFileAndTheReason() throws {
        let cases: [(String, [String], String)] = [
            ("abi99", ["ABI_VERSION=99"], "built for module ABI 99; this rpcd speaks ABI 1"),
            ("noentry", ["ENTRY=some_other_symbol"], "does not export rpcd_module_entry_v1"),
            ("badname", [#"MODULE_NAME="Bad_Name""#], "module name is missing or not a service name"),
            ("oldswift", [#"SWIFT_VERSION="5.9""#],
             "built with Swift 5.9, but rpcd runs the Swift \(RPCSwiftVersion.compiled) runtime: rebuild the module with Swift \(RPCSwiftVersion.compiled)"),
        ]
        for (name, defines, reason) in cases {
            let path = try TestModule.build(into: directory, name: name, defines: defines)
            XCTAssertThrowsError(try ModuleLoader().load(path: path), name) { error in
                XCTAssertTrue("\(error)".hasPrefix("module \(path) refused: "), "\(error)")
                XCTAssertTrue("\(error)".contains(reason), "\(error)")
            }
        }
        XCTAssertThrowsError(try ModuleLoader().load(path: directory.appendingPathComponent("missing.so").path)) { error in
            XCTAssertTrue("\(error)".contains("no such file"), "\(error)")
        }
        let notELF = directory.appendingPathComponent("text.so")
        try "not a library".write(to: notELF, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try ModuleLoader().load(path: notELF.path)) { error in
            XCTAssertTrue("\(error)".contains("dlopen failed"), "\(error)")
        }
    }

    /// A module file cut short (truncated, or copied over while it was read) is refused by name, not mapped past
    /// its end, where the first touch of a missing page would kill the process with SIGBUS (issue 40).
    func testAModuleCutShortIsRefusedNotMapped() throws {
        let path = try TestModule.build(into: directory, name: "cutshort")
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        // Its headers whole, its segments (the code at 4 KiB on) not.
        XCTAssertEqual(truncate(path, off_t(min(4096, size / 2))), 0)
        XCTAssertThrowsError(try ModuleLoader().load(path: path)) { error in
            XCTAssertTrue("\(error)".contains("the file is shorter than its ELF headers say"), "\(error)")
        }
    }

    func testAModuleBuiltAgainstTheFirstABI1HeaderLoads() throws {
        // rpcd 0.1's rpcd_module ended after deinit; such a module loads and its later fields read as absent.
        let path = try TestModule.build(
            into: directory, name: "firstlayout", defines: ["MODULE_SIZE=offsetof(rpcd_module,events)"])
        let image = try ModuleLoader().load(path: path)
        XCTAssertEqual(image.methods.count, 12)
        XCTAssertNil(image.module.cancel)
        XCTAssertNil(image.module.events)
        XCTAssertEqual(image.module.n_events, 0)

        let tooSmall = try TestModule.build(
            into: directory, name: "toosmall", defines: ["MODULE_SIZE=offsetof(rpcd_module,deinit)"])
        XCTAssertThrowsError(try ModuleLoader().load(path: tooSmall)) { error in
            XCTAssertTrue("\(error)".contains("rpcd_module.struct_size is 64, smaller than ABI 1's 72"), "\(error)")
        }
    }

    /// `rpcd_method.errors_json` (rpcd 0.4) becomes the method's documented errors, which `rpc.discover` lists;
    /// anything but an array of `{"code", "message"}` outside the reserved range refuses the module.
    func testDocumentedErrorsAreReadFromErrorsJSON() throws {
        let documented = try TestModule.build(
            into: directory, name: "errors", defines: [#"OK_ERRORS="[{\"code\":1,\"message\":\"One\"},{\"code\":-5,\"message\":\"Minus five\"}]""#])
        let image = try ModuleLoader().load(path: documented)
        XCTAssertEqual(image.methods[0].errors, [RPCError(code: 1, message: "One"), RPCError(code: -5, message: "Minus five")])
        XCTAssertEqual(image.methods[1].errors, [])
        for (name, json) in [("errorsreserved", #"[{\"code\":-32001,\"message\":\"x\"}]"#), ("errorsobject", #"{\"code\":1}"#)] {
            let path = try TestModule.build(into: directory, name: name, defines: ["OK_ERRORS=\"\(json)\""])
            XCTAssertThrowsError(try ModuleLoader().load(path: path), name) { error in
                XCTAssertTrue("\(error)".contains("method 'ok': errors_json must be a JSON array"), "\(error)")
            }
        }
    }

    func testAModuleOfTheSameSwiftLoads() throws {
        let path = try TestModule.build(into: directory, name: "sameswift", defines: [#"SWIFT_VERSION="\#(RPCSwiftVersion.compiled)""#])
        XCTAssertNoThrow(try ModuleLoader().load(path: path))
    }

    func testUnchangedFileIsTheSameImageAndAChangedFileANewOne() throws {
        let loader = ModuleLoader()
        let path = try TestModule.build(into: directory)
        let first = try loader.load(path: path)
        XCTAssertTrue(first === (try loader.load(path: path)))
        // Replace the file (new inode), as a package upgrade would.
        let rebuilt = try TestModule.build(into: directory.appendingPathComponent("v2"), defines: [#"MODULE_NAME="testmod-two""#])
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: rebuilt, toPath: path)
        let second = try loader.load(path: path)
        XCTAssertFalse(first === second)
        XCTAssertEqual(second.name, "testmod-two", "the new file's code, not the cached image")
        XCTAssertEqual(first.name, "testmod", "the old image is still mapped and intact")
    }

    /// A module is mapped from a sealed memory copy of its file; only what the dynamic loader reads is copied
    /// (headers and segments, at their offsets), so symbol tables and debug information take no memory in rpcd
    /// or a module host (issue 20: 2 MiB per host for the Swift examples built with -g).
    func testTheSealedCopyHoldsTheSegmentsAndNothingElse() throws {
        let path = try TestModule.build(into: directory)
        let original = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let copy = try sealedCopy(of: path)
        XCTAssertEqual(copy.count, original.count)
        func integer(_ offset: Int, _ width: Int) -> Int {
            (0..<width).reduce(0) { $0 | Int(original[offset + $1]) << (8 * $1) }
        }
        var kept = [0..<(integer(32, 8) + integer(56, 2) * integer(54, 2))]  // e_phoff + e_phnum * e_phentsize
        for index in 0..<integer(56, 2) {
            let header = integer(32, 8) + index * integer(54, 2)
            let offset = integer(header + 8, 8), size = integer(header + 32, 8)  // p_offset, p_filesz
            kept.append(offset..<(offset + size))
        }
        for range in kept {
            XCTAssertEqual(copy[range], original[range], "segment \(range)")
        }
        let sectionHeaders = integer(40, 8)  // e_shoff: read by no loader
        XCTAssertFalse(kept.contains { $0.contains(sectionHeaders) })
        XCTAssertTrue(copy[sectionHeaders...].allSatisfy { $0 == 0 }, "section headers and what follows are a hole")
        XCTAssertFalse(original[sectionHeaders...].allSatisfy { $0 == 0 })

        let text = directory.appendingPathComponent("text.so")
        try "not a library, copied whole".write(to: text, atomically: true, encoding: .utf8)
        XCTAssertEqual(try sealedCopy(of: text.path), try Array(Data(contentsOf: text)))
    }

    private func sealedCopy(of path: String) throws -> [UInt8] {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(file) }
        var info = stat()
        XCTAssertEqual(fstat(file, &info), 0)
        let copy = rpcd_sealed_copy(file, info.st_size, "test")
        XCTAssertGreaterThanOrEqual(copy, 0, String(cString: strerror(errno)))
        defer { close(copy) }
        var bytes = [UInt8](repeating: 0xff, count: Int(info.st_size))
        XCTAssertEqual(bytes.withUnsafeMutableBytes { pread(copy, $0.baseAddress, $0.count, 0) }, Int(info.st_size))
        return bytes
    }
}
