package import Foundation

/// A process's descendants as /proc shows them, for tests that check what a daemon started and what it left.
package enum ProcessTree {
    /// Every process below `pid`, children of any of its threads included.
    package static func descendants(of pid: pid_t) -> [pid_t] {
        var result: [pid_t] = []
        var queue = [pid]
        while let next = queue.popLast() {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(next)/task")) ?? []
            for task in tasks {
                let children = (try? String(contentsOfFile: "/proc/\(next)/task/\(task)/children", encoding: .utf8)) ?? ""
                for child in children.split(separator: " ").compactMap({ pid_t($0) }) {
                    result.append(child)
                    queue.append(child)
                }
            }
        }
        return result
    }

    /// Every process on the machine whose command line is `commandLine`: what left a tree still runs.
    package static func all(withCommandLine commandLine: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { self.commandLine($0) == commandLine }
    }

    /// The process's command line, its arguments joined by spaces.
    package static func commandLine(_ pid: pid_t) -> String {
        ((try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()).map { $0 == 0 ? " " : String(UnicodeScalar($0)) }.joined()
    }
}
