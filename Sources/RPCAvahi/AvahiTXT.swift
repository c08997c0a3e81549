import CAvahi

/// Conversions between byte strings and Avahi's `AvahiStringList` (TXT records).
enum AvahiTXT {
    /// A new list with `strings` in order; free it with `avahi_string_list_free`.
    static func make(_ strings: [[UInt8]]) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        // avahi_string_list_add_arbitrary prepends, so add the last string first.
        for string in strings.reversed() {
            list = string.withUnsafeBufferPointer { avahi_string_list_add_arbitrary(list, $0.baseAddress, $0.count) }
        }
        return list
    }

    /// The strings of a list, in list order.
    static func strings(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var node = list
        while let current = node {
            let size = avahi_string_list_get_size(current)
            if let text = avahi_string_list_get_text(current) {
                result.append(Array(UnsafeBufferPointer(start: text, count: size)))
            } else {
                result.append([])
            }
            node = avahi_string_list_get_next(current)
        }
        return result
    }

    /// Runs `body` with a list made of `strings`, freeing it afterwards.
    static func with<T>(_ strings: [[UInt8]], _ body: (UnsafeMutablePointer<AvahiStringList>?) throws -> T) rethrows -> T {
        let list = make(strings)
        defer { avahi_string_list_free(list) }
        return try body(list)
    }
}
