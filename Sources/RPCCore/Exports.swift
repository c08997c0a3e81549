/// `RPCServiceDescriptor` and `RPCMethodDescriptor`, which every `RPCService` exposes, live in RPCBinding: the
/// module SDK and the client compute fingerprints from declarations with the same code, without RPCCore.
@_exported import RPCBinding
