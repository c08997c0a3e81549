// rpcd-microbench: the hot paths of one call, each alone, for instruction and allocation counts
// (bench/micro.sh runs each under callgrind and memcheck; bench/README.md, "Micro-benchmarks").
//
//     rpcd-microbench NAME ITERATIONS
//
// Runs benchmark NAME ITERATIONS times and prints the wall time per iteration (indicative only: the counts
// are what to compare). Benchmarks: envelope (scan a calc.add request), envelope-batch (a batch of 10),
// reply (write a result reply), binding (a Swift SDK method's params: parse, bind by name, decode into a
// struct, and its Double result), interface (the same through a typed interface's method, from the params'
// text, as `calc.add` runs in a module), ping16 (a read of 16 pipelined rpcd.ping frames through rpcd's
// connection pipeline and out: `PingPipeline`), ping16-metrics (the same with metrics kept, as rpcd runs by
// default), add16 (16 calc.add to a stand-in for the module, the path calc.add takes through rpcd, metrics
// kept), websocket-ping16 (ping16-metrics over a connection upgraded to WebSocket: 16 masked text frames in
// a read, the replies text frames), ping1 (ping16 with one call per read), socket-ping1 (one call per round trip
// on a real socket and event loop: `SocketPing`), socket-ping1-noidle (the same without IdleTimeout=), all on
// inputs built before the loop. isolated16 is add16 to the real
// module host running the shipped calc module (`IsolatedPipeline`): its host is rpcd-module-host beside this
// executable (or MICRO_HOST) and libcalc.so in the same directory (or MICRO_MODULES); it starts even for 0
// iterations, so that the difference of two runs leaves its start out. isolated-echo-1mib is one echo.echo of
// 1 MiB of params the same way (libecho.so), for the large payload's copies, system calls and wake-ups;
// inprocess-echo-1mib the same with Isolation=none, its reference. These three also print the CPU time each
// process spent per iteration (user and system: what wall time on a shared machine hides).
import JSONRPC
import NIOCore
import RPCBinding
import RPCInterface
import RPCJSON
import RPCModuleHost

#if canImport(Glibc)
import Glibc
#endif

struct AddParams: Decodable {
    var a: Double
    var b: Double
}

/// Keeps results alive so that the optimiser cannot drop the work.
nonisolated(unsafe) var sink = 0

let request = ByteBuffer(string: #"{"jsonrpc":"2.0","method":"calc.add","params":{"a":1,"b":2},"id":42}"#)
let batch = ByteBuffer(string: "[" + Array(repeating: String(buffer: request), count: 10).joined(separator: ",") + "]")
let parser = RPCEnvelopeParser()
let declared = [RPCParam("a", schema: ["type": "number"]), RPCParam("b", schema: ["type": "number"])]
let binder = ParamsBinder(declared)  // made once per method, as the SDK does
let paramsText: [UInt8] = Array(#"{"a":1,"b":2}"#.utf8)
let result = ByteBuffer(string: "3")
let id = RPCID(42)

/// `calc.add` as `@RPCInterface` writes it for a module whose methods do not suspend (`SyncCalculator`).
struct Adder: Sendable {
    func add(a: Double, b: Double) -> Double { a + b }
}
let add = RPCMethodImplementation<Adder>(
    RPCMethodDescriptor(name: "add", params: [RPCParam("a", schema: ["type": "number"]), RPCParam("b", schema: ["type": "number"])],
                        result: RPCParam("sum", schema: ["type": "number"]), flags: [.readOnly]),
    invokeNow: { implementation, arguments in
        try ResultEncoding.encode(implementation.add(a: arguments.decode("a"), b: arguments.decode("b")))
    })

let pings = try PingPipeline(calls: 16, metrics: false)
let ping = try PingPipeline(calls: 1, metrics: false)
let socketPing = try SocketPing(calls: 1)
let socketPingNoIdle = try SocketPing(calls: 1, idleTimeout: false)
let pingsCounted = try PingPipeline(calls: 16, metrics: true)
let adds = try PingPipeline(calls: 16, metrics: true, method: "calc.add")
let webSocketPings = try PingPipeline(calls: 16, metrics: true, webSocket: true)

let benchmarks: [String: () throws -> Void] = [
    "envelope": {
        if case .single = parser.parse(request) { sink &+= 1 }
    },
    "envelope-batch": {
        if case .batch(let entries) = parser.parse(batch) { sink &+= entries.count }
    },
    "reply": {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(result.readableBytes + id.rawJSON.readableBytes + 32)  // as the router does
        RPCReplyWriter.writeResult(result, id: id, into: &buffer)
        sink &+= buffer.readableBytes
    },
    "binding": {
        let value = try paramsText.withUnsafeBytes { try JSONValue(parsing: $0) }
        let members = try binder.bind(value).members
        let params = try ParamsBinding.decode(AddParams.self, from: members)
        sink &+= try ResultEncoding.encode(params.a + params.b).count
    },
    "interface": {
        sink &+= try add.runNow!(Adder(), RPCParamsText(paramsText)).count
    },
    "ping16": {
        sink &+= try pings.run()
    },
    // One call per read, as at 1 x 1 and 50 x 1: what a read burst costs beside its calls.
    "ping1": {
        sink &+= try ping.run()
    },
    // One call per round trip over a real socket and event loop, as at 1 x 1.
    "socket-ping1": {
        sink &+= try socketPing.run()
    },
    // The same without IdleTimeout=: what the idle handler costs a round trip.
    "socket-ping1-noidle": {
        sink &+= try socketPingNoIdle.run()
    },
    // The same with metrics kept (rpcd's default): what counting and timing each call costs.
    "ping16-metrics": {
        sink &+= try pingsCounted.run()
    },
    // calc.add's path through rpcd (a method answered through `handle`, as a module's), metrics kept.
    "add16": {
        sink &+= try adds.run()
    },
    // ping16-metrics over WebSocket: what the frames cost beside the length prefix.
    "websocket-ping16": {
        sink &+= try webSocketPings.run()
    },
]

let arguments = CommandLine.arguments
if arguments.count == 3, ["isolated16", "isolated-echo-1mib", "inprocess-echo-1mib"].contains(arguments[1]),
   let iterations = Int(arguments[2]), iterations >= 0 {
    AllocatorTuning.daemon.apply()  // as rpcd does: a 1 MiB buffer is heap, not a mapping of its own each
    func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
    let directory = arguments[0].split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
    let here = directory.isEmpty ? "." : directory
    let host = environment("MICRO_HOST") ?? here + "/rpcd-module-host"
    let modules = environment("MICRO_MODULES") ?? here
    let pipeline = arguments[1] == "isolated16"
        ? try IsolatedPipeline(calls: 16, hostExecutable: host, modules: modules)
        : try IsolatedPipeline(
            calls: 1, module: "echo", method: "echo.echo", params: "[\"" + String(repeating: "x", count: 1 << 20) + "\"]",
            result: nil, isolated: arguments[1] != "inprocess-echo-1mib", hostExecutable: host, modules: modules)
    let clock = ContinuousClock()
    let (ownBefore, hostBefore) = (cpuSeconds(), cpuSeconds(of: pipeline.hostPID))
    let start = clock.now
    sink &+= try pipeline.run(iterations: iterations)
    let elapsed = clock.now - start
    let (own, hosts) = (cpuSeconds() - ownBefore, cpuSeconds(of: pipeline.hostPID) - hostBefore)
    pipeline.stop()
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    let each = max(1, iterations)
    print("\(arguments[1]): \(iterations) iterations, \(iterations > 0 ? nanoseconds / Double(iterations) : 0) ns each (sink \(sink % 10))")
    print("  CPU per iteration: this process \(Int(own * 1e6 / Double(each))) us, module host \(Int(hosts * 1e6 / Double(each))) us")
    exit(0)
}
guard arguments.count == 3, let run = benchmarks[arguments[1]], let iterations = Int(arguments[2]), iterations >= 0 else {
    let names = benchmarks.keys.sorted().joined(separator: ", ")
    print("usage: rpcd-microbench NAME ITERATIONS (NAME: \(names))")
    exit(64)
}
let clock = ContinuousClock()
let elapsed = try clock.measure {
    for _ in 0..<iterations { try run() }
}
let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
print("\(arguments[1]): \(iterations) iterations, \(iterations > 0 ? nanoseconds / Double(iterations) : 0) ns each (sink \(sink % 10))")

/// User and system CPU time of this process, in seconds.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// User and system CPU time of process `pid` (`/proc/PID/stat`, in clock ticks); 0 for pid 0 or one gone.
func cpuSeconds(of pid: Int32) -> Double {
    guard pid > 0, let file = fopen("/proc/\(pid)/stat", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 1024)
    guard fgets(&line, Int32(line.count), file) != nil else { return 0 }
    let text = String(cString: line)
    // The fields after the command's closing parenthesis: state is the first, utime the 12th, stime the 13th.
    guard let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}
