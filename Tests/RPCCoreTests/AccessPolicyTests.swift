import RPCBinding
import RPCCore
import RPCProtocol
import XCTest

final class AccessPolicyTests: XCTestCase {
    private let read = RPCMethodDescriptor(name: "get", flags: .readOnly)
    private let write = RPCMethodDescriptor(name: "set")
    private let root = RPCPeer.unixSocket(.init(uid: 0, gid: 0, pid: 1, groups: [0]))
    private let nobody = RPCPeer.unixSocket(.init(uid: 65534, gid: 65534, pid: 2, groups: [65534, 4242]))
    private let loopback = RPCPeer.ip("127.0.0.1", port: 5000)
    private let lan = RPCPeer.ip("192.168.1.9", port: 5000)

    func testProtectedDefault() {
        let policy = RPCAccessPolicy(default: .protectedDefault)
        XCTAssertTrue(policy.allows(root, service: "kv", method: write))
        XCTAssertTrue(policy.allows(nobody, service: "kv", method: read))
        XCTAssertFalse(policy.allows(nobody, service: "kv", method: write))
        XCTAssertTrue(policy.allows(loopback, service: "kv", method: read))
        XCTAssertFalse(policy.allows(loopback, service: "kv", method: write))
        XCTAssertFalse(policy.allows(lan, service: "kv", method: read))
    }

    /// `allowsAnyPeer` (what routing checks before matching a peer) is true exactly where `allows` is true for
    /// every peer: no rule, or `anyone` in the rule's `Allow=` (or `AllowRead=`, for a read-only method).
    func testAllowsAnyPeerOnlyWhereEveryPeerIsAllowed() {
        let peers = [root, nobody, loopback, lan]
        let anyoneReads = RPCAccessRule(allow: [.local], allowRead: [.anyone])
        for (rule, method, expected) in [
            (RPCAccessRule.unrestricted, write, true), (.protectedDefault, read, false), (.protectedDefault, write, false),
            (anyoneReads, read, true), (anyoneReads, write, false),
        ] {
            let access = RPCAccessPolicy(default: rule).access(service: "s", method: method)
            XCTAssertEqual(access.allowsAnyPeer, expected, "\(rule) \(method.name)")
            if expected { XCTAssertTrue(peers.allSatisfy { access.allows($0) }) }
        }
        let anyPeerMethod = RPCMethodDescriptor(name: "ping", flags: .anyPeer)
        XCTAssertTrue(RPCAccessPolicy(default: .protectedDefault).access(service: "s", method: anyPeerMethod).allowsAnyPeer)
    }

    func testPrincipalsMatchTheirPeersOnly() throws {
        func policy(_ allow: String) throws -> RPCAccessPolicy {
            RPCAccessPolicy(default: RPCAccessRule(allow: [try RPCPrincipal(parsing: allow)], allowRead: []))
        }
        XCTAssertTrue(try policy("group:4242").allows(nobody, service: "s", method: write), "a supplementary group")
        XCTAssertFalse(try policy("group:4242").allows(root, service: "s", method: write))
        XCTAssertTrue(try policy("user:65534").allows(nobody, service: "s", method: write))
        XCTAssertFalse(try policy("user:0").allows(loopback, service: "s", method: write), "users are Unix-socket peers only")
        XCTAssertTrue(try policy("192.168.1.0/24").allows(lan, service: "s", method: write))
        XCTAssertFalse(try policy("192.168.1.0/24").allows(root, service: "s", method: write))
        var certified = lan
        certified.certificateIdentities = ["ops.example"]
        XCTAssertTrue(try policy("client:ops.example").allows(certified, service: "s", method: write))
        XCTAssertTrue(try policy("client:*").allows(certified, service: "s", method: write))
        XCTAssertFalse(try policy("client:*").allows(lan, service: "s", method: write))
        XCTAssertTrue(try policy("any").allows(lan, service: "s", method: write))
    }

    func testServiceRulesReplaceTheDefaultForTheirServiceAndUnknownNamesGrantNothing() {
        let policy = RPCAccessPolicy(
            default: .protectedDefault,
            services: ["kv": RPCAccessRule(allow: [.local, .group("no-such-group-here")], allowRead: [])])
        XCTAssertTrue(policy.allows(loopback, service: "kv", method: write))
        XCTAssertFalse(policy.allows(loopback, service: "calc", method: write))
        XCTAssertTrue(policy.unresolved.contains("group:no-such-group-here"))
    }

    func testExposureSaysWhatOtherHostsMayCall() {
        let local: [RPCEndpoint] = [.unix(path: "/run/rpcd/rpcd.sock"), .tcp(host: "127.0.0.1", port: 7390)]
        let wide: [RPCEndpoint] = local + [.tcp(host: "0.0.0.0", port: 7390)]
        XCTAssertEqual(RPCAccessPolicy(default: .protectedDefault).exposure(listeners: local), "local only (no listener other hosts can reach)")
        XCTAssertEqual(RPCAccessPolicy(default: .protectedDefault).exposure(listeners: wide), "other hosts: nothing")
        let open = RPCAccessPolicy(
            default: RPCAccessRule(allow: [.user("root")], allowRead: [.local, .network(RPCNetwork(parsing: "10.0.0.0/8")!)]),
            services: ["kv": RPCAccessRule(allow: [.anyone], allowRead: [])])
        XCTAssertEqual(open.exposure(listeners: wide), "other hosts: read-only methods for 10.0.0.0/8; kv: every method for any")
    }
}
