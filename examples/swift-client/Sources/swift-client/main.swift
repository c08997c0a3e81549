// swift-client ADDRESS [--hello] [--bench CALLS]
//
// Calls calc and kv on the rpcd at ADDRESS (host:port or a Unix socket path) through typed proxies and prints
// what each call returned; --hello also greets through the hello module; --bench compares typed calls with
// untyped ones (calls/s, same connection, same run).
import RPCClient
import RPCExampleInterfaces

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let arguments = CommandLine.arguments.dropFirst()
guard let address = arguments.first, let endpoint = try? RPCEndpoint(parsing: address) else {
    print("usage: swift-client ADDRESS [--hello] [--bench CALLS]")
    exit(64)
}
let benchCalls = arguments.firstIndex(of: "--bench").flatMap { arguments.index(after: $0) < arguments.endIndex ? Int(arguments[arguments.index(after: $0)]) : nil }

// An error the server or the connection reports (access denied, no such service, a refused connection) is
// printed, not trapped: the program says what went wrong and exits 1.
do {
    let client = try await RPCClient.connect(to: endpoint)

    // calc: a proxy conforming to Calculator; the fingerprint is checked before it is returned.
    let calc = try await client.proxy(CalculatorProxy.self)
    print("calc.add(a: 1, b: 2) = \(try await calc.add(a: 1, b: 2))")
    print("calc.divide(dividend: 1, divisor: 4) = \(try await calc.divide(dividend: 1, divisor: 4))")
    print("calc.sum([1, 2, 3.5]) = \(try await calc.sum([1, 2, 3.5]))")
    do {
        _ = try await calc.divide(dividend: 10, divisor: 0)
    } catch let error as DivisionByZero {
        print("calc.divide(dividend: 10, divisor: 0) threw DivisionByZero(dividend: \(error.dividend)), code \(error.code)")
    }

    // kv: values are any JSON.
    let kv = try await client.proxy(KeyValueStoreProxy.self)
    print("kv.set(key: \"greeting\", value: \"hi\") = \(try await kv.set(key: "greeting", value: "hi"))")
    print("kv.get(key: \"greeting\") = \(try await kv.get(key: "greeting"))")
    print("kv.list() = \(try await kv.list())")
    print("kv.delete(key: \"greeting\") = \(try await kv.delete(key: "greeting"))")
    do {
        _ = try await kv.get(key: "greeting")
    } catch let error as NoSuchKey {
        print("kv.get(key: \"greeting\") threw NoSuchKey(key: \"\(error.key)\")")
    }

    // An interface that does not match the server's is refused before any call.
    do {
        _ = try await client.proxy(OldCalculatorProxy.self)
    } catch let error as RPCProxyError {
        print("OldCalculator refused: \(error)")
    }

    if arguments.contains("--hello") {
        let hello = try await client.proxy(HelloProxy.self)
        print("hello.greet(name: \"Ann\") = \(try await hello.greet(name: "Ann"))")
        print("hello.greet(name: nil) = \(try await hello.greet(name: nil))")
    }

    if let benchCalls {
        // The same calls, typed and untyped, from 16 tasks pipelining on the one connection.
        let tasks = 16
        func rate(_ call: @escaping @Sendable () async throws -> Void) async throws -> Double {
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<tasks {
                    group.addTask { for _ in 0..<(benchCalls / tasks) { try await call() } }
                }
                try await group.waitForAll()
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return Double(benchCalls / tasks * tasks) / seconds
        }
        for round in 1...2 {
            let untyped = try await rate { _ = try await client.call("calc.add", params: ["a": 1, "b": 2]) }
            let typed = try await rate { _ = try await calc.add(a: 1, b: 2) }
            print("bench round \(round): untyped \(Int(untyped)) calls/s, typed \(Int(typed)) calls/s (\(benchCalls) calls each)")
        }
    }

    await client.close()
} catch {
    let message = "swift-client: \(error)\n"
    _ = message.withCString { write(2, $0, strlen($0)) }
    exit(1)
}
