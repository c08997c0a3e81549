import RPCConfig
import XCTest

final class INISyntaxTests: XCTestCase {
    private func parse(_ text: String) throws(ConfigError) -> [INIEntry] {
        try INIDocument.parse(text, file: "/t.conf").entries
    }

    private func pairs(_ text: String) throws(ConfigError) -> [String] {
        try parse(text).map { "\($0.section).\($0.key)=\($0.value)@\($0.line)" }
    }

    func testSectionsAndAssignmentsKeepFileOrderAndLines() throws {
        let entries = try parse("[A]\nx=1\n[B]\ny=2\n[A]\nz=3\n")
        XCTAssertEqual(entries, [
            INIEntry(section: "A", key: "x", value: "1", file: "/t.conf", line: 2),
            INIEntry(section: "B", key: "y", value: "2", file: "/t.conf", line: 4),
            INIEntry(section: "A", key: "z", value: "3", file: "/t.conf", line: 6),
        ])
    }

    func testSectionHeadersAreRecorded() throws {
        let document = try INIDocument.parse("# c\n[A]\n\n[B]\n", file: "/t.conf")
        XCTAssertEqual(document.sectionHeaders, [
            INISectionHeader(name: "A", file: "/t.conf", line: 2),
            INISectionHeader(name: "B", file: "/t.conf", line: 4),
        ])
        XCTAssertEqual(document.entries, [])
    }

    func testCommentsAndBlankLinesAreIgnored() throws {
        let text = "# hash\n; semicolon\n\n   \t\n  # indented\n[A]\n; k=no\nk=v\n"
        XCTAssertEqual(try pairs(text), ["A.k=v@8"])
    }

    func testWhitespaceAroundKeyAndValueIsTrimmed() throws {
        XCTAssertEqual(try pairs("  [A]  \n  Key \t=  some  value \t\n"), ["A.Key=some  value@2"])
    }

    func testNoBreakSpaceIsNotWhitespace() throws {
        // systemd trims only space, tab, CR and LF.
        XCTAssertEqual(try pairs("[A]\nk=\u{A0}v\u{A0}\n"), ["A.k=\u{A0}v\u{A0}@2"])
    }

    func testValuesAreLiteral() throws {
        XCTAssertEqual(
            try pairs("[A]\nq=\"quoted\" # not a comment\ne=a=b\nempty=\n"),
            ["A.q=\"quoted\" # not a comment@2", "A.e=a=b@3", "A.empty=@4"])
    }

    func testBackslashContinuesLineWithASpace() throws {
        XCTAssertEqual(try pairs("[A]\nk=one\\\ntwo\nnext=x\n"), ["A.k=one two@2", "A.next=x@4"])
        XCTAssertEqual(try pairs("[A]\nk=one \\\n   two \\\n three\n"), ["A.k=one     two   three@2"])
    }

    func testCommentLinesInsideContinuationAreSkipped() throws {
        // The example of man systemd.syntax.
        let text = "[Section C]\nKeyThree=value 3\\\n# this line is ignored\n; this line is ignored too\n       value 3 continued\n"
        XCTAssertEqual(try pairs(text), ["Section C.KeyThree=value 3        value 3 continued@2"])
    }

    func testCommentEndingInBackslashDoesNotContinue() throws {
        XCTAssertEqual(try pairs("[A]\n# comment \\\nk=v\n"), ["A.k=v@3"])
    }

    func testEscapedBackslashDoesNotContinue() throws {
        XCTAssertEqual(try pairs("[A]\nk=a\\\\\nj=b\n"), ["A.k=a\\\\@2", "A.j=b@3"])
        XCTAssertEqual(try pairs("[A]\nk=a\\\\\\\nb\n"), ["A.k=a\\\\ b@2"])
    }

    func testBackslashOnLastLineIsAccepted() throws {
        XCTAssertEqual(try pairs("[A]\nk=v\\"), ["A.k=v@2"])
    }

    func testBlankLineEndsContinuation() throws {
        XCTAssertEqual(try pairs("[A]\nk=v\\\n\nj=w\n"), ["A.k=v@2", "A.j=w@4"])
    }

    func testCRLFAndCRLineEnds() throws {
        XCTAssertEqual(try pairs("[A]\r\nk=v\r\nj=w\rl=x"), ["A.k=v@2", "A.j=w@3", "A.l=x@4"])
    }

    func testByteOrderMarkIsIgnored() throws {
        XCTAssertEqual(try pairs("\u{FEFF}[A]\nk=v\n"), ["A.k=v@2"])
    }

    func testSectionNameIsTakenAsWritten() throws {
        XCTAssertEqual(try pairs("[ Spaced Name ]\nk=v\n"), [" Spaced Name .k=v@2"])
    }

    /// Found by the config fuzzer: `k=a\ ` (a blank after the backslash) does not continue, but written back by
    /// --check-config as `k=a\` it would. Such a value is refused instead of changing meaning.
    func testBackslashHiddenByTrailingBlanksIsAnError() {
        XCTAssertEqual(
            configError { try parse("[Avahi]\nInstanceName=%s on \"h/rn\\ \n") }?.description,
            "/t.conf:2: the value of InstanceName= ends in a backslash followed by blanks; remove the backslash (or write it as \\\\)")
        XCTAssertEqual(try pairs("[A]\nk=a\\\\ \n"), ["A.k=a\\\\@2"], "an escaped backslash may end a value")
    }

    func testAssignmentBeforeFirstSectionIsAnError() {
        XCTAssertEqual(
            configError { try parse("# header\n\nListen=/x.sock\n[Server]\n") }?.description,
            "/t.conf:3: assignment 'Listen=' before the first section header; put it below a [Section] line")
    }

    func testLineWithoutEqualsIsAnError() {
        XCTAssertEqual(
            configError { try parse("[A]\nk=v\nnonsense here\n") }?.description,
            "/t.conf:3: expected Key=Value, a [Section] header or a comment, got 'nonsense here'")
    }

    func testEmptyKeyIsAnError() {
        XCTAssertEqual(
            configError { try parse("[A]\n  = value\n") }?.description,
            "/t.conf:2: missing key name before '=' in '= value'")
    }

    func testEmptySectionNameIsAnError() {
        XCTAssertEqual(configError { try parse("\n[]\n") }?.description, "/t.conf:2: empty section name '[]'")
    }

    func testUnterminatedOrTrailingSectionHeaderIsAnError() {
        let expected = ": expected [Name] alone on the line (comments must be on lines of their own)"
        XCTAssertEqual(
            configError { try parse("[Server\n") }?.description, "/t.conf:1: invalid section header '[Server'" + expected)
        XCTAssertEqual(
            configError { try parse("\n[Server] # main\n") }?.description,
            "/t.conf:2: invalid section header '[Server] # main'" + expected)
        XCTAssertEqual(configError { try parse("[\n") }?.description, "/t.conf:1: invalid section header '['" + expected)
    }

    func testErrorInContinuedLineNamesItsFirstLine() {
        XCTAssertEqual(
            configError { try parse("[A]\nk=v\nbroken \\\nstill broken\n") }?.description,
            "/t.conf:3: expected Key=Value, a [Section] header or a comment, got 'broken  still broken'")
    }

    func testEmptyTextHasNoEntries() throws {
        XCTAssertEqual(try INIDocument.parse("", file: "/t.conf"), INIDocument(file: "/t.conf", entries: []))
    }
}
