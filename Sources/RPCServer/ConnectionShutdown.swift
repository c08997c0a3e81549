import JSONRPC
import NIOCore
import RPCJSON
import RPCProtocol

/// How one connection ends, when the server stops (docs/PROTOCOL.md §4, "Shutdown") or when the connection's
/// stream cannot be read on (a refused frame, §1), so that the client knows the fate of every call it sent: a
/// value that `RPCConnectionHandler` tells what happens and whose returned actions it carries out (it does the
/// I/O, this decides).
///
///     serving ──stop──▶ stopping ──every accepted call answered──▶ closed
///        └──refused frame──▶ finishing ──every call read before it answered──▶ closed
///
/// - serving: each message the connection takes up, in the order the client sent it, is *accepted*: counted,
///   and the last request id among them kept. (An `rpc.cancel` run ahead of waiting frames is not counted: it
///   runs whatever the phase.)
/// - stop: the client is told where the cut is, before any other reply, and the messages waiting for a call
///   slot are refused (answered -32006, *not run*):
///
///       {"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":ID,"accepted":N}}
///
///   The first N messages the client sent on this connection were accepted and are answered before the close;
///   every message after them, in the order sent, did not run and will not (LAST is the id of the last request
///   among the N, `null` if none). What is read from then on is refused too.
/// - closed: every accepted call is answered; the handler closes (its output first, so that the replies reach
///   the client before anything could reset the connection).
/// - refused frame: a frame too large, over the peer's budget or too slow ends the stream (nothing after it
///   can be read as frames). What was read before it still runs, the messages waiting for a call slot too, and
///   is answered; then the refusal is answered (its error, id `null`) and the connection closed. So no call of
///   the connection is left of unknown fate by somebody else's frame, or by the client's own mistake.
///
/// Plain value, no I/O; owned by one handler, so confined to its event loop.
struct ConnectionShutdown {
    enum Phase: Equatable {
        case serving
        case stopping
        /// A refused frame ended the stream; what was read before it runs on.
        case finishing
        case closed
    }

    /// What the handler does next.
    enum Action: Equatable {
        /// Answer every message waiting for a call slot with `refusal(of:)`: they will not run.
        case refuseWaiting
        /// Send `rpc.goingAway` (`goingAway(accepted:lastID:)`).
        case announce(accepted: Int, lastID: RPCID?)
        /// Every accepted call is answered: flush, and close.
        case close
        /// Every call read before the refused frame is answered: flush, and answer the refusal (which closes).
        case answerRefusal
    }

    private(set) var phase = Phase.serving
    /// Messages accepted so far.
    private(set) var accepted = 0
    /// The id of the last request among them (of a batch, its last entry with one); nil while there is none.
    private(set) var lastID: RPCID?

    /// Whether messages taken up are run: while serving, and while finishing what was read before a refused frame.
    var runsMessages: Bool { phase == .serving || phase == .finishing }

    /// A message is taken up in order, while serving (or finishing): it is accepted.
    mutating func accept(_ message: RPCMessage) {
        precondition(runsMessages, "messages are refused once stopping")
        accepted += 1
        switch message {
        case .single(let entry):
            if let id = entry.id { lastID = id }
        case .batch(let entries):
            if let id = entries.last(where: { $0.id != nil })?.id { lastID = id }
        case .failure:
            break
        }
    }

    /// The server stops. `quiet`: no accepted call is still unanswered.
    mutating func stop(quiet: Bool) -> [Action] {
        guard phase == .serving else { return [] }
        phase = .stopping
        var actions: [Action] = [.announce(accepted: accepted, lastID: lastID), .refuseWaiting]
        if quiet {
            phase = .closed
            actions.append(.close)
        }
        return actions
    }

    /// A frame was refused while serving: the stream ends. `quiet`: nothing read before it is still to answer.
    /// (While stopping, the stop's own end closes the connection: the refusal goes on at once.)
    mutating func refuseFrame(quiet: Bool) -> Action? {
        precondition(phase == .serving, "only a serving connection finishes before answering a refusal")
        guard quiet else {
            phase = .finishing
            return nil
        }
        phase = .closed
        return .answerRefusal
    }

    /// Calls were answered; `quiet`: none accepted is left.
    mutating func answered(quiet: Bool) -> Action? {
        guard quiet else { return nil }
        switch phase {
        case .stopping:
            phase = .closed
            return .close
        case .finishing:
            phase = .closed
            return .answerRefusal
        case .serving, .closed:
            return nil
        }
    }

    /// The answer to a message that will not run: -32006 for each of its requests with an id (a batch's in an
    /// array), and for what could not be taken apart (id `null`); nil when nothing is to be answered (a
    /// notification, a batch of them).
    static func refusal(of message: RPCMessage) -> RPCReply? {
        switch message {
        case .single(.request(let request)):
            return request.id.map { .error(.shuttingDown, id: $0) }
        case .single(.invalid(let id, _)):
            return .error(.shuttingDown, id: id)
        case .failure:
            return .error(.shuttingDown, id: nil)
        case .batch(let entries):
            let replies = entries.compactMap { entry -> ByteBuffer? in
                switch entry {
                case .request(let request): request.id.map { RPCReply.error(.shuttingDown, id: $0).serialized }
                case .invalid(let id, _): RPCReply.error(.shuttingDown, id: id).serialized
                }
            }
            guard !replies.isEmpty else { return nil }
            var buffer = ByteBuffer()
            RPCReplyWriter.writeBatch(replies, into: &buffer)
            return .serialized(buffer)
        }
    }

    /// The method of the notification that says where the cut is.
    static let goingAwayMethod = RPCGoingAway.method

    /// `{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":ID,"accepted":N}}`, the id as the client
    /// wrote it.
    static func goingAway(accepted: Int, lastID: RPCID?) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeStaticString(#"{"jsonrpc":"2.0","method":""#)
        buffer.writeString(goingAwayMethod)
        buffer.writeStaticString(#"","params":{"lastId":"#)
        buffer.writeImmutableBuffer((lastID ?? .null).rawJSON)
        buffer.writeStaticString(#","accepted":"#)
        buffer.writeString(String(accepted))
        buffer.writeStaticString("}}")
        return buffer
    }
}

extension RPCEntry {
    /// The id the entry is answered under: a request's (nil for a notification), or the id an invalid one
    /// could be read with.
    fileprivate var id: RPCID? {
        switch self {
        case .request(let request): request.id
        case .invalid(let id, _): id
        }
    }
}
