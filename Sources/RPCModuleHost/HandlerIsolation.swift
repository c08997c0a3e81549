import RPCConfig

/// `Isolation=`: where a handler's module runs (docs/MODULES.md, "Isolation").
package enum HandlerIsolation: String, Hashable, Sendable, CaseIterable {
    /// In a module host process of its own (`rpcd-module-host`), spawned and supervised by rpcd: a crash, a
    /// hang or a leak is that handler's alone. The default.
    case process
    /// In rpcd's own process, on its event loops and worker pool: no link to cross, for modules the
    /// administrator trusts as much as rpcd itself.
    case none

    @Sendable static func parse(_ entry: INIEntry) throws(ConfigError) -> HandlerIsolation {
        guard let value = HandlerIsolation(rawValue: entry.value) else {
            throw entry.invalidValue(expected: "expected process or none")
        }
        return value
    }
}
