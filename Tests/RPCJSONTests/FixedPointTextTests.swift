import Foundation
import RPCJSON
import XCTest

final class FixedPointTextTests: XCTestCase {
    func testMatchesPrintfForTypicalValues() {
        for value in [0, 0.2134, 1.5, 2.25, 12.0049, 99.995, 1234567.891, -3.14159, 0.0007, 1e-9] {
            for digits in 0...4 {
                XCTAssertEqual(
                    FixedPointText.text(value, digits: digits), String(format: "%.\(digits)f", value),
                    "\(value) with \(digits) digits")
            }
        }
    }

    func testEdgeCases() {
        XCTAssertEqual(FixedPointText.text(-0.0001, digits: 2), "0.00", "no negative zero (printf writes -0.00)")
        XCTAssertEqual(FixedPointText.text(.infinity, digits: 1), "inf")
        XCTAssertEqual(FixedPointText.text(0.5, digits: 0), "0", "ties to even, as printf")
        XCTAssertEqual(FixedPointText.text(1.5, digits: 0), "2")
    }
}
