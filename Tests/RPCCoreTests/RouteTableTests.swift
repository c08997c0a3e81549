import RPCCore
import XCTest

/// `RouteTable` finds every name it was built with, byte for byte, and nothing else, whatever the hashes do.
final class RouteTableTests: XCTestCase {
    func testFindsEveryNameAndNothingElse() {
        let names = (0..<100).map { "service\($0 % 7).method\($0)" } + ["rpcd.ping", "rpc.discover", "é.ü", "t.K"]
        let table = RouteTable(Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) }))
        for (index, name) in names.enumerated() { XCTAssertEqual(table[name], index, name) }
        for missing in ["", "rpcd.pin", "rpcd.pingg", "rpcd.ping\0", "service1.method100", "e\u{301}.ü", "t.\u{212A}"] {
            XCTAssertNil(table[missing], missing)
        }
        XCTAssertEqual("t.\u{212A}", "t.K", "String's == applies canonical equivalence; the table does not")
    }

    func testAnEmptyTableFindsNothing() {
        XCTAssertNil(RouteTable<Int>([:])["rpcd.ping"])
    }
}
