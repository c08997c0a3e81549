package import NIOCore

/// The result of a future on an `EmbeddedEventLoop`, or nil if it is not complete yet.
package func outcome<Value>(_ future: EventLoopFuture<Value>) -> Result<Value, any Error>? {
    var result: Result<Value, any Error>?
    future.assumeIsolated().whenComplete { result = $0 }
    return result
}

/// The value a completed future succeeded with (nil if it failed or is still pending).
package func value<Value>(_ future: EventLoopFuture<Value>) -> Value? {
    guard case .success(let value)? = outcome(future) else { return nil }
    return value
}
