import RPCMacros

/// Greets whoever asks.
///
/// The app's own declaration of the `hello` service that examples/modules/hello-c serves, written in C: the
/// same method signatures give the same fingerprint, so the proxy's check passes against the C module.
@RPCInterface(service: "hello")
protocol Hello {
    /// Returns a greeting for name.
    @RPCMethod(result: "greeting", readOnly: true)
    func greet(name: String?) async throws -> String
}

/// calc as an older client might have declared it, with `add` taking integers: its fingerprint is not the
/// server's, and the proxy refuses to call.
@RPCInterface(service: "calc")
protocol OldCalculator {
    func add(a: Int, b: Int) async throws -> Int
}
