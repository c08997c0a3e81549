import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` with environment variables set, restoring the previous values after.
func withEnvironment<T>(_ values: [String: String?], _ body: () throws -> T) rethrows -> T {
    var previous: [String: String?] = [:]
    for (name, value) in values {
        previous[name] = getenv(name).map { String(cString: $0) }
        if let value { setenv(name, value, 1) } else { unsetenv(name) }
    }
    defer {
        for (name, value) in previous {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }
    return try body()
}
