import RPCConfig
import XCTest

/// Unknown sections and keys are errors at their file and line, with a hint when one is close.
final class UnknownNameTests: XCTestCase {
    func testUnknownKeyNamesFileLineAndSection() {
        let text = "[Server]\n" + String(repeating: "# padding\n", count: 10) + "Foo=bar\n"
        XCTAssertEqual(
            configError { try configuration(text) }?.description,
            "/etc/rpcd/rpcd.conf:12: unknown key 'Foo' in section [Server]")
    }

    func testKeysAreCaseSensitiveWithAHint() {
        XCTAssertEqual(
            configError { try configuration("[Server]\nlisten=/x.sock\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: unknown key 'listen' in section [Server]; did you mean 'Listen'?")
    }

    func testMisspelledKeyGetsAHint() {
        XCTAssertEqual(
            configError { try configuration("[Server]\nMaxFrameSzie=1M\n") }?.message,
            "unknown key 'MaxFrameSzie' in section [Server]; did you mean 'MaxFrameSize'?")
        XCTAssertEqual(
            configError { try configuration("[Server]\nPort=1\n") }?.message,
            "unknown key 'Port' in section [Server]")
    }

    func testUnknownSectionIsReportedAtItsHeaderEvenWhenEmpty() {
        XCTAssertEqual(
            configError { try configuration("[Server]\nThreads=2\n\n[Metrics]\n") }?.description,
            "/etc/rpcd/rpcd.conf:4: unknown section [Metrics]; known sections: [Server], [Avahi], [WideArea], [Access], [TLS], [HTTP]")
    }

    func testUnknownSectionIsReportedBeforeItsKeys() {
        XCTAssertEqual(
            configError { try configuration("[server]\nThreads=2\n") }?.description,
            "/etc/rpcd/rpcd.conf:1: unknown section [server]; did you mean [Server]?")
    }

    func testProblemsAreReportedInFileOrder() {
        XCTAssertEqual(configError { try configuration("[Server]\nThreads=x\n[Nope]\n") }?.line, 2)
        XCTAssertEqual(configError { try configuration("[Nope]\n[Server]\nThreads=x\n") }?.line, 1)
    }

    func testUnknownSectionInDocumentBuiltWithoutHeaders() {
        let document = INIDocument(file: "/code.conf", entries: [INIEntry(section: "Other", key: "A", value: "1", file: "/code.conf", line: 7)])
        XCTAssertEqual(
            configError { try ServerConfiguration(documents: [document]) }?.description,
            "/code.conf:7: unknown section [Other]; known sections: [Server], [Avahi], [WideArea], [Access], [TLS], [HTTP]")
    }

    func testExtensionSectionsAndKeysAreIgnored() throws {
        let text = "[X-Local]\nAnything=goes\n[Server]\nX-Comment=ours\nThreads=3\n"
        XCTAssertEqual(try configuration(text).threads, 3)
    }

    func testUnknownKeyInDropInNamesTheDropIn() throws {
        let main = try INIDocument.parse("[Server]\nThreads=2\n", file: "/etc/rpcd/rpcd.conf")
        let dropIn = try INIDocument.parse("\n[Server]\nBogus=1\n", file: "/etc/rpcd/rpcd.conf.d/10-x.conf")
        XCTAssertEqual(
            configError { try ServerConfiguration(documents: [main, dropIn]) }?.description,
            "/etc/rpcd/rpcd.conf.d/10-x.conf:3: unknown key 'Bogus' in section [Server]")
    }
}
