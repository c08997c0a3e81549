/// Values kept by token, for a table that takes and gives back entries at a high rate (`LinkedCalls`' calls):
/// tokens count up from 1 and are never given twice, and a value sits in a ring of slots at its token modulo
/// the ring's size, so that finding a value is a mask, an index and a comparison, not a hash.
///
///     ring of 8:   slot  0    1    2    3    4    5    6    7
///                 token  –    9    10   3    –    –    –    7        next token: 11 (slot 3 is taken by
///                                                                    3, so 11 is skipped and 12 given)
///
/// - **Tokens**: never reused, so a stale token finds nothing, ever; a number whose slot still holds an older
///   value (one that stays on the books while newer ones come and go) is skipped, so tokens are increasing
///   but not always consecutive.
/// - **Bound**: the ring doubles before more than half its slots are taken, and halves while at most an
///   eighth are, down to `keptSlots`, which it goes back to whenever it empties: so it has at most four times
///   the most values it held at once, and, once they are fewer, at most eight times those it holds or
///   `keptSlots`. (A halving that would put two of the values left in one slot waits until half of them
///   have gone, or all.)
///
/// Plain value, no locking: its owner's.
struct TokenSlots<Element> {
    typealias Token = UInt64

    /// Each slot's token, 0 while it is free. Apart from the values, so that a look-up or a test for a free
    /// slot reads a number, not a value.
    private var tokens: [Token] = []
    private var elements: [Element?] = []
    private var nextToken: Token = 1
    /// Values held.
    private(set) var count = 0
    /// A halving found two values that would share a slot of the smaller ring: the next is tried once no
    /// more than this many are held (half as many), so that a ring kept large by them is not scanned at every
    /// removal.
    private var halvingBlockedAt = Int.max
    /// The ring's smallest size, kept however few values it holds: a burst of calls that all end (the common
    /// case at load) would otherwise give its storage back and grow it again, one allocation per doubling.
    static var keptSlots: Int { 64 }

    init() {}

    var isEmpty: Bool { count == 0 }

    /// Slots the ring has, taken or free: what the bound is about (for tests).
    var slotCount: Int { tokens.count }

    /// Keeps `element`, and returns its token.
    mutating func insert(_ element: consuming Element) -> Token {
        if tokens.isEmpty {
            resize(to: Self.keptSlots)
        } else if 2 * (count + 1) > tokens.count {
            resize(to: 2 * tokens.count)
        }
        let mask = tokens.count - 1
        var token = nextToken
        while tokens[Int(truncatingIfNeeded: token) & mask] != 0 { token += 1 }
        nextToken = token + 1
        let index = Int(truncatingIfNeeded: token) & mask
        tokens[index] = token
        elements[index] = element
        count += 1
        return token
    }

    /// Where the value `token` names is; nil when it names none (removed since, or never given).
    func index(of token: Token) -> Int? {
        guard token != 0, !tokens.isEmpty else { return nil }
        let index = Int(truncatingIfNeeded: token) & (tokens.count - 1)
        return tokens[index] == token ? index : nil
    }

    /// The value at `index`, which `index(of:)` found and nothing has removed since.
    subscript(index: Int) -> Element {
        _read { yield elements[index]! }
        _modify { yield &elements[index]! }
    }

    /// Removes the value at `index` (as for the subscript) and returns it.
    mutating func remove(at index: Int) -> Element {
        let element = elements[index].take()!
        tokens[index] = 0
        count -= 1
        if count == 0 {
            if tokens.count > Self.keptSlots { resize(to: Self.keptSlots) }
        } else if 8 * count <= tokens.count, tokens.count > Self.keptSlots, count <= halvingBlockedAt {
            halve()
        }
        return element
    }

    /// Removes every value, and returns them with their tokens.
    mutating func removeAll() -> [(token: Token, element: Element)] {
        var all: [(token: Token, element: Element)] = []
        all.reserveCapacity(count)
        for index in tokens.indices where tokens[index] != 0 {
            all.append((tokens[index], elements[index].take()!))
            tokens[index] = 0
        }
        count = 0
        if tokens.count > Self.keptSlots { resize(to: Self.keptSlots) }
        return all
    }

    // MARK: The ring's size

    /// Moves the values into a ring of `size` slots (a power of two, with room for them at their tokens).
    private mutating func resize(to size: Int) {
        var newTokens = [Token](repeating: 0, count: size)
        var newElements = [Element?](repeating: nil, count: size)
        for index in tokens.indices where tokens[index] != 0 {
            let moved = Int(truncatingIfNeeded: tokens[index]) & (size - 1)
            newTokens[moved] = tokens[index]
            newElements[moved] = elements[index].take()
        }
        tokens = newTokens
        elements = newElements
        halvingBlockedAt = Int.max
    }

    /// Halves the ring, unless two of its values would share a slot of the smaller one.
    private mutating func halve() {
        let mask = tokens.count / 2 - 1
        var taken = [Bool](repeating: false, count: tokens.count / 2)
        for token in tokens where token != 0 {
            let index = Int(truncatingIfNeeded: token) & mask
            guard !taken[index] else {
                halvingBlockedAt = count / 2
                return
            }
            taken[index] = true
        }
        resize(to: tokens.count / 2)
    }
}
