import CRPCDModule
import RPCJSON
import RPCModuleSDK
import XCTest

/// The exported `rpcd_module`, read through the C structs exactly as rpcd reads it.
final class DescriptorTests: XCTestCase {
    let subject = ModuleUnderTest(RPCModuleExport.entry(TestModule.self))

    func testHeaderFieldsAndSizes() {
        let module = subject.module
        XCTAssertEqual(module.abi_version, 1)
        XCTAssertEqual(Int(module.struct_size), MemoryLayout<rpcd_module>.stride)
        // C's sizeof on LP64: 2 × u32, 4 pointers, size_t, 3 function pointers; rpcd 0.3 appended the events
        // (a pointer and a size_t) and a function pointer, rpcd 0.5 config_keys (a pointer), rpcd 0.6
        // config_params and n_config_params (a pointer and a size_t).
        XCTAssertEqual(module.struct_size, 120)
        XCTAssertEqual(String(cString: module.name), "test-module")
        XCTAssertEqual(String(cString: module.version), "0.1.2")
        XCTAssertEqual(String(cString: module.description), "Exercises the SDK.")
        XCTAssertNotNil(module.`init`)
        XCTAssertNotNil(module.call)
        XCTAssertNotNil(module.`deinit`)
        XCTAssertEqual(
            subject.methodNames,
            ["add", "greet", "fail", "crash", "point", "config", "exact", "list", "thread", "sleep", "echo", "product", "square", "taskless"])
        for index in 0..<module.n_methods {
            // sizeof(rpcd_method): 56 up to rpcd 0.3 (with its tail padding), 64 since 0.4 appended errors_json,
            // 72 since 0.5 appended result_name.
            XCTAssertEqual(module.methods[index].struct_size, 72)
        }
    }

    func testEntryReturnsTheSameDescriptorEveryTime() {
        XCTAssertEqual(RPCModuleExport.entry(TestModule.self), RPCModuleExport.entry(TestModule.self))
        XCTAssertNotEqual(RPCModuleExport.entry(TestModule.self), RPCModuleExport.entry(OtherModule.self))
    }

    func testParamsSchemasAndFlags() throws {
        let add = try XCTUnwrap(subject.method("add"))
        XCTAssertEqual(String(cString: add.summary), "Adds.")
        XCTAssertEqual(add.n_params, 2)
        XCTAssertEqual(add.flags, 0)
        XCTAssertEqual(String(cString: add.params[0].name), "a")
        XCTAssertEqual(String(cString: add.params[1].name), "b")
        XCTAssertEqual(add.params[0].flags, 0)
        XCTAssertNil(add.params[0].summary)
        XCTAssertEqual(try JSONValue(parsing: String(cString: add.params[0].schema_json)), ["type": "number"])
        XCTAssertEqual(try JSONValue(parsing: String(cString: add.result_schema_json)), ["type": "number"])

        let greet = try XCTUnwrap(subject.method("greet"))
        XCTAssertNil(greet.summary)
        XCTAssertEqual(greet.params[1].flags, UInt32(RPCD_PARAM_OPTIONAL))
        XCTAssertEqual(String(cString: greet.params[1].summary), "Repeats.")
        XCTAssertEqual(
            try JSONValue(parsing: String(cString: greet.params[1].schema_json)),
            ["type": "integer", "minimum": 1, "maximum": 3])

        let fail = try XCTUnwrap(subject.method("fail"))
        XCTAssertNil(fail.result_schema_json)

        let thread = try XCTUnwrap(subject.method("thread"))
        XCTAssertEqual(thread.flags, UInt32(RPCD_METHOD_MAY_BLOCK))
        XCTAssertEqual(thread.n_params, 0)
        XCTAssertNil(thread.params, "no parameters: NULL")

        // The empty schema (any value) is NULL, as the header spells "any value".
        let exact = try XCTUnwrap(subject.method("exact"))
        XCTAssertNil(exact.params[0].schema_json)

        // A result of any value is "{}" (NULL would mean the result is not described at all).
        let echo = try XCTUnwrap(subject.method("echo"))
        XCTAssertEqual(String(cString: echo.result_schema_json), "{}")

        let list = try XCTUnwrap(subject.method("list"))
        XCTAssertEqual(try JSONValue(parsing: String(cString: list.result_schema_json)), ["type": "array"])
    }

    func testEverySchemaTextParses() throws {
        let module = subject.module
        for index in 0..<module.n_methods {
            let method = module.methods[index]
            for position in 0..<method.n_params {
                if let schema = method.params[position].schema_json {
                    XCTAssertNoThrow(try JSONValue(parsing: String(cString: schema)))
                }
            }
            if let schema = method.result_schema_json {
                XCTAssertNoThrow(try JSONValue(parsing: String(cString: schema)))
            }
        }
    }

    func testSecondModuleTypeInTheSameImageGetsItsOwnInit() async throws {
        let other = ModuleUnderTest(RPCModuleExport.entry(OtherModule.self))
        XCTAssertEqual(String(cString: other.module.name), "other")
        let instance = try other.start()
        defer { instance.deinitialize() }
        try await instance.expect("whoami", nil, .result(#""other""#))
    }

    func testTypesBeyondTheEighthStillLoadButTheirInitFails() {
        // This image exports TestModule and OtherModule (and nothing else); fillers take the other slots.
        _ = RPCModuleExport.entry(TestModule.self)
        _ = RPCModuleExport.entry(OtherModule.self)
        let fillers = [
            RPCModuleExport.entry(Filler<Tag1>.self), RPCModuleExport.entry(Filler<Tag2>.self),
            RPCModuleExport.entry(Filler<Tag3>.self), RPCModuleExport.entry(Filler<Tag4>.self),
            RPCModuleExport.entry(Filler<Tag5>.self), RPCModuleExport.entry(Filler<Tag6>.self),
            RPCModuleExport.entry(Filler<Tag7>.self), RPCModuleExport.entry(Filler<Tag8>.self),
        ]
        var outcomes: [String] = []
        for filler in fillers {
            switch ModuleUnderTest(filler).initialize() {
            case .success(let instance):
                instance.deinitialize()
                outcomes.append("ok")
            case .failure(let failure):
                outcomes.append(failure.reason ?? "")
            }
        }
        let refused = "this image exports more than 8 module types"
        XCTAssertEqual(outcomes, Array(repeating: "ok", count: 6) + [refused, refused])
        // The registered ones keep working.
        switch subject.initialize() {
        case .success(let instance): instance.deinitialize()
        case .failure(let failure): XCTFail(failure.reason ?? "")
        }
    }

    func testProblemsFindsInvalidNamesAndDuplicates() {
        XCTAssertEqual(RPCModuleExport.problems(of: TestModule.self), [])
        XCTAssertEqual(
            RPCModuleExport.problems(of: BadModule.self),
            [
                "module name 'Bad Name' is not \(ServiceName.rule)",
                "module version is empty",
                "method 'dup' is declared twice",
                "method name 'has space' is not \(MemberName.rule)",
                "parameter 'a-b' of 'has space' is not \(MemberName.rule)",
                "parameter 'x' of 'has space' is declared twice",
                "method name '_x' is not \(MemberName.rule)",
            ])
        XCTAssertEqual(RPCModuleExport.problems(of: OtherModule.self), [])
    }
}
