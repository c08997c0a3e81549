import RPCCore
import RPCProtocol
import XCTest

/// The one account of what rpcd holds for its peers: each peer's share, the whole, the administrators'
/// reserve, who counts as one peer, and that a closed connection holds nothing.
final class PeerLedgerTests: XCTestCase {
    private let root = RPCPeer.unixSocket(.init(uid: 0, gid: 0, pid: 1))
    private let user = RPCPeer.unixSocket(.init(uid: 1000, gid: 1000, pid: 2))

    private func ledger(limit: Int = 1000, perPeer: Int = 300, connectionsPerPeer: Int = 8) -> PeerLedger {
        PeerLedger(
            limits: ConnectionLimits {
                $0.maxFrameSize = 64
                $0.maxBufferedBytes = limit
                $0.maxBufferedBytesPerPeer = perPeer
                $0.maxConnectionsPerPeer = connectionsPerPeer
            },
            administrators: RPCPeerSet([.user("0")]), statistics: RPCStatistics())
    }

    func testAPeerGetsItsShareAndNoMoreWhateverItsConnections() throws {
        let ledger = ledger()
        let first = try XCTUnwrap(ledger.open(user))
        let second = try XCTUnwrap(ledger.open(user))
        XCTAssertTrue(first.charge(200))
        XCTAssertFalse(second.charge(101), "the share is the peer's, not the connection's")
        XCTAssertTrue(second.charge(100))
        XCTAssertEqual(ledger.charged(to: user), 300)
        first.release(50)
        XCTAssertTrue(second.charge(50))
    }

    func testPeersTogetherCannotTakeTheAdministratorsReserve() throws {
        let ledger = ledger()
        XCTAssertEqual(ledger.reserve, 300)
        var taken = 0
        for address in 1...10 {
            let account = try XCTUnwrap(ledger.open(.ip("192.0.2.\(address)", port: 1)))
            while account.charge(50) { taken += 50 }
        }
        XCTAssertEqual(taken, 700, "the whole less the reserve")
        let admin = try XCTUnwrap(ledger.open(root))
        XCTAssertTrue(admin.isAdministrator)
        XCTAssertTrue(admin.charge(300), "root gets its share whatever the others hold")
        let other = try XCTUnwrap(ledger.open(user))
        XCTAssertFalse(other.isAdministrator)
        XCTAssertFalse(other.charge(1))
    }

    func testClosingGivesBackEverythingAndLaterReleasesChangeNothing() throws {
        let ledger = ledger()
        let account = try XCTUnwrap(ledger.open(user))
        XCTAssertTrue(account.charge(120))
        account.forceCharge(400)
        account.close()
        XCTAssertEqual(ledger.charged, 0)
        XCTAssertEqual(ledger.peerCount, 0)
        account.release(120)
        XCTAssertEqual(ledger.charged, 0, "a late release after the close gives back nothing twice")
        XCTAssertFalse(account.charge(1), "a closed account holds nothing more")
        account.close()
        XCTAssertEqual(ledger.peerCount, 0)
    }

    /// What a call holds outside its connection (its copies crossing to a module host) stays the peer's after the
    /// connection closes, until it is freed: a peer that leaves calls behind in a hung module cannot come back
    /// with a fresh share (issue 36: 1 MiB calls left in a hung module grew rpcd by 190 MiB, charged to no one).
    func testCallBoundBytesOutliveTheirConnectionUntilFreed() throws {
        let ledger = ledger()
        let first = try XCTUnwrap(ledger.open(user))
        XCTAssertTrue(first.charge(50))
        XCTAssertTrue(first.chargeCallBound(200))
        first.close()
        XCTAssertEqual(ledger.charged(to: user), 200, "the frames are given back, the call's copies are not")
        XCTAssertEqual(ledger.peerCount, 1, "the peer is still holding bytes")
        let second = try XCTUnwrap(ledger.open(user))
        XCTAssertFalse(second.charge(101), "its share is spent by what its old connection's calls hold")
        XCTAssertTrue(second.charge(100))
        first.releaseCallBound(200)
        XCTAssertEqual(ledger.charged(to: user), 100)
        second.close()
        XCTAssertEqual(ledger.charged, 0)
        XCTAssertEqual(ledger.peerCount, 0)
        // Alone: the share is forgotten when the last call-bound byte is freed, not before.
        let third = try XCTUnwrap(ledger.open(user))
        XCTAssertTrue(third.chargeCallBound(10))
        third.close()
        XCTAssertEqual(ledger.peerCount, 1)
        third.releaseCallBound(10)
        XCTAssertEqual(ledger.peerCount, 0)
        XCTAssertEqual(ledger.charged, 0)
    }

    /// A call's copy on the link given back as its answer is charged, under one lock: refused as a charge is
    /// (the share, a closed connection), the release done all the same; a closed connection's last call-bound
    /// bytes given back forget the peer.
    func testAnExchangeGivesBackThenChargesAndIsRefusedAsAChargeIs() throws {
        let ledger = ledger()
        let account = try XCTUnwrap(ledger.open(user))
        XCTAssertTrue(account.chargeCallBound(100))
        XCTAssertTrue(account.exchangeCallBound(release: 100, charge: 250))
        XCTAssertEqual(ledger.charged(to: user), 250)
        XCTAssertFalse(account.exchangeCallBound(release: 50, charge: 101), "200 held: 101 more passes the share")
        XCTAssertEqual(ledger.charged(to: user), 200, "given back though the charge was refused")
        account.close()
        XCTAssertFalse(account.exchangeCallBound(release: 150, charge: 1), "a closed connection takes no charge")
        XCTAssertEqual(ledger.peerCount, 1)
        XCTAssertFalse(account.exchangeCallBound(release: 50, charge: 0))
        XCTAssertEqual(ledger.peerCount, 0, "its last call-bound bytes given back")
        XCTAssertEqual(ledger.charged, 0)
    }

    func testConnectionsPerPeerAreCountedByWhoThePeerIs() throws {
        let ledger = ledger(connectionsPerPeer: 2)
        // Any local user may use any loopback address: they are one peer.
        XCTAssertNotNil(ledger.open(.ip("127.0.0.1", port: 1)))
        XCTAssertNotNil(ledger.open(.ip("127.0.0.2", port: 1)))
        XCTAssertNil(ledger.open(.ip("::1", port: 1)))
        // One IPv6 host usually has a /64.
        XCTAssertNotNil(ledger.open(.ip("2001:db8::1", port: 1)))
        XCTAssertNotNil(ledger.open(.ip("2001:db8::2", port: 1)))
        XCTAssertNil(ledger.open(.ip("2001:db8::3", port: 1)))
        XCTAssertNotNil(ledger.open(.ip("2001:db8:0:1::1", port: 1)))
        // An IPv4 client of a dual-stack listener is its IPv4 address.
        XCTAssertNotNil(ledger.open(.ip("192.0.2.1", port: 1)))
        XCTAssertNotNil(ledger.open(.ip("::ffff:192.0.2.1", port: 1)))
        XCTAssertNil(ledger.open(.ip("192.0.2.1", port: 2)))
        // Users on the Unix socket by uid.
        XCTAssertNotNil(ledger.open(user))
        XCTAssertNotNil(ledger.open(root))
        let closing = try XCTUnwrap(ledger.open(user))
        XCTAssertNil(ledger.open(user))
        closing.close()
        XCTAssertNotNil(ledger.open(user))
    }

    func testAdministratorsAreUnixSocketPeersOnly() {
        let set = RPCPeerSet([.user("0"), .local, .anyone])
        XCTAssertTrue(set.contains(root))
        XCTAssertTrue(set.contains(user), "named by any")
        XCTAssertFalse(set.contains(.ip("127.0.0.1", port: 1)), "an address never proves who the user is")
        XCTAssertFalse(RPCPeerSet(RPCPrincipal.administrators).contains(user))
    }
}
