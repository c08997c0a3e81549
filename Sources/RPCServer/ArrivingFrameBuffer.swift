import NIOCore
import RPCCore

/// The start of a frame still arriving, kept by `WebSocketFrameReceiver` between
/// reads in a buffer of its own, so that the channel can reuse its receive buffer, and charged to the peer's
/// account as it is kept: the buffer's capacity, the memory it takes, never the length the frame announces,
/// so a peer that announces large frames and sends nothing holds nothing. The buffer grows by doubling with
/// what arrives, never past the frame's size, so the memory kept tracks what the peer sent.
///
/// Its receiver also keeps here, as they are, the bytes a handler feeds the channel from inside `channelRead`,
/// for the loop that is running to take. Event-loop confined, as its receiver.
struct ArrivingFrameBuffer {
    private let account: PeerAccount
    /// The bytes kept; nil when there are none.
    private var bytes: ByteBuffer?
    /// What `bytes` holds of the account.
    private var charged = 0

    /// The smallest buffer kept for a frame still arriving, unless the frame is smaller.
    private static let minimumKeep = 1024

    init(account: PeerAccount) {
        self.account = account
    }

    /// Takes the bytes kept out (still charged until `charge`): the caller's binding is then the buffer's only
    /// reference, so that appending to it does not copy what it holds (a 1 MiB frame arriving in 64 KiB reads
    /// was copied 16 times when the kept binding stayed).
    mutating func take() -> ByteBuffer? {
        let taken = bytes
        bytes = nil
        return taken
    }

    /// `input` after `buffered`, in `buffered`'s storage while it has room; past that in a buffer twice as
    /// large, never larger than the frame (`frameSize`, header included; 0 while unknown) needs.
    static func append(_ input: ByteBuffer, to buffered: inout ByteBuffer, frameSize: Int, allocator: ByteBufferAllocator) {
        let needed = buffered.readableBytes + input.readableBytes
        if buffered.capacity - buffered.readerIndex < needed {
            let grown = max(needed, min(frameSize, 2 * buffered.capacity))
            var larger = allocator.buffer(capacity: grown)
            larger.writeBuffer(&buffered)
            buffered = larger
        }
        buffered.writeImmutableBuffer(input)
    }

    /// Keeps `tail`: as it is, or (`copying`, when its storage is shared with frames handed on or with the
    /// channel) in a buffer of its own with room for twice what has arrived, at least `minimumKeep`, at most
    /// the whole frame.
    mutating func keep(_ tail: ByteBuffer, copying: Bool, frameSize: Int, allocator: ByteBufferAllocator) {
        guard copying else {
            bytes = tail
            return
        }
        let arrived = tail.readableBytes
        let room = max(arrived, min(max(frameSize, arrived), max(2 * arrived, Self.minimumKeep)))
        var own = allocator.buffer(capacity: room)
        own.writeImmutableBuffer(tail)
        bytes = own
    }

    /// Brings the account's charge to what is kept now. False when the account cannot cover it: then nothing
    /// is kept or charged any more.
    mutating func charge() -> Bool {
        let holding = bytes?.capacity ?? 0
        if holding > charged {
            guard account.charge(holding - charged) else {
                release()
                return false
            }
        } else if holding < charged {
            account.release(charged - holding)
        }
        charged = holding
        return true
    }

    /// Drops what is kept and gives back its charge.
    mutating func release() {
        bytes = nil
        account.release(charged)
        charged = 0
    }
}
