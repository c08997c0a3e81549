import Foundation
import RPCModuleSDK
import XCTest

/// `RPCStateFile`: what a Swift module reads and replaces in its state directory, without its own file I/O.
final class StateFileTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-state-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private struct Notes: Codable, Equatable {
        var next: Int
        var notes: [String: String]
    }

    func testAMissingFileIsNilAndAWrittenOneReadsBack() throws {
        let file = directory + "/notes.json"
        XCTAssertNil(try RPCStateFile.readBytes(file))
        XCTAssertNil(try RPCStateFile.read(Notes.self, from: file))
        let notes = Notes(next: 2, notes: ["1": "milk"])
        try RPCStateFile.write(notes, to: file)
        XCTAssertEqual(try RPCStateFile.read(Notes.self, from: file), notes)
        XCTAssertEqual(try RPCStateFile.readJSON(file)?["notes"]?["1"], "milk")
        try RPCStateFile.writeJSON(["next": 3], to: file)
        XCTAssertEqual(try RPCStateFile.readJSON(file), ["next": 3], "replaced whole")
        var info = stat()
        XCTAssertEqual(stat(file, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600, "new files are the module's alone")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), ["notes.json"], "no temporary file left")
    }

    func testBytesOfAnySizeRoundTrip() throws {
        let file = directory + "/blob"
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try RPCStateFile.writeBytes(bytes, to: file)
        XCTAssertEqual(try RPCStateFile.readBytes(file), bytes)
        try RPCStateFile.writeBytes([], to: file)
        XCTAssertEqual(try RPCStateFile.readBytes(file), [])
    }

    func testErrorsNameTheFile() throws {
        let file = directory + "/broken.json"
        try "{not json".write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try RPCStateFile.readJSON(file)) { error in
            XCTAssertTrue("\(error)".hasPrefix("\(file) is not valid JSON"), "\(error)")
        }
        XCTAssertThrowsError(try RPCStateFile.writeBytes([1], to: directory + "/missing/file")) { error in
            XCTAssertEqual("\(error)", "cannot write \(directory!)/missing/file: No such file or directory")
            XCTAssertEqual((error as? RPCStateFileError)?.errno, ENOENT)
        }
        try RPCStateFile.writeJSON(["a"], to: file)
        XCTAssertThrowsError(try RPCStateFile.read(Notes.self, from: file)) { error in
            XCTAssertTrue("\(error)".contains("does not hold a Notes"), "\(error)")
        }
    }

    /// The context hands over the state directory it was given; a test context without one has none.
    func testTheContextHandsOverItsStateDirectory() {
        XCTAssertEqual(RPCModuleContext(stateDirectory: "/var/lib/rpcd/notes").stateDirectory, "/var/lib/rpcd/notes")
        XCTAssertNil(RPCModuleContext().stateDirectory)
    }
}
