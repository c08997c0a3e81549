import Foundation
import RPCConfig
import RPCModules
import RPCProtocol
import XCTest

/// systemd's rules for handlers.d: later (higher-priority) directories replace files of the same name,
/// /dev/null symlinks and empty files mask, NAME.conf.d drop-ins override single keys.
final class HandlerDirectoriesTests: XCTestCase {
    private var root: URL!
    private var vendor: String { root.appendingPathComponent("usr-lib").path }
    private var runtime: String { root.appendingPathComponent("run").path }
    private var admin: String { root.appendingPathComponent("etc").path }
    private var directories: HandlerDirectories { HandlerDirectories(directories: [vendor, runtime, admin]) }

    override func setUp() { root = TestModule.temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: root) }

    private func write(_ directory: String, _ name: String, _ text: String) throws {
        let url = URL(fileURLWithPath: directory).appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    func testHigherPriorityDirectoryReplacesTheWholeFile() throws {
        try write(vendor, "calc.conf", "[Handler]\nModule=calc\nTimeout=5s\n")
        try write(admin, "calc.conf", "[Handler]\nModule=calc2\n")
        let handler = try XCTUnwrap(directories.scan().handlers.first)
        XCTAssertEqual(handler.module, "calc2")
        XCTAssertNil(handler.timeout, "nothing of the vendor file survives")
        XCTAssertEqual(handler.sources, ["\(admin)/calc.conf"])
    }

    /// /run/rpcd is the daemon's own to write: a handler file there must not outrank the vendor's (issue 14).
    func testTheDefaultDirectoriesAreVendorThenAdministrator() {
        XCTAssertEqual(HandlerDirectories.defaults, ["/usr/lib/rpcd/handlers.d", "/etc/rpcd/handlers.d"])
    }

    func testLaterDirectoriesOverrideEarlierOnes() throws {
        try write(vendor, "a.conf", "[Handler]\nModule=vendor\n")
        try write(runtime, "a.conf", "[Handler]\nModule=runtime\n")
        XCTAssertEqual(directories.scan().handlers.first?.module, "runtime")
        try write(admin, "a.conf", "[Handler]\nModule=admin\n")
        XCTAssertEqual(directories.scan().handlers.first?.module, "admin")
    }

    /// Module= is a name in the module directory, never a path (issue 14: modules are confined to it).
    func testModulePathsAreRefusedNamingFileAndLine() throws {
        for path in ["/tmp/evil.so", "../modules/calc", "./calc", ".hidden"] {
            try write(admin, "x.conf", "[Handler]\nService=x\nModule=\(path)\n")
            let scan = directories.scan()
            XCTAssertEqual(scan.handlers.count, 0, path)
            XCTAssertEqual(scan.errors.first?.file, "\(admin)/x.conf")
            XCTAssertEqual(scan.errors.first?.line, 3)
            XCTAssertTrue(scan.errors.first?.message.contains("paths are not accepted") ?? false, "\(scan.errors)")
        }
    }

    /// StateDirectory= is one name beneath rpcd's state root, as systemd's: never a path out of it or into another
    /// handler's; an empty assignment resets it to none, as every key's does.
    func testStateDirectoryIsOneNameBeneathTheStateRoot() throws {
        try write(admin, "x.conf", "[Handler]\nModule=x\nStateDirectory=notes-2.v1\n")
        XCTAssertEqual(directories.scan().handlers.first?.stateDirectory, "notes-2.v1")
        try write(admin, "x.conf", "[Handler]\nModule=x\n")
        XCTAssertNil(directories.scan().handlers.first?.stateDirectory, "none by default")
        try write(admin, "x.conf", "[Handler]\nModule=x\nStateDirectory=notes\nStateDirectory=\n")
        XCTAssertNil(directories.scan().handlers.first?.stateDirectory, "an empty assignment resets it")
        for name in ["..", ".", "/x", "a/b", "../other", ".hidden", "x y"] {
            try write(admin, "x.conf", "[Handler]\nModule=x\nStateDirectory=\(name)\n")
            let scan = directories.scan()
            XCTAssertEqual(scan.handlers.count, 0, name)
            XCTAssertEqual(scan.errors.first?.line, 3, name)
            XCTAssertTrue(scan.errors.first?.message.contains("paths are not accepted") ?? false, "\(scan.errors)")
        }
    }

    /// A handler file others can write, or one in a directory others can write, is refused (StrictModes).
    func testHandlerFilesOthersCanWriteAreRefused() throws {
        try write(admin, "calc.conf", "[Handler]\nModule=calc\n")
        XCTAssertEqual(directories.scan().handlers.count, 1)
        chmod("\(admin)/calc.conf", 0o666)
        var scan = directories.scan()
        XCTAssertEqual(scan.handlers.count, 0)
        XCTAssertEqual(scan.failedHandlers, ["calc"])
        XCTAssertTrue(scan.errors.first?.description.hasPrefix("\(admin)/calc.conf: refused: \(admin)/calc.conf is writable by group or others (mode 666)") ?? false, "\(scan.errors)")
        chmod("\(admin)/calc.conf", 0o644)
        chmod(admin, 0o777)
        scan = directories.scan()
        XCTAssertEqual(scan.handlers.count, 0)
        XCTAssertTrue(scan.errors.first?.message.contains("\(admin) is writable by group or others (mode 777)") ?? false, "\(scan.errors)")
        chmod(admin, 0o1777)  // sticky, as /tmp: others cannot replace what is not theirs
        XCTAssertEqual(directories.scan().handlers.count, 1)
    }

    /// In a directory others may write (sticky, as /tmp), a symlink is trusted by its own owner, not by its
    /// target's: another user's link to a root-only file is refused without reading it (rpcd used to log the
    /// file's first line as a syntax error), and another user's link to /dev/null masks nothing.
    func testSymlinksOthersOwnAreRefusedWithoutReadingTheirTarget() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root: the links must belong to another user (lchown)") }
        try write(vendor, "calc.conf", "[Handler]\nModule=calc\n")
        try write(root.appendingPathComponent("secret").path, "shadow", "root:$6$secret-hash:19000:0:99999:7:::\n")
        chmod(root.appendingPathComponent("secret/shadow").path, 0o600)
        try FileManager.default.createDirectory(atPath: admin, withIntermediateDirectories: true)
        chmod(admin, 0o1777)
        let leak = "\(admin)/leak.conf", mask = "\(admin)/calc.conf"
        try FileManager.default.createSymbolicLink(atPath: leak, withDestinationPath: root.appendingPathComponent("secret/shadow").path)
        try FileManager.default.createSymbolicLink(atPath: mask, withDestinationPath: "/dev/null")
        for link in [leak, mask] { XCTAssertEqual(lchown(link, 65534, 65534), 0) }
        let scan = directories.scan()
        XCTAssertEqual(scan.masked.map(\.name), [], "another user's link masks nothing")
        XCTAssertEqual(scan.failedHandlers.sorted(), ["calc", "leak"])
        for error in scan.errors {
            XCTAssertTrue(error.message.contains("is a symlink owned by uid 65534"), "\(error)")
            XCTAssertFalse(error.description.contains("secret-hash"), "a refused file is never read: \(error)")
        }
        // The same links owned by root are the administrator's: the mask masks.
        for link in [leak, mask] { XCTAssertEqual(lchown(link, 0, 0), 0) }
        XCTAssertEqual(directories.scan().masked.map(\.name), ["calc"])
    }

    func testSymlinkToDevNullAndEmptyFileMask() throws {
        try write(vendor, "calc.conf", "[Handler]\nModule=calc\n")
        try write(vendor, "echo.conf", "[Handler]\nModule=echo\n")
        try FileManager.default.createDirectory(atPath: admin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(admin)/calc.conf", withDestinationPath: "/dev/null")
        try write(runtime, "echo.conf", "")
        let scan = directories.scan()
        XCTAssertEqual(scan.handlers.map(\.name), [])
        XCTAssertEqual(scan.masked.map(\.name).sorted(), ["calc", "echo"])
    }

    func testDropInsOverrideSingleKeysInOrderAcrossDirectories() throws {
        try write(vendor, "kv.conf", "[Handler]\nModule=kv\nTimeout=5s\nMaxConcurrency=10\n[Config]\nFile=/var/lib/kv.json\nMode=fast\n")
        try write(vendor, "kv.conf.d/10-timeout.conf", "[Handler]\nTimeout=1s\n")
        try write(admin, "kv.conf.d/20-limit.conf", "[Handler]\nMaxConcurrency=20\n[Config]\nMode=\n")
        try write(admin, "kv.conf.d/10-timeout.conf", "[Handler]\nTimeout=2s\n")  // replaces the vendor drop-in
        let handler = try XCTUnwrap(directories.scan().handlers.first)
        XCTAssertEqual(handler.timeout, .seconds(2))
        XCTAssertEqual(handler.maxConcurrency, 20)
        XCTAssertEqual(handler.config, ["File": "/var/lib/kv.json"], "an empty assignment removes the key")
        XCTAssertEqual(handler.sources, ["\(vendor)/kv.conf", "\(admin)/kv.conf.d/10-timeout.conf", "\(admin)/kv.conf.d/20-limit.conf"])
    }

    /// A refused handler names the file and line to fix (issue 40): the one its reason names, else the
    /// `[Config]` key a module's init names, else `Module=`.
    func testRefusalsPointAtTheLineToFix() throws {
        try write(vendor, "kv.conf", "[Handler]\nModule=kv\n[Config]\nMaxKeys=10\n")
        try write(admin, "kv.conf.d/10-keys.conf", "# more\n[Config]\nMaxKeys=lots\nMaxBytesX=1\n")
        let handler = try XCTUnwrap(directories.scan().handlers.first)
        let dropIn = "\(admin)/kv.conf.d/10-keys.conf"

        let unknown = handler.refusal("module /m/libkv.so refused: handler 'kv': \(dropIn):4: unknown key", previousServes: true)
        XCTAssertEqual(unknown.location, "\(dropIn):4")
        XCTAssertEqual(unknown.service, "kv")
        XCTAssertTrue(unknown.description.contains("previous instance keeps serving"), unknown.description)

        // The last assignment of the key the module's init refused, in whichever file it is.
        let value = handler.refusal("init failed for handler 'kv': MaxKeys= must be a positive whole number", previousServes: false)
        XCTAssertEqual(value.location, "\(dropIn):3")
        XCTAssertTrue(value.description.contains("calls to kv get -32005"), value.description)
        // A key is a whole word: MaxKeysTotal is not MaxKeys, and the reason of a broken file names no key.
        XCTAssertEqual(handler.refusal("MaxKeysTotal is too big", previousServes: false).location, "\(vendor)/kv.conf:2")
        XCTAssertEqual(handler.refusal("dlopen failed: file too short", previousServes: false).location, "\(vendor)/kv.conf:2")

        let json = value.json
        XCTAssertEqual(json["line"], 3)
        XCTAssertEqual(RPCHandlerRefusal(json: json), value)
    }

    func testErrorsNameFileAndLineAndSpareOtherHandlers() throws {
        try write(admin, "bad.conf", "[Handler]\nModule=x\nTimeout=soon\n")
        try write(admin, "nomodule.conf", "[Handler]\nEnabled=yes\n")
        try write(admin, "badservice.conf", "[Handler]\nModule=x\nService=Calc.Service\n")
        try write(admin, "good.conf", "[Handler]\nModule=good\nEnabled=no\n")
        let scan = directories.scan()
        XCTAssertEqual(scan.handlers.map(\.name), ["good"])
        XCTAssertEqual(scan.handlers.first?.enabled, false)
        let messages = scan.errors.map(\.description).sorted()
        XCTAssertEqual(messages.count, 3)
        XCTAssertTrue(messages.contains { $0.hasPrefix("\(admin)/bad.conf:3:") && $0.contains("Timeout") }, "\(messages)")
        XCTAssertTrue(messages.contains { $0.hasPrefix("\(admin)/badservice.conf:3:") }, "\(messages)")
        XCTAssertTrue(messages.contains { $0.hasPrefix("\(admin)/nomodule.conf") && $0.contains("Module=") }, "\(messages)")
    }

    func testServiceNamesFollowRFC6335() {
        for valid in ["calc", "kv", "a", "my-service", "x1", "abcdefghijklmno"] { XCTAssertTrue(ServiceName.isValid(valid), valid) }
        for invalid in ["", "-calc", "calc-", "my--svc", "Calc", "12", "abcdefghijklmnop", "a.b", "a_b"] {
            XCTAssertFalse(ServiceName.isValid(invalid), invalid)
        }
    }
}
