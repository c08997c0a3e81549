import RPCClientTools
import XCTest

final class LeadingOptionsTests: XCTestCase {
    private let subcommands: Set<String> = ["call", "ping", "info"]

    func testConnectionOptionsBeforeTheSubcommandMoveBehindIt() {
        XCTAssertEqual(
            LeadingOptions.reordered(["--address", "/run/rpcd/rpcd.sock", "call", "calc.add", "1", "2"], subcommands: subcommands),
            ["call", "--address", "/run/rpcd/rpcd.sock", "calc.add", "1", "2"])
        XCTAssertEqual(
            LeadingOptions.reordered(
                ["--json", "--timeout=3", "--address", "tls://h:7391", "--ca", "ca.pem", "--cert", "c.pem", "--key", "c.key",
                 "--server-name", "h", "--tls", "ping"], subcommands: subcommands),
            ["ping", "--json", "--timeout=3", "--address", "tls://h:7391", "--ca", "ca.pem", "--cert", "c.pem", "--key",
             "c.key", "--server-name", "h", "--tls"])
    }

    func testAValueThatLooksLikeASubcommandIsAValue() {
        XCTAssertEqual(
            LeadingOptions.reordered(["--address", "ping", "info"], subcommands: subcommands), ["info", "--address", "ping"])
    }

    func testEverythingElseIsLeftForArgumentParserToReport() {
        for arguments in [["call", "calc.add"], ["--help"], ["--address", "x"], ["--params", "[]", "call"], ["--json", "bogus"], []] {
            XCTAssertEqual(LeadingOptions.reordered(arguments, subcommands: subcommands), arguments)
        }
    }
}
