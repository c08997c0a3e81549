import RPCConfig
import XCTest

/// INISchema with a schema of its own, as later files (handlers.d) will use it.
final class GenericSchemaTests: XCTestCase {
    private struct Settings: Hashable, Sendable {
        var enabled = false
        var names: [String] = ["default"]
        var retry: Duration? = .seconds(1)
        var inner = Inner()
        struct Inner: Hashable, Sendable { var size = 1024 }
    }

    private let schema = INISchema(
        defaults: Settings(),
        sections: [
            INISection("Main", keys: [
                .boolean("Enabled", \.enabled),
                .list("Name", \.names, parse: { $0.value }, format: { $0 }),
                .timeSpan("Retry", \.retry, in: .zero...(.seconds(3600)), zeroDisables: false),
            ]),
            INISection("Limits", keys: [.size("Size", \.inner.size, in: 1...(1 << 20))]),
        ])

    private func settings(_ text: String) throws -> Settings {
        try schema.settings(from: [INIDocument.parse(text, file: "/h.conf")])
    }

    func testKeysOfSeveralSectionsApply() throws {
        let result = try settings("[Main]\nEnabled=yes\nName=a\nName=b\nRetry=0\n[Limits]\nSize=4K\n")
        XCTAssertEqual(result, Settings(enabled: true, names: ["a", "b"], retry: .zero, inner: .init(size: 4096)))
    }

    func testZeroIsKeptWhenItDoesNotDisable() throws {
        XCTAssertEqual(try settings("[Main]\nRetry=0\n").retry, .zero)
        XCTAssertNil(try settings("[Main]\nRetry=infinity\n").retry)
    }

    func testRenderListsSectionsInSchemaOrder() throws {
        let value = Settings(enabled: true, names: ["x"], retry: nil, inner: .init(size: 2048))
        XCTAssertEqual(
            schema.render(value), "[Main]\nEnabled=yes\nName=x\nRetry=infinity\n\n[Limits]\nSize=2K\n")
        XCTAssertEqual(try settings(schema.render(value)), value)
    }

    func testUnknownSectionListsAllKnownOnes() {
        XCTAssertEqual(
            configError { try self.settings("[Other]\n") }?.message, "unknown section [Other]; known sections: [Main], [Limits]")
    }

    func testCustomKeyReceivesContext() throws {
        // A key that counts assignments and sees whether it is the first one of the load.
        let counting = INISchema(
            defaults: [String](),
            sections: [
                INISection("S", keys: [
                    INIKey("K", apply: { settings, entry, context in
                        settings.append("\(entry.value):\(context.isFirstAssignment):\(context.defaults.count)")
                    }, render: { $0 })
                ])
            ])
        let first = try INIDocument.parse("[S]\nK=a\n", file: "/1")
        let second = try INIDocument.parse("[S]\nK=b\n", file: "/2")
        XCTAssertEqual(try counting.settings(from: [first, second]), ["a:true:0", "b:false:0"])
    }
}
