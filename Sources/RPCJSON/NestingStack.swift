/// The open containers of one `scanValue` call, one bit each (1 = object, 0 = array).
///
/// The first 64 levels live in a single word, so ordinary messages never allocate; deeper nesting spills whole
/// words to an array. The scanner bounds the count by `maxDepth`, so memory use is bounded by the caller too.
struct NestingStack {
    private var word: UInt64 = 0
    private var spilled: [UInt64] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Whether the innermost open container is an object. Only meaningful when not empty.
    var topIsObject: Bool { word & (1 &<< UInt64((count &- 1) & 63)) != 0 }

    mutating func push(isObject: Bool) {
        if count != 0 && count & 63 == 0 {
            spilled.append(word)
            word = 0
        }
        if isObject { word |= 1 &<< UInt64(count & 63) }
        count &+= 1
    }

    mutating func pop() {
        count &-= 1
        // Clearing the bit keeps `push` able to OR in the next one without a separate clear.
        word &= ~(1 &<< UInt64(count & 63))
        if count != 0 && count & 63 == 0 { word = spilled.removeLast() }
    }
}
