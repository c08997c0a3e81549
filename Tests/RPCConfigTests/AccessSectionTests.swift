import RPCConfig
import RPCProtocol
import XCTest

final class AccessSectionTests: XCTestCase {
    func testDefaultsAreTheProtectedRules() throws {
        XCTAssertEqual(ServerConfiguration.defaults.access, .protectedDefault)
        XCTAssertEqual(try configuration("[Access]\n").access, .protectedDefault)
    }

    func testListsReplaceAddAndClearTheSystemdWay() throws {
        let config = try configuration("[Access]\nAllow=user:root 10.0.0.0/8\nAllow=client:*\nAllowRead=\n")
        XCTAssertEqual(config.access.allow, [.user("root"), .network(RPCNetwork(parsing: "10.0.0.0/8")!), .client("*")])
        XCTAssertEqual(config.access.allowRead, [])
        XCTAssertEqual(try configuration(config.rendered()).access, config.access, "rendering round-trips")
    }

    func testBadPrincipalsNameFileLineAndTheForms() {
        XCTAssertEqual(
            configError { try configuration("[Access]\n\nAllow=user:root everyone\n") }?.description,
            "/etc/rpcd/rpcd.conf:3: invalid value 'user:root everyone' for Allow=: not one of the forms in 'everyone'; expected "
                + RPCPrincipal.syntax)
    }
}
