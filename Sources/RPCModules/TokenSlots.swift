/// Values kept by token, for a table that takes and gives back entries at a high rate (`LinkedCalls`' calls):
/// an array of slots, and a token that names a slot (its low 32 bits) and the slot's generation when the value
/// was put there (its high 32 bits), so that finding a value is an index and a comparison, not a hash.
///
/// - **Stale tokens**: a slot's generation grows each time it is taken or freed, and a slot made again after
///   it was given back starts above every generation given back, so the token of a value since removed
///   finds nothing, even once its slot holds another value. (A token could name a new value only after its
///   slot was taken 2^31 times in between.)
/// - **Bound**: a new value takes the lowest free slot, so every slot below it is taken; the array ends at
///   its last value, slots past it given back as they free, and its storage is made smaller once it has
///   room for four times its slots and more than `keptSlots`. So it never has more slots than the most
///   values it held at once since the oldest of those it holds was put in, and none once it holds none:
///   values gather at the front and the array shrinks back to them.
///
/// Plain value, no locking: its owner's.
struct TokenSlots<Element> {
    typealias Token = UInt64

    /// Each slot's generation: odd while it holds a value, even while it is free, one more at each change; a
    /// token carries the odd one, so a free slot matches no token. Apart from the values, so that a look-up or
    /// a test for a free slot reads a number, not a value.
    private var generations: [UInt32] = []
    private var elements: [Element?] = []
    /// Free slots below the last, as a min-heap: the lowest is taken first. May also name slots given back
    /// since, or taken again through a second entry; those are skipped when they come up (`takeFree`).
    private var free: [Int] = []
    /// Where a slot made again starts: the highest generation of a slot given back (even).
    private var generationFloor: UInt32 = 0
    /// Values held.
    private(set) var count = 0
    /// Room the array keeps however few values it holds: a burst of calls that all end (the common case at
    /// load) would otherwise give its storage back and grow it again, one allocation per doubling.
    static var keptSlots: Int { 64 }

    init() {}

    var isEmpty: Bool { count == 0 }

    /// Slots the array has, taken or free: what the bound is about (for tests).
    var slotCount: Int { generations.count }
    /// Slots its storage has room for (for tests).
    var reservedSlots: Int { elements.capacity }

    /// Keeps `element`, and returns its token.
    mutating func insert(_ element: consuming Element) -> Token {
        let index: Int
        if let lowest = takeFree() {
            index = lowest
            elements[index] = element
        } else {
            index = generations.count
            generations.append(generationFloor)
            elements.append(element)
        }
        generations[index] &+= 1
        count += 1
        return Token(generations[index]) << 32 | Token(index)
    }

    /// Where the value `token` names is; nil when it names none (removed since, or never given).
    func index(of token: Token) -> Int? {
        let index = Int(truncatingIfNeeded: token & 0xFFFF_FFFF)
        guard index < generations.count, generations[index] == UInt32(truncatingIfNeeded: token >> 32),
              token >> 32 & 1 == 1 else { return nil }
        return index
    }

    /// The value at `index`, which `index(of:)` found and nothing has removed since.
    subscript(index: Int) -> Element {
        _read { yield elements[index]! }
        _modify { yield &elements[index]! }
    }

    /// Removes the value at `index` (as for the subscript) and returns it.
    mutating func remove(at index: Int) -> Element {
        let element = elements[index].take()!
        generations[index] &+= 1
        count -= 1
        if index == generations.count - 1 {
            trimFreeTail()
        } else {
            pushFree(index)
        }
        return element
    }

    /// Removes every value, and returns them with their tokens.
    mutating func removeAll() -> [(token: Token, element: Element)] {
        var all: [(token: Token, element: Element)] = []
        all.reserveCapacity(count)
        for index in generations.indices {
            // An odd generation was taken: the next even one is where a slot made again starts.
            let generation = generations[index]
            generationFloor = max(generationFloor, generation &+ generation & 1)
            guard let element = elements[index].take() else { continue }
            all.append((Token(generation) << 32 | Token(index), element))
        }
        let keep = elements.capacity <= Self.keptSlots
        generations.removeAll(keepingCapacity: keep)
        elements.removeAll(keepingCapacity: keep)
        free.removeAll(keepingCapacity: true)
        count = 0
        return all
    }

    // MARK: Free slots

    /// The lowest free slot, if any below the last: entries for slots given back since, or taken through a
    /// second entry, are dropped on the way.
    private mutating func takeFree() -> Int? {
        while let lowest = free.first {
            let last = free.removeLast()
            if !free.isEmpty {
                free[0] = last
                siftDown(0)
            }
            if lowest < generations.count, generations[lowest] & 1 == 0 { return lowest }
        }
        return nil
    }

    private mutating func pushFree(_ index: Int) {
        free.append(index)
        var child = free.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard free[child] < free[parent] else { break }
            free.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < free.count else { return }
            let right = left + 1
            let lower = right < free.count && free[right] < free[left] ? right : left
            guard free[lower] < free[parent] else { return }
            free.swapAt(lower, parent)
            parent = lower
        }
    }

    /// The last slot is free: it and the free slots before it are given back, and the storage with them once
    /// it has room for four times its slots and more than `keptSlots`. The heap's entries for them are
    /// dropped when they come up, or at once when they are most of it.
    private mutating func trimFreeTail() {
        var end = generations.count
        while end > 0, generations[end - 1] & 1 == 0 {
            end -= 1
            generationFloor = max(generationFloor, generations[end])
        }
        generations.removeSubrange(end..<generations.count)
        elements.removeSubrange(end..<elements.count)
        if generations.isEmpty {
            // The common case, between bursts: the room is kept, unless it is more than a few slots.
            free.removeAll(keepingCapacity: true)
            if elements.capacity > Self.keptSlots {
                generations = []
                elements = []
            }
            return
        }
        if elements.capacity > max(4 * elements.count, Self.keptSlots) {
            generations = Self.copy(generations)
            elements = Self.copy(elements)
        }
        if free.count > 2 * (generations.count - count) + Self.keptSlots {
            // The free slots in order are a heap already.
            free = generations.indices.filter { generations[$0] & 1 == 0 }
        }
    }

    /// `array` in storage for twice its count.
    private static func copy<Value>(_ array: [Value]) -> [Value] {
        var fewer: [Value] = []
        fewer.reserveCapacity(2 * array.count)
        fewer.append(contentsOf: array)
        return fewer
    }
}
