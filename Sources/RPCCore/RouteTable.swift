/// Values by full method name (`calc.add`), found without hashing a `String`: every call looks its method up
/// here, and `Dictionary<String, _>` runs SipHash over the name's normalised bytes for it, a cost
/// bench/README.md measures ("Issue 25, third step").
///
/// Open addressing over a power-of-two table at most half full, each slot keyed by the FNV-1a hash of the
/// name's UTF-8 bytes; a slot whose hash matches is confirmed by comparing the names (`sameBytes`). Byte for
/// byte, as JSON-RPC compares method names, not under `String`'s canonical equivalence alone, which a dictionary
/// applies (it found `calc.\u{212A}` for `calc.K`: U+212A KELVIN SIGN is canonically equivalent to K). Built once per registry
/// and never grown by a lookup, so a name a peer makes up to collide costs at most the longest run of
/// occupied slots, bounded by the number of methods: the weak hash cannot be turned into a flood.
package struct RouteTable<Value: Sendable>: Sendable {
    /// The hash of the name in each slot; 0 marks an empty slot (a name's hash is never 0).
    private let hashes: [UInt64]
    private let entries: [(name: String, value: Value)?]
    private let mask: Int

    /// `entries`' names must be distinct (the registry checks this).
    package init(_ entries: [String: Value]) {
        var capacity = 8
        while capacity < 2 * entries.count { capacity *= 2 }
        var hashes = [UInt64](repeating: 0, count: capacity)
        var slots = [(name: String, value: Value)?](repeating: nil, count: capacity)
        for (name, value) in entries {
            let hash = Self.hash(name)
            var index = Int(truncatingIfNeeded: hash) & (capacity - 1)
            while hashes[index] != 0 { index = (index + 1) & (capacity - 1) }
            hashes[index] = hash
            slots[index] = (name, value)
        }
        self.hashes = hashes
        self.entries = slots
        self.mask = capacity - 1
    }

    package subscript(name: String) -> Value? {
        let hash = Self.hash(name)
        var index = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slotHash = hashes[index]
            if slotHash == 0 { return nil }
            if slotHash == hash, let entry = entries[index], Self.sameBytes(entry.name, name) { return entry.value }
            index = (index + 1) & mask
        }
    }

    /// Whether the names are the same bytes. `==` (a `memcmp` for ASCII strings, far cheaper than a loop over
    /// the bytes here) compares under canonical equivalence; with the lengths equal too, an ASCII name (every
    /// method's: `ServiceName`, `MemberName`) is matched only by its own bytes, since whatever is canonically
    /// equivalent to ASCII text but spelled otherwise (U+212A for K) is longer in UTF-8.
    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a == b
    }

    /// FNV-1a over the name's UTF-8 bytes, never 0.
    package static func hash(_ name: String) -> UInt64 {
        name.utf8.withContiguousStorageIfAvailable(hash) ?? Array(name.utf8).withUnsafeBufferPointer(hash)
    }

    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash | 1
    }
}
