/// rpcctl's connection options before the subcommand (`rpcctl --address /run/rpcd/rpcd.sock call calc.add 1 2`),
/// as busctl and systemctl users type them. ArgumentParser reads a subcommand's options only after its name, so
/// the options in front are moved behind it before parsing; anything else in front is left where it is, for
/// ArgumentParser to report.
package enum LeadingOptions {
    /// The options of every connecting subcommand (rpcctl's `ClientOptions`) that take a value.
    package static let valued: Set<String> = ["--address", "--ca", "--cert", "--key", "--server-name", "--timeout"]
    /// Its flags.
    package static let flags: Set<String> = ["--json", "--tls"]

    /// `arguments` (without the program name) with leading connection options moved behind the subcommand
    /// that follows them; unchanged when they are not followed by one of `subcommands`.
    package static func reordered(_ arguments: [String], subcommands: Set<String>) -> [String] {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if flags.contains(argument) || valued.contains(where: { argument.hasPrefix($0 + "=") }) {
                index += 1
            } else if valued.contains(argument) {
                index += 2
            } else {
                break
            }
        }
        guard index > 0, index < arguments.count, subcommands.contains(arguments[index]) else { return arguments }
        return [arguments[index]] + arguments[..<index] + arguments[(index + 1)...]
    }
}
