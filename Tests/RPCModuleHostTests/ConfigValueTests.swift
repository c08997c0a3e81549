import RPCBinding
import RPCConfig
@testable import RPCModuleHost
import XCTest

/// `[Config]` values held to what the module declares for them (issue 40, item 2), with the file and line a
/// `[Handler]` value's error has.
final class ConfigValueTests: XCTestCase {
    private let declared: [RPCParam] = [
        .integer("MaxKeys", minimum: 1, maximum: 1000), .number("Ratio"), .boolean("Verbose"),
        RPCParam("Mode", schema: ["type": "string", "enum": ["fast", "safe"]]),
    ]

    private func configuration(_ lines: [(String, String)]) -> HandlerConfiguration {
        var configuration = HandlerConfiguration(name: "kv")
        configuration.configEntries = lines.enumerated().map { index, line in
            INIEntry(section: "Config", key: line.0, value: line.1, file: "/etc/rpcd/handlers.d/kv.conf", line: index + 3)
        }
        return configuration
    }

    private func refusal(_ key: String, _ value: String) -> String? {
        do {
            try configuration([("Other", "x"), (key, value)]).checkConfigValues(against: declared)
            return nil
        } catch {
            return "\(error)"
        }
    }

    func testValuesThatFitPass() {
        for (key, value) in [("MaxKeys", "1"), ("MaxKeys", "1000"), ("Ratio", "0.5"), ("Verbose", "yes"), ("Verbose", "0"),
                             ("Mode", "safe"), ("MaxKeys", ""), ("Undeclared", "anything")] {
            XCTAssertNil(refusal(key, value), "\(key)=\(value)")
        }
    }

    func testValuesThatDoNotFitNameTheFileLineAndWhatWasExpected() {
        XCTAssertEqual(refusal("MaxKeys", "lots"), "/etc/rpcd/handlers.d/kv.conf:4: invalid value 'lots' for MaxKeys=: expected an integer from 1 to 1000")
        XCTAssertEqual(refusal("MaxKeys", "0"), "/etc/rpcd/handlers.d/kv.conf:4: invalid value '0' for MaxKeys=: expected an integer from 1 to 1000")
        XCTAssertEqual(refusal("MaxKeys", "1.5"), "/etc/rpcd/handlers.d/kv.conf:4: invalid value '1.5' for MaxKeys=: expected an integer from 1 to 1000")
        XCTAssertEqual(refusal("Ratio", "half"), "/etc/rpcd/handlers.d/kv.conf:4: invalid value 'half' for Ratio=: expected a number")
        XCTAssertEqual(refusal("Verbose", "maybe"), "/etc/rpcd/handlers.d/kv.conf:4: invalid value 'maybe' for Verbose=: expected a boolean (yes or no)")
        XCTAssertEqual(refusal("Mode", "slow"), "/etc/rpcd/handlers.d/kv.conf:4: invalid value 'slow' for Mode=: expected one of fast, safe")
    }
}
