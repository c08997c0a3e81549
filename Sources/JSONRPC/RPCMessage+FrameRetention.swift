import NIOCore

extension RPCMessage {
    /// Frames at most this long are kept whole: copying their parts out would save too little to matter.
    package static let smallFrameSize = 4096

    /// Moves this message's params and ids out of the frame when they are a small part of it; returns the bytes
    /// it then keeps alive.
    ///
    /// The envelope parser hands params and ids on as slices of the frame, and a slice keeps its whole
    /// buffer alive: a call carrying a megabyte of ignored members would pin that megabyte until it is
    /// answered. When what the calls use is less than half of a frame larger than `smallFrameSize`, it is
    /// copied into one buffer of its own and the frame can be freed; so a message never keeps more than
    /// twice what its calls use, plus `smallFrameSize`. (Mutating rather than returning a new message with the
    /// count: a tuple holding a message is destroyed through its type's metadata, a cost on every call.)
    package mutating func retainOnlyWhatCallsUse(frameSize: Int) -> Int {
        guard frameSize > Self.smallFrameSize else { return frameSize }
        let used = usedBytes
        guard used * 2 < frameSize else { return frameSize }
        var storage = ByteBufferAllocator().buffer(capacity: used)
        switch self {
        case .failure:
            return 0
        case .single(let entry):
            self = .single(entry.copied(into: &storage))
        case .batch(let entries):
            self = .batch(entries.map { $0.copied(into: &storage) })
        }
        return used
    }

    /// The bytes of the frame the message's entries refer to.
    private var usedBytes: Int {
        switch self {
        case .failure: return 0
        case .single(let entry): return entry.usedBytes
        case .batch(let entries): return entries.reduce(0) { $0 + $1.usedBytes }
        }
    }
}

extension RPCEntry {
    fileprivate var usedBytes: Int {
        switch self {
        case .request(let request):
            return (request.params?.readableBytes ?? 0) + (request.id?.rawJSON.readableBytes ?? 0)
        case .invalid(let id, _):
            return id?.rawJSON.readableBytes ?? 0
        }
    }

    /// The entry with its slices re-pointed at copies appended to `storage`.
    fileprivate func copied(into storage: inout ByteBuffer) -> RPCEntry {
        switch self {
        case .request(var request):
            request.params = request.params.map { storage.appendSlice(of: $0) }
            request.id = request.id.map { RPCID(rawJSON: storage.appendSlice(of: $0.rawJSON)) }
            return .request(request)
        case .invalid(let id, let error):
            return .invalid(id: id.map { RPCID(rawJSON: storage.appendSlice(of: $0.rawJSON)) }, error: error)
        }
    }
}

extension ByteBuffer {
    /// Appends `bytes` and returns a slice of self holding them.
    fileprivate mutating func appendSlice(of bytes: ByteBuffer) -> ByteBuffer {
        let start = writerIndex
        let written = writeImmutableBuffer(bytes)
        return getSlice(at: start, length: written)!
    }
}
