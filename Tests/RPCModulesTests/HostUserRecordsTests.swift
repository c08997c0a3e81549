import Foundation
import RPCJSON
@testable import RPCModules
import XCTest

/// The names module hosts' users get under systemd: nss-systemd's drop-in records, which every process reads.
final class HostUserRecordsTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = TestModule.temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func testRecordsAreReadableJSONFoundByNameAndByID() throws {
        let records = HostUserRecords(directory: directory.path)
        XCTAssertEqual(records.write(id: 393_300, handler: "units"), 0)
        XCTAssertEqual(records.write(id: 393_300, handler: "units"), 0, "written again over the old ones")
        let user = try JSONValue(parsing: Array(Data(contentsOf: directory.appendingPathComponent("393300.user"))))
        XCTAssertEqual(user["userName"], "rpcd-units")
        XCTAssertEqual(user["uid"], 393_300)
        XCTAssertEqual(user["realName"], .string(HostUserRecords.realName))
        let group = try JSONValue(parsing: Array(Data(contentsOf: directory.appendingPathComponent("rpcd-units.group"))))
        XCTAssertEqual(group["gid"], 393_300)
        XCTAssertEqual(
            try FileManager.default.destinationOfSymbolicLink(atPath: directory.appendingPathComponent("393300.group").path),
            "rpcd-units.group")
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("rpcd-units.user").path)[.posixPermissions] as? Int)
        XCTAssertEqual(mode, 0o644, "whatever rpcd's umask: every process looks users up")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted(),
                       ["393300.group", "393300.user", "rpcd-units.group", "rpcd-units.user"], "no temporary file left")
    }

    func testNamesAreUserNamesSystemdAccepts() {
        XCTAssertEqual(HostUserRecords.userName(handler: "notes", id: 1), "rpcd-notes")
        XCTAssertEqual(HostUserRecords.userName(handler: "my.handler", id: 7), "rpcd-host-7", "a dot is not in a strict user name")
        XCTAssertEqual(HostUserRecords.userName(handler: String(repeating: "a", count: 27), id: 7), "rpcd-host-7", "at most 31")
        XCTAssertTrue(HostUserRecords.isAccount(0), "root is an account: never a host's")
        if getenv("INVOCATION_ID") == nil {
            XCTAssertNil(HostUserRecords.underSystemd(directory: directory.path), "only where systemd runs rpcd")
        }
    }
}
