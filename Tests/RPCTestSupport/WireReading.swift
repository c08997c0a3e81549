// The wire format read plainly, and seeded streams to cut it with: what tests of the frame cutter and of
// the handlers around it compare against.

/// The wire format read plainly: the frames, whether a length above the maximum comes before the end, and the
/// announced length of a frame left incomplete.
package struct WireReading {
    package var frames: [[UInt8]] = []
    package var tooLarge = false
    package var incompleteLength: Int?
    /// The bytes after the last whole frame.
    package var tailLength = 0

    package init(_ stream: [UInt8], maxFrameSize: Int) {
        var position = 0
        while stream.count - position >= 4 {
            let length = stream[position..<(position + 4)].reduce(0) { $0 << 8 | Int($1) }
            if length > maxFrameSize {
                tooLarge = true
                return
            }
            guard stream.count - position - 4 >= length else {
                incompleteLength = length
                tailLength = stream.count - position
                return
            }
            frames.append(Array(stream[(position + 4)..<(position + 4 + length)]))
            position += 4 + length
        }
        tailLength = stream.count - position
    }
}

/// A seeded linear congruential generator (Knuth's MMIX constants): enough to vary lengths and cuts.
package struct SeededLCG {
    private var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 29
    }
}

extension SeededLCG {
    /// Up to 11 frames of 0 to `maxLength - 1` random bytes, then a tail of up to 5 random bytes (the start of
    /// a frame, or a length that announces anything).
    package mutating func frameStream(maxLength: Int) -> [UInt8] {
        var stream: [UInt8] = []
        for _ in 0..<Int(next() % 12) {
            let length = Int(next() % UInt64(maxLength))
            stream += WireFrame.header(announcing: length)
            stream += (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
        }
        return stream + (0..<Int(next() % 6)).map { _ in UInt8(truncatingIfNeeded: next()) }
    }
}
