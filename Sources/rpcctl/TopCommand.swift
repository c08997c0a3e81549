import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import RPCClient
import RPCClientTools
import RPCJSON
import RPCLogging

struct TopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "A live view of calls, latencies, connections, the heaviest peers, events and handlers (rpcd.metrics).",
        discussion: """
            Refreshes every --interval seconds (1 by default): calls/s, errors/s, p50 and p99 per method over the \
            last interval, connections and bytes per listener, the peers holding the most of the budget, events \
            and the isolated handlers' states. Keys: q quits, s changes the method table's order (calls, errors, \
            p99, name). Fits 80 columns. When stdout is not a terminal, each refresh prints plain lines followed \
            by an empty line. --once prints one screen (two snapshots --interval apart); --once --json prints one \
            rpcd.metrics snapshot as JSON. rpcd.metrics is read-only: every local user may run this under the \
            shipped access rules; the peers are named only to administrators (rpcd's Allow=: root and group \
            rpcd), the others see how many there are and what the heaviest holds.
            """)

    @OptionGroup var options: ClientOptions

    @Option(help: "Seconds between refreshes (0.2 to 60).")
    var interval: Double = 1

    @Flag(help: "Print one screen (or with --json one snapshot) and exit.")
    var once = false

    @Option(help: "Sort the methods by: calls, errors, p99 or name.")
    var sort: String = "calls"

    func validate() throws {
        guard (0.2...60).contains(interval) else { throw ValidationError("--interval must be from 0.2 to 60 seconds") }
        guard TopScreen.Sort(rawValue: sort) != nil else { throw ValidationError("--sort must be calls, errors, p99 or name") }
    }

    func run() async throws {
        let timeout = options.timeoutDuration
        let (interval, once, json) = (interval, once, options.json)
        var order = TopScreen.Sort(rawValue: sort) ?? .calls
        try await options.withClient(method: "rpcd.metrics") { client throws(RPCClientError) in
            let snapshot = { () async throws(RPCClientError) -> JSONValue in
                try await client.call("rpcd.metrics", timeout: timeout)
            }
            if once && json {
                Terminal.printJSON(try await snapshot())
                return
            }
            let terminal = isatty(1) == 1 && !once ? RawTerminal() : nil
            defer { terminal?.restore() }
            var previous = try await snapshot()
            var started = ContinuousClock.now
            while true {
                // Waits out the interval in small steps, so a key is answered at once.
                let deadline = started + .milliseconds(Int64(interval * 1000))
                while ContinuousClock.now < deadline {
                    if let key = terminal?.key() {
                        if key == "q" { return }
                        if key == "s" { order = order.next }
                    }
                    try? await Task.sleep(for: .milliseconds(50))
                }
                let current = try await snapshot()
                let now = ContinuousClock.now
                let elapsed = now - started
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                (started, previous) = (now, previous)
                var screen = TopScreen(
                    previous: previous, current: current, interval: seconds, sort: order,
                    width: terminal?.columns ?? 80, maxMethods: terminal.map { max(3, $0.rows - 20) })
                screen.width = min(screen.width, 200)
                var lines = screen.lines
                if let terminal {
                    lines.append("")
                    lines.append("q quit  s sort (by \(order.rawValue))")
                    terminal.draw(lines)
                } else {
                    DescriptorOutput.write(lines.joined(separator: "\n") + "\n\n", to: 1)
                }
                previous = current
                if once { return }
            }
        }
    }
}

/// The terminal while `top` runs: keys arrive one at a time without echo (non-canonical mode), the screen is
/// redrawn in place, and everything is put back on exit.
private final class RawTerminal {
    private var saved = termios()
    let columns: Int
    let rows: Int

    init?() {
        guard tcgetattr(0, &saved) == 0 else { return nil }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(0, TCSANOW, &raw) == 0 else { return nil }
        var size = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            (columns, rows) = (Int(size.ws_col), Int(size.ws_row))
        } else {
            (columns, rows) = (80, 24)
        }
        DescriptorOutput.write("\u{1B}[?25l", to: 1)  // hide the cursor
    }

    /// A key pressed since the last call, if any.
    func key() -> Character? {
        var byte: UInt8 = 0
        guard read(0, &byte, 1) == 1 else { return nil }
        return Character(UnicodeScalar(byte))
    }

    func draw(_ lines: [String]) {
        let shown = lines.prefix(rows).map { String($0.prefix(columns)) }
        DescriptorOutput.write("\u{1B}[H" + shown.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\u{1B}[J", to: 1)
    }

    func restore() {
        _ = tcsetattr(0, TCSANOW, &saved)
        DescriptorOutput.write("\u{1B}[?25h\r\n", to: 1)
    }
}
