package import NIOCore

/// Cuts a byte stream in the wire format of `LengthPrefixedFrameDecoder` into frames: the one cutter of rpcd's
/// framed connections (`FrameReceiver`), both ends of a module link (`ModuleLinkFrameReceiver`) and the client
/// (`LengthPrefixedFrameDecoder`). A value that takes reads and says what to do (`Step`); the handler around it
/// does the I/O and the policy: the server charges what it holds and times it, the link admits frames by their
/// head, the client only hands frames on.
///
///     atFrameStart ──whole frame──► .frame (a slice of the read)
///       │ the start of a frame
///       ▼
///     gathering (a buffer of its own) ──head in view, not admitted──► .admit ──decide(.skip)──► skipping
///       │ the rest arrives                    ▲ decide(.hold)                                       │
///       ▼                                     └─────────────────────────────┘          dropped as it arrives
///     .frame (the buffer), then atFrameStart ◄──────────────────────────────────────────────────────┘
///
///     a length above `maxFrameSize` or `stop()` ──► stopped: nothing more is cut
///
/// A frame whole within a read is a slice of that read (no copy). A frame that spans reads is gathered in a
/// buffer of its own, allocated for the whole frame as soon as its length is known when the frame is at most
/// `wholeAllocationLimit` long (every byte is copied once, and the buffer never grows); a longer one gets room
/// for twice what arrived (at least `minimumGather`, at most the frame) and doubles as bytes arrive, so that a
/// peer cannot make it reserve a large frame by sending four bytes. Only what the frame needs is taken from a
/// read: frames after it are slices of that read again. The buffer is the only reference to its storage while
/// it gathers, so appends are in place.
///
/// With an admission (`admissionHeadSize`), a frame to be gathered across reads is not allocated until it is
/// admitted: once its length and its payload's first `admissionHeadSize` bytes are in view, `next` returns
/// `.admit`, and the caller answers with `decide(_:)` (or `stop()` to refuse it). A frame whole within a read
/// is never asked about. A length above `maxFrameSize` is `.tooLarge` as soon as its four bytes are in view,
/// before anything of that size is allocated; then the cutter stops. Not thread-safe: its handler's event loop.
package struct LengthPrefixedFrameCutter {
    /// What to do after a read, or after a decision.
    package enum Step {
        /// Hand on this payload, then call `next` again.
        case frame(ByteBuffer)
        /// A frame to be gathered: admit it by its payload's first bytes (`head`) and its payload's length,
        /// with `decide(_:)`, then call `next` again.
        case admit(head: ByteBuffer, length: Int)
        /// All of the read is taken: frames that follow need more bytes.
        case needMoreData
        /// A length above the maximum: the cutter has stopped.
        case tooLarge(FrameTooLargeError)
        /// The cutter had stopped (`stop()`, or a length above the maximum): the read is ignored.
        case stopped
    }

    /// What becomes of a frame asked about with `.admit`.
    package enum Admission {
        /// Gather it, and hand it on whole.
        case hold
        /// Drop its bytes as they arrive; nothing is handed on.
        case skip
    }

    /// Frames up to this long (length included) are allocated whole once their length arrives.
    package static let wholeAllocationLimit = 8 << 20
    /// The least room a gathered frame above `wholeAllocationLimit` starts with, unless the frame is smaller.
    package static let minimumGather = 1024

    private enum State {
        /// The next read starts with a frame.
        case atFrameStart
        /// The start of a frame (at least one byte) that has not all arrived, in a buffer of its own; `admitted`
        /// once the admission said `hold` (always without one).
        case gathering(ByteBuffer, admitted: Bool)
        /// `.admit` was returned for this frame, of which `remaining` bytes are still to arrive.
        case awaitingAdmission(ByteBuffer, remaining: Int)
        /// The rest of a skipped frame: this many bytes are dropped as they arrive.
        case skipping(Int)
        /// The frame being gathered is out (`takeGathered`) until `putBack`.
        case takenOut
        /// Nothing more is cut.
        case stopped
    }

    package let maxFrameSize: Int
    private let wholeAllocationLimit: Int
    private let admissionHeadSize: Int?
    private var state = State.atFrameStart

    /// - Parameters:
    ///   - wholeAllocationLimit: frames up to this long are allocated whole; 0: every gathered frame grows with
    ///     what arrives (rpcd's server charges what it holds to the peer, never what the peer announced).
    ///   - admissionHeadSize: with a value, frames to be gathered are asked about (`.admit`) once this much of
    ///     their payload (or all of a shorter one) is in view.
    package init(maxFrameSize: Int, wholeAllocationLimit: Int = Self.wholeAllocationLimit, admissionHeadSize: Int? = nil) {
        precondition(maxFrameSize >= 0 && maxFrameSize <= Int(UInt32.max), "maxFrameSize must fit the u32 length field")
        self.maxFrameSize = maxFrameSize
        self.wholeAllocationLimit = wholeAllocationLimit
        self.admissionHeadSize = admissionHeadSize
    }

    /// Cuts `input`: the next frame, or a question, or that all of it is taken (kept as the start of a frame,
    /// or dropped while skipping). Call again after each `.frame` and `.admit` until `.needMoreData`.
    package mutating func next(from input: inout ByteBuffer) -> Step {
        while true {
            switch state {
            case .atFrameStart:
                let scanned: LengthPrefixedFrameDecoder.Scan
                do {
                    scanned = try LengthPrefixedFrameDecoder.scan(input, maxFrameSize: maxFrameSize)
                } catch {
                    state = .stopped
                    return .tooLarge(error)
                }
                switch scanned {
                case .frame(let length):
                    // The length is read once: a read of the buffer costs a check of its storage's exclusive access.
                    input.moveReaderIndex(forwardBy: LengthPrefixedFrameDecoder.headerSize)
                    return .frame(input.readSlice(length: length)!)
                case .needLength:
                    guard input.readableBytes > 0 else { return .needMoreData }
                    state = .gathering(ByteBufferAllocator().buffer(capacity: LengthPrefixedFrameDecoder.headerSize), admitted: admissionHeadSize == nil)
                case .incomplete(let length):
                    // Allocated for the whole frame at once only when no admission is to be asked first.
                    let capacity = admissionHeadSize == nil
                        ? room(forFrame: LengthPrefixedFrameDecoder.headerSize + length, holding: input.readableBytes, capacity: input.readableBytes)
                        : headBytes(length)
                    state = .gathering(ByteBufferAllocator().buffer(capacity: capacity), admitted: admissionHeadSize == nil)
                }
            case .gathering(var buffered, let admitted):
                state = .atFrameStart  // `buffered` is now the storage's only reference: appends are in place
                switch gather(&buffered, admitted: admitted, from: &input) {
                case .whole:
                    return .frame(LengthPrefixedFrameDecoder.readFrame(from: &buffered)!)
                case .more:
                    state = .gathering(buffered, admitted: admitted)
                    return .needMoreData
                case .ask(let head, let length, let remaining):
                    state = .awaitingAdmission(buffered, remaining: remaining)
                    return .admit(head: head, length: length)
                case .tooLarge(let error):
                    state = .stopped
                    return .tooLarge(error)
                }
            case .awaitingAdmission:
                preconditionFailure("decide(_:) answers .admit before the next read")
            case .takenOut:
                preconditionFailure("putBack(_:) returns the frame before the next read")
            case .skipping(let remaining):
                let dropped = min(remaining, input.readableBytes)
                input.moveReaderIndex(forwardBy: dropped)
                guard remaining == dropped else {
                    state = .skipping(remaining - dropped)
                    return .needMoreData
                }
                state = .atFrameStart
            case .stopped:
                return .stopped
            }
        }
    }

    /// Answers `.admit`.
    package mutating func decide(_ admission: Admission) {
        guard case .awaitingAdmission(let buffered, let remaining) = state else {
            preconditionFailure("decide(_:) answers .admit")
        }
        switch admission {
        case .hold: state = .gathering(buffered, admitted: true)
        case .skip: state = .skipping(remaining)
        }
    }

    /// Takes out the frame being gathered, so that its next bytes can be read straight into its buffer by a
    /// caller that can take them from their source without a read buffer of its own (`ModuleLinkFrameReceiver`
    /// from the link's socket): the buffer, with room for at least part of what the frame lacks, and how many
    /// bytes it lacks, never to be exceeded, so that nothing after the frame is taken. Until `putBack(_:)`
    /// returns it, the cutter holds nothing and cuts nothing. Then call `next` with an empty read, which hands
    /// the frame on once it is whole. Nil unless an admitted frame whose length is known is being gathered.
    package mutating func takeGathered() -> (buffer: ByteBuffer, missing: Int)? {
        guard case .gathering(var buffered, admitted: true) = state,
              let length = buffered.getInteger(at: buffered.readerIndex, as: UInt32.self) else { return nil }
        let total = LengthPrefixedFrameDecoder.headerSize + Int(length)
        let missing = total - buffered.readableBytes
        guard missing > 0 else { return nil }
        state = .takenOut  // `buffered` is now the storage's only reference: the bytes land in place
        // Room as `gather` makes it: the whole frame up to `wholeAllocationLimit`, above it twice the capacity.
        if buffered.writableBytes < min(missing, Self.minimumGather) {
            buffered.reserveCapacity(room(forFrame: total, holding: buffered.readableBytes, capacity: buffered.capacity))
        }
        return (buffered, missing)
    }

    /// Returns the frame `takeGathered()` took out, with the bytes read into it since (at most the `missing`).
    package mutating func putBack(_ buffer: ByteBuffer) {
        guard case .takenOut = state else { preconditionFailure("putBack(_:) answers takeGathered()") }
        state = .gathering(buffer, admitted: true)
    }

    /// Stops cutting (a refused frame, a deadline passed, the handler removed): drops what is held, and every
    /// later read is `.stopped`.
    package mutating func stop() {
        state = .stopped
    }

    package var isStopped: Bool {
        if case .stopped = state { return true }
        return false
    }

    /// The memory held for a frame still arriving: its buffer's capacity; 0 at a frame's start.
    package var heldCapacity: Int {
        switch state {
        case .gathering(let buffered, _), .awaitingAdmission(let buffered, _): buffered.capacity
        case .atFrameStart, .skipping, .takenOut, .stopped: 0
        }
    }

    /// The whole size (length included) of the frame still arriving once its length is known; nil otherwise.
    package var arrivingFrameSize: Int? {
        switch state {
        case .gathering(let buffered, _), .awaitingAdmission(let buffered, _):
            buffered.getInteger(at: buffered.readerIndex, endianness: .big, as: UInt32.self).map {
                LengthPrefixedFrameDecoder.headerSize + Int($0)
            }
        case .atFrameStart, .skipping, .takenOut, .stopped: nil
        }
    }

    private enum Gathered {
        case whole
        case more
        /// Not admitted yet, and its head in view: the payload's `length`, and `remaining` bytes still to arrive.
        case ask(head: ByteBuffer, length: Int, remaining: Int)
        case tooLarge(FrameTooLargeError)
    }

    /// Appends to `buffered` (the start of a frame) what `input` holds of the rest of that frame, and no more
    /// (until it is `admitted`, no more than its head): whether the frame is whole now, or to be asked about.
    private func gather(_ buffered: inout ByteBuffer, admitted: Bool, from input: inout ByteBuffer) -> Gathered {
        while true {
            let total: Int
            let length: Int
            do {
                switch try LengthPrefixedFrameDecoder.scan(buffered, maxFrameSize: maxFrameSize) {
                case .frame:
                    return .whole
                case .needLength:
                    // The length's missing bytes first: once it is known, the buffer is made large enough for the frame.
                    total = LengthPrefixedFrameDecoder.headerSize
                    length = 0
                case .incomplete(let announced):
                    total = LengthPrefixedFrameDecoder.headerSize + announced
                    length = announced
                }
            } catch {
                return .tooLarge(error)
            }
            if length > 0, !admitted {
                let head = headBytes(length)
                if buffered.readableBytes >= head {
                    let view = buffered.getSlice(
                        at: buffered.readerIndex + LengthPrefixedFrameDecoder.headerSize, length: head - LengthPrefixedFrameDecoder.headerSize)!
                    return .ask(head: view, length: length, remaining: total - buffered.readableBytes)
                }
            }
            guard input.readableBytes > 0 else { return .more }
            let limit = admitted || length == 0 ? total : headBytes(length)
            var part = input.readSlice(length: min(input.readableBytes, limit - buffered.readableBytes))!
            if length > 0, admitted, buffered.writableBytes < part.readableBytes {
                let needed = buffered.readableBytes + part.readableBytes
                buffered.reserveCapacity(room(forFrame: total, holding: needed, capacity: buffered.capacity))
            }
            buffered.writeBuffer(&part)
        }
    }

    /// What of a frame of `length` payload bytes is gathered before it is admitted: its length and its head.
    private func headBytes(_ length: Int) -> Int {
        LengthPrefixedFrameDecoder.headerSize + min(length, admissionHeadSize ?? 0)
    }

    /// The room for a frame of `total` bytes (length included) of which `holding` have arrived, in a buffer of
    /// `capacity`: all of it up to `wholeAllocationLimit`; above, twice the capacity, at least `minimumGather`.
    private func room(forFrame total: Int, holding: Int, capacity: Int) -> Int {
        guard total > wholeAllocationLimit else { return total }
        return min(total, max(holding, wholeAllocationLimit, Self.minimumGather, 2 * capacity))
    }
}
