import Synchronization

/// Host objects handed to modules as opaque handles (`rpcd_call *`, `rpcd_handler *`), by token.
///
/// A module never gets a pointer to host memory: it gets a token, looked up here when it comes back, so a
/// handle used after its object is gone (an answer after the call was answered, a log line after `deinit`)
/// finds nothing and is ignored instead of touching freed memory. Tokens are unguessable — a counter through
/// SipHash (`Hasher`, keyed with a random seed per process) — so one module cannot answer another module's
/// calls or write under another handler's name by trying numbers. Thread-safe: modules use handles from any
/// thread.
final class OpaqueHandleTable<Value: Sendable>: Sendable {
    private let entries = Mutex<[UInt: Value]>([:])
    private let counter = Atomic<UInt64>(0)

    /// Registers `value` and returns its token (never 0, so never NULL).
    func insert(_ value: Value) -> UInt {
        while true {
            var hasher = Hasher()
            hasher.combine(counter.wrappingAdd(1, ordering: .relaxed).oldValue)
            let token = UInt(bitPattern: hasher.finalize())
            guard token != 0 else { continue }
            let inserted = entries.withLock { entries -> Bool in
                guard entries[token] == nil else { return false }  // 2^-64 per live entry; draw again
                entries[token] = value
                return true
            }
            if inserted { return token }
        }
    }

    /// Registers `value` under the token of `key`, a number its caller names it by and never reuses while
    /// it is registered (the link's token of a call, in a module host); nil when that token is taken. The
    /// token is as unguessable as `insert`'s, and whoever holds `key` finds it again (`token(forKey:)`) with
    /// nothing kept per value to map one to the other.
    func insert(_ value: Value, key: UInt64) -> UInt? {
        let token = token(forKey: key)
        return entries.withLock { entries in
            guard entries[token] == nil else { return nil }
            entries[token] = value
            return token
        }
    }

    /// The token `insert(_:key:)` gives `key`: the key through SipHash, apart from `insert`'s counter by a
    /// marker, and never 0.
    func token(forKey key: UInt64) -> UInt {
        var hasher = Hasher()
        hasher.combine(key)
        hasher.combine(true)
        return max(UInt(bitPattern: hasher.finalize()), 1)
    }

    func value(for token: UInt) -> Value? {
        entries.withLock { $0[token] }
    }

    func remove(_ token: UInt) -> Value? {
        entries.withLock { $0.removeValue(forKey: token) }
    }

    var count: Int { entries.withLock { $0.count } }
}

extension UInt {
    /// The token behind a handle a module passed back.
    init(handle: OpaquePointer?) {
        self = UInt(bitPattern: handle.map { Int(bitPattern: $0) } ?? 0)
    }
}
