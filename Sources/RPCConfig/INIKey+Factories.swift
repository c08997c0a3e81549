package import RPCProtocol

/// Ready-made keys for the value types systemd-style files use. All of them treat an empty
/// assignment (`Key=`) the systemd way: a single value goes back to its default, a list is
/// cleared.
extension INIKey {
    /// A key holding one value. Later assignments replace earlier ones.
    package static func value<Value: Sendable>(
        _ name: String,
        _ keyPath: WritableKeyPath<Settings, Value> & Sendable,
        parse: @escaping @Sendable (INIEntry) throws(ConfigError) -> Value,
        format: @escaping @Sendable (Value) -> String
    ) -> INIKey {
        INIKey(
            name,
            apply: { settings, entry, context throws(ConfigError) in
                settings[keyPath: keyPath] = entry.value.isEmpty ? context.defaults[keyPath: keyPath] : try parse(entry)
            },
            render: { settings in [format(settings[keyPath: keyPath])] }
        )
    }

    /// A repeatable key building a list, with systemd's list semantics: the first assignment
    /// replaces the default list, each further one appends (a value already in the list is not
    /// added twice), and an empty assignment clears the list built so far. Renders one line per
    /// element, or a single empty assignment for an empty list, so that re-parsing gives it back.
    package static func list<Element: Hashable & Sendable>(
        _ name: String,
        _ keyPath: WritableKeyPath<Settings, [Element]> & Sendable,
        parse: @escaping @Sendable (INIEntry) throws(ConfigError) -> Element,
        format: @escaping @Sendable (Element) -> String
    ) -> INIKey {
        INIKey(
            name,
            apply: { settings, entry, context throws(ConfigError) in
                if context.isFirstAssignment || entry.value.isEmpty { settings[keyPath: keyPath] = [] }
                guard !entry.value.isEmpty else { return }
                let element = try parse(entry)
                if !settings[keyPath: keyPath].contains(element) { settings[keyPath: keyPath].append(element) }
            },
            render: { settings in
                let elements = settings[keyPath: keyPath]
                return elements.isEmpty ? [""] : elements.map(format)
            }
        )
    }

    /// A decimal integer within `range`.
    package static func integer(_ name: String, _ keyPath: WritableKeyPath<Settings, Int> & Sendable, in range: ClosedRange<Int>) -> INIKey {
        value(name, keyPath, parse: { entry throws(ConfigError) in try entry.integerValue(in: range) }, format: { String($0) })
    }

    /// A decimal integer within `range`, or `infinity` (nil, as systemd's `TasksMax=infinity`).
    package static func integer(_ name: String, _ keyPath: WritableKeyPath<Settings, Int?> & Sendable, in range: ClosedRange<Int>) -> INIKey {
        value(
            name, keyPath,
            parse: { entry throws(ConfigError) in entry.value == "infinity" ? nil : try entry.integerValue(in: range) },
            format: { $0.map(String.init) ?? "infinity" })
    }

    /// A size in bytes (`16M`) within `range`; rendered in the shortest exact form.
    package static func size(_ name: String, _ keyPath: WritableKeyPath<Settings, Int> & Sendable, in range: ClosedRange<Int>) -> INIKey {
        value(name, keyPath, parse: { entry throws(ConfigError) in try entry.sizeValue(in: range) }, format: ValueSyntax.formatSize)
    }

    /// A size in bytes (`512M`) within `range`, or `infinity` (nil, as systemd's `MemoryMax=infinity`).
    package static func size(_ name: String, _ keyPath: WritableKeyPath<Settings, Int?> & Sendable, in range: ClosedRange<Int>) -> INIKey {
        value(
            name, keyPath,
            parse: { entry throws(ConfigError) in entry.value == "infinity" ? nil : try entry.sizeValue(in: range) },
            format: { $0.map(ValueSyntax.formatSize) ?? "infinity" })
    }

    /// A boolean; rendered as `yes` or `no`.
    package static func boolean(_ name: String, _ keyPath: WritableKeyPath<Settings, Bool> & Sendable) -> INIKey {
        value(name, keyPath, parse: { entry throws(ConfigError) in try entry.boolValue() }, format: { $0 ? "yes" : "no" })
    }

    /// A time span in `range`; nil means `infinity`. With `zeroDisables`, `0` also reads as nil, for keys
    /// where zero means "never" rather than "immediately".
    package static func timeSpan(
        _ name: String, _ keyPath: WritableKeyPath<Settings, Duration?> & Sendable, in range: ClosedRange<Duration>,
        zeroDisables: Bool
    ) -> INIKey {
        value(
            name, keyPath,
            parse: { entry throws(ConfigError) in
                let span = try entry.timeSpanValue(in: range)
                return zeroDisables && span == .zero ? nil : span
            },
            format: ValueSyntax.formatTimeSpan
        )
    }

    /// A log level name.
    package static func logLevel(_ name: String, _ keyPath: WritableKeyPath<Settings, LogLevelSetting> & Sendable) -> INIKey {
        value(name, keyPath, parse: { entry throws(ConfigError) in try entry.logLevelValue() }, format: \.rawValue)
    }

    /// A repeatable address key (see `list` for the list semantics).
    package static func endpoints(_ name: String, _ keyPath: WritableKeyPath<Settings, [RPCEndpoint]> & Sendable) -> INIKey {
        list(name, keyPath, parse: { entry throws(ConfigError) in try entry.endpointValue() }, format: \.description)
    }
}

extension INIKey {
    /// Access-rule principals (`RPCPrincipal`), several per line separated by blanks, with systemd's list
    /// semantics: the first assignment replaces the default, further ones add, an empty one clears the list
    /// (which then names nobody).
    package static func principals(
        _ name: String, _ keyPath: WritableKeyPath<Settings, [RPCPrincipal]> & Sendable
    ) -> INIKey {
        INIKey(
            name,
            apply: { settings, entry, context throws(ConfigError) in
                if context.isFirstAssignment || entry.value.isEmpty { settings[keyPath: keyPath] = [] }
                for principal in try entry.principalsValue() where !settings[keyPath: keyPath].contains(principal) {
                    settings[keyPath: keyPath].append(principal)
                }
            },
            render: { settings in [settings[keyPath: keyPath].map(\.description).joined(separator: " ")] }
        )
    }

    /// As `principals`, for a list that may be left unset (nil: inherited from elsewhere).
    package static func principals(
        _ name: String, _ keyPath: WritableKeyPath<Settings, [RPCPrincipal]?> & Sendable
    ) -> INIKey {
        INIKey(
            name,
            apply: { settings, entry, context throws(ConfigError) in
                var list = context.isFirstAssignment || entry.value.isEmpty ? [] : settings[keyPath: keyPath] ?? []
                for principal in try entry.principalsValue() where !list.contains(principal) { list.append(principal) }
                settings[keyPath: keyPath] = list
            },
            render: { settings in
                settings[keyPath: keyPath].map { [$0.map(\.description).joined(separator: " ")] } ?? []
            }
        )
    }
}

extension INIEntry {
    /// The blank-separated principals of an access-rule key; none for an empty value.
    package func principalsValue() throws(ConfigError) -> [RPCPrincipal] {
        var principals: [RPCPrincipal] = []
        for word in value.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            do {
                principals.append(try RPCPrincipal(parsing: String(word)))
            } catch {
                throw invalidValue(expected: "\(error.problem) in '\(error.text)'; expected \(RPCPrincipal.syntax)")
            }
        }
        return principals
    }
}
