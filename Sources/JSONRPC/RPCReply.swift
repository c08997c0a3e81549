package import NIOCore
package import RPCProtocol

/// One reply as the router decided it, before it is serialized: so that a call answered at once is written
/// straight into its connection's output buffer (`RPCReplyWriter`), without a buffer of its own.
package enum RPCReply: Sendable {
    /// `{"jsonrpc":"2.0","result":RESULT,"id":ID}`; `result` is valid JSON.
    case result(ByteBuffer, id: RPCID)
    /// `{"jsonrpc":"2.0","error":{...},"id":ID}`; a nil id is written as `null`.
    case error(RPCError, id: RPCID?)
    /// A reply serialized already (a batch's array).
    case serialized(ByteBuffer)

    /// Appends the reply's JSON to `buffer`.
    package func write(into buffer: inout ByteBuffer) {
        switch self {
        case .result(let result, let id): RPCReplyWriter.writeResult(result, id: id, into: &buffer)
        case .error(let error, let id): RPCReplyWriter.writeError(error, id: id, into: &buffer)
        case .serialized(let reply): buffer.writeImmutableBuffer(reply)
        }
    }

    /// The reply in a buffer of its own.
    package var serialized: ByteBuffer {
        switch self {
        case .serialized(let reply):
            return reply
        case .result(let result, let id):
            var buffer = ByteBuffer()
            buffer.reserveCapacity(RPCReplyWriter.resultLength(result, id: id))
            RPCReplyWriter.writeResult(result, id: id, into: &buffer)
            return buffer
        case .error:
            var buffer = ByteBuffer()
            write(into: &buffer)
            return buffer
        }
    }
}
