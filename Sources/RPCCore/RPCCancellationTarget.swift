/// A service that knows its calls in flight by tokens of its own and is told by token when one is cancelled:
/// it gives each call its token (`RPCCall.onCancel(tell:token:)`), which the call keeps beside its state, and
/// looks the token up only when a cancellation comes. A closure registered per call (`RPCCall.onCancel(_:)`)
/// costs an allocation for the closure and one for its list, made and freed for every call, nearly all of
/// which are never cancelled.
package protocol RPCCancellationTarget: AnyObject, Sendable {
    /// The caller gave up on the call given `token`: it sent `rpc.cancel`, or its connection ended. It has been
    /// answered -32011 already. Runs at most once per call, on the call's event loop, never after the call was
    /// answered.
    func callCancelled(token: UInt64)
}
