import Foundation
import NIOCore
import RPCModuleLink
@testable import RPCModuleHost
import RPCProtocol
import XCTest

/// A module host told by rpcd that a call's caller gave up: the host finds the call by rpcd's token, with
/// nothing registered per call, tells the module, and tells rpcd when the module is done with the call, since
/// rpcd keeps the call on its books (and a timed-out one in its slot) until then.
final class ModuleHostCancellationTests: XCTestCase {
    /// `await_cancel` answers only when its module's `cancel()` runs.
    private let awaitCancel: UInt32 = 11

    func testACancelReachesTheModuleByTokenAndRpcdLearnsWhenTheModuleIsDone() throws {
        try ModuleHostLink.withTestModule { channel in
            try ModuleHostLink.send([.call(token: 5, method: awaitCancel, params: nil)], to: channel)
            XCTAssertEqual(answers(in: try ModuleHostLink.written(by: channel)), [], "the module has not answered")
            // The module's cancel() answers the call (an error of its own), which is dropped: rpcd learns the
            // call is over, its caller having been answered -32011 already.
            try ModuleHostLink.send([.cancel(token: 5)], to: channel)
            let written = try ModuleHostLink.written(by: channel)
            XCTAssertEqual(answers(in: written), [.error(token: 5, code: -32011, message: "Call cancelled", data: nil)])
            XCTAssertTrue(written.contains { if case .log(_, "Answer to a cancelled call dropped", _) = $0 { true } else { false } })

            // A cancel for a call the module has answered, or one never sent, finds nothing and tells nobody.
            try ModuleHostLink.send([.cancel(token: 5), .cancel(token: 6)], to: channel)
            XCTAssertEqual(answers(in: try ModuleHostLink.written(by: channel)), [])
            // The token is free again once its call is over.
            try ModuleHostLink.send([.call(token: 5, method: 0, params: nil)], to: channel)
            XCTAssertEqual(answers(in: try ModuleHostLink.written(by: channel)), [.result(token: 5, json: ByteBuffer(string: "42"))])
            _ = try? channel.finish()
        }
    }

    /// `messages` without the host's log entries.
    private func answers(in messages: [ModuleLinkMessage]) -> [ModuleLinkMessage] {
        messages.filter { if case .log = $0 { false } else { true } }
    }
}
