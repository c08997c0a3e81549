#if canImport(Glibc)
import Glibc
#endif
import RPCConfig
import XCTest

final class DropInTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    func testMainFileAloneWhenThereIsNoDropInDirectory() throws {
        let main = try directory.write("rpcd.conf", "[Server]\nThreads=2\n")
        let documents = try INIDocument.loadWithDropIns(main: main)
        XCTAssertEqual(documents.map(\.file), [main])
        XCTAssertEqual(documents.first?.entries.map(\.value), ["2"])
    }

    func testMissingMainFileIsAnErrorNamingIt() {
        let main = directory.path + "/rpcd.conf"
        XCTAssertEqual(
            configError { try INIDocument.loadWithDropIns(main: main) }?.description, "\(main): configuration file not found")
        XCTAssertEqual(configError { try ServerConfiguration.load(path: main) }?.description, "\(main): configuration file not found")
    }

    func testMainFileThatIsADirectoryIsAnError() throws {
        try directory.makeDirectory("rpcd.conf")
        let main = directory.path + "/rpcd.conf"
        XCTAssertEqual(
            configError { try INIDocument.load(path: main) }?.description, "\(main): is a directory; expected a configuration file")
    }

    func testDropInsFollowTheMainFileInLexicalOrder() throws {
        let main = try directory.write("rpcd.conf", "")
        try directory.write("rpcd.conf.d/20-b.conf", "")
        try directory.write("rpcd.conf.d/10-a.conf", "")
        try directory.write("rpcd.conf.d/9-c.conf", "")
        try directory.write("rpcd.conf.d/B-upper.conf", "")
        // Not drop-ins: other suffixes, hidden files, directories.
        try directory.write("rpcd.conf.d/README", "not ini")
        try directory.write("rpcd.conf.d/30-old.conf.bak", "not ini")
        try directory.write("rpcd.conf.d/.hidden.conf", "not ini")
        try directory.makeDirectory("rpcd.conf.d/40-dir.conf")
        let names = try INIDocument.loadWithDropIns(main: main).map { $0.file.replacingOccurrences(of: directory.path, with: "") }
        XCTAssertEqual(
            names,
            ["/rpcd.conf", "/rpcd.conf.d/10-a.conf", "/rpcd.conf.d/20-b.conf", "/rpcd.conf.d/9-c.conf", "/rpcd.conf.d/B-upper.conf"])
    }

    func testLaterDropInsOverrideEarlierAssignments() throws {
        let main = try directory.write("rpcd.conf", "[Server]\nMaxConnections=10\nLogLevel=debug\n")
        try directory.write("rpcd.conf.d/20-late.conf", "[Server]\nMaxConnections=30\n")
        try directory.write("rpcd.conf.d/10-early.conf", "[Server]\nMaxConnections=20\nThreads=6\n")
        let config = try ServerConfiguration.load(path: main)
        XCTAssertEqual(config.limits.maxConnections, 30)
        XCTAssertEqual(config.threads, 6)
        XCTAssertEqual(config.logLevel, .debug)
    }

    func testDropInSymlinkedToDevNullIsEmpty() throws {
        let main = try directory.write("rpcd.conf", "[Server]\nThreads=2\n")
        let masked = try directory.symlink("rpcd.conf.d/50-masked.conf", to: "/dev/null")
        let documents = try INIDocument.loadWithDropIns(main: main)
        XCTAssertEqual(documents.map(\.file), [main, masked])
        XCTAssertEqual(documents.last?.entries, [])
        XCTAssertEqual(try ServerConfiguration.load(path: main).threads, 2)
    }

    func testEmptyDropInIsEmpty() throws {
        let main = try directory.write("rpcd.conf", "[Server]\nThreads=2\n")
        try directory.write("rpcd.conf.d/empty.conf", "")
        let documents = try INIDocument.loadWithDropIns(main: main)
        XCTAssertEqual(documents.count, 2)
        XCTAssertEqual(documents.last?.entries, [])
    }

    func testSymlinkedDropInIsRead() throws {
        let target = try directory.write("elsewhere/shared.conf", "[Server]\nThreads=9\n")
        let main = try directory.write("rpcd.conf", "")
        try directory.symlink("rpcd.conf.d/shared.conf", to: target)
        XCTAssertEqual(try ServerConfiguration.load(path: main).threads, 9)
    }

    func testErrorsInDropInsNameTheDropInAndLine() throws {
        let main = try directory.write("rpcd.conf", "[Server]\n")
        let bad = try directory.write("rpcd.conf.d/10-bad.conf", "[Server]\n\nMaxBatchLength=lots\n")
        XCTAssertEqual(
            configError { try ServerConfiguration.load(path: main) }?.description,
            "\(bad):3: invalid value 'lots' for MaxBatchLength=: expected an integer from 1 to 1000000")
    }

    func testDropInPathThatIsAFileIsAnError() throws {
        let main = try directory.write("rpcd.conf", "")
        let notDirectory = try directory.write("rpcd.conf.d", "oops")
        XCTAssertEqual(
            configError { try INIDocument.loadWithDropIns(main: main) }?.description,
            "\(notDirectory): is not a directory; drop-ins belong in a directory of *.conf files")
    }

    func testInvalidUTF8NamesTheLine() throws {
        let main = directory.path + "/rpcd.conf"
        try Data("[Server]\nThreads=2\nLogLevel=\u{FF}".utf8 + [0xFF, 0x0A]).write(to: URL(fileURLWithPath: main))
        XCTAssertEqual(
            configError { try INIDocument.load(path: main) }?.description, "\(main):3: the file is not valid UTF-8 text")
    }

    func testSameNameInAnEarlierDirectoryWinsAndMasks() throws {
        let etc = directory.path + "/etc/x.d"
        let lib = directory.path + "/lib/x.d"
        try directory.write("lib/x.d/10-a.conf", "[Server]\nThreads=1\n")
        let override = try directory.write("etc/x.d/10-a.conf", "[Server]\nThreads=2\n")
        try directory.write("lib/x.d/20-masked.conf", "[Server]\nThreads=3\n")
        let mask = try directory.symlink("etc/x.d/20-masked.conf", to: "/dev/null")
        let onlyLib = try directory.write("lib/x.d/05-lib.conf", "")
        let files = try INIDocument.dropInFiles(in: [etc, lib, directory.path + "/missing.d"])
        XCTAssertEqual(files, [onlyLib, override, mask])
        XCTAssertEqual(try files.map { try INIDocument.load(path: $0).entries.count }, [0, 1, 0])
    }

    /// What `load(path:check:)` reads is what its check judged: a symlink swapped after the check (here, from
    /// inside it) changes nothing (issue 21: a handler file swapped between check and open).
    func testLoadReadsTheFileItsCheckJudged() throws {
        let trusted = try directory.write("trusted.conf", "[Server]\nThreads=2\n")
        let other = try directory.write("other.conf", "[Server]\nThreads=9\n")
        let link = trusted + ".link"
        XCTAssertEqual(symlink(trusted, link), 0)
        var checked = 0
        let document = try INIDocument.load(path: link) { info throws(ConfigError) in
            checked = Int(info.st_size)
            unlink(link)
            symlink(other, link)
        }
        XCTAssertEqual(checked, "[Server]\nThreads=2\n".utf8.count)
        XCTAssertEqual(document.entries.map(\.value), ["2"], "read through the descriptor that was checked")
        XCTAssertThrowsError(try INIDocument.load(path: link) { _ throws(ConfigError) in
            throw ConfigError(file: link, line: nil, message: "refused")
        })
    }
}
