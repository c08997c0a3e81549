import RPCBinding
import RPCCore
import RPCProtocol

/// A test-only service with one event, `ticks.tick` (an integer), and no methods: what tests of event
/// delivery subscribe to and publish.
struct TickService: RPCService {
    let descriptor = RPCServiceDescriptor(
        name: "ticks", version: "1", summary: "", methods: [],
        events: [RPCEventDescriptor(name: "tick", schema: ["type": "integer"])])
    func handle(_ call: RPCCall, responder: RPCResponder) { responder.fail(RPCError.internalError) }
}
