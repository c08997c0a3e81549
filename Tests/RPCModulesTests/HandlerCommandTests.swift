import Foundation
import RPCConfig
import RPCJSON
import RPCModuleHost
import RPCModules
import RPCProtocol
import XCTest

/// Command methods (`[Command]`): how a handler file's sections are read, and the one place a call's params
/// become a command's arguments — each exactly one argument, never a shell's input, never an option.
final class HandlerCommandTests: XCTestCase {
    private var root: URL!
    private var directories: HandlerDirectories { HandlerDirectories(directories: [root.path]) }

    override func setUp() { root = TestModule.temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: root) }

    private func write(_ name: String, _ text: String) throws {
        let url = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    private func command(_ section: String, exists: @escaping (String) -> Bool = { _ in true }) throws(ConfigError) -> HandlerCommand {
        let document = try INIDocument.parse("[Command]\n" + section, file: "units.conf")
        return try HandlerCommand.parse(document.entries, header: document.sectionHeaders[0], exists: exists)
    }

    private func arguments(_ command: HandlerCommand, _ values: [String: JSONValue]) -> Result<[String], RPCError> {
        Result { () throws(RPCError) in try command.arguments(for: values) }
    }

    func testAHandlerFileOfCommandsIsAHandlerWithCommandDefaults() throws {
        try write("units.conf", """
            [Handler]
            Service=units
            [Command]
            Method=isActive
            Exec=/usr/bin/systemctl is-active -- {unit}
            Param=unit string [A-Za-z0-9@._:-]+
            SuccessExitStatus=3
            ReadOnly=yes
            [Command]
            Method=usage
            Exec=/usr/bin/df --output=pcent {path}
            Param=path string /[^\\n]*
            Output=lines

            """)
        try write("units.conf.d/10-usage.conf", "[Command]\nMethod=usage\nExec=/usr/bin/df -h {path}\nParam=path\n")
        let scan = directories.scan()
        XCTAssertEqual(scan.errors, [])
        let handler = try XCTUnwrap(scan.handlers.first)
        XCTAssertEqual(handler.commands.map(\.method), ["isActive", "usage"])
        XCTAssertEqual(handler.hostKind, .commands)
        XCTAssertEqual(handler.maxConcurrency, 16, "commands are processes: fewer at once by default")
        XCTAssertEqual(handler.timeout, .seconds(30), "and none runs for ever")
        XCTAssertEqual(handler.commands[0].successExitStatus, [3])
        XCTAssertEqual(handler.commands[1].output, .text, "the drop-in's section replaced the whole method")
        XCTAssertEqual(handler.commands[1].line, 1)
        let descriptor = handler.commands[0].descriptor
        XCTAssertTrue(descriptor.flags.contains(.readOnly))
        XCTAssertEqual(descriptor.params.first?.schema["pattern"], "^(?:[A-Za-z0-9@._:-]+)$")
        XCTAssertTrue(handler.rendered().contains("[Command]\nMethod=isActive\n"), handler.rendered())
    }

    func testMistakesAreConfigErrorsNamingFileAndLine() throws {
        let cases: [(String, Int, String)] = [
            ("Exec=/bin/echo {text}\n", 1, "needs Method="),
            ("Method=x\n", 1, "needs Exec="),
            ("Method=x\nExec=/bin/echo {txt}\nParam=text\n", 3, "{txt} names no Param="),
            ("Method=x\nExec=/bin/echo\nParam=text\n", 3, "has no {text}"),
            ("Method=x\nExec=/bin/echo {text\nParam=text\n", 3, "no '}' closes"),
            ("Method=x\nExec=/bin/echo 'open\n", 3, "quote is not closed"),
            ("Method=x\nExec={text} /bin/echo\nParam=text\n", 3, "cannot hold a placeholder"),
            ("Method=x\nExec=../bin/echo\n", 3, "absolute path or a bare name"),
            ("Method=x\nExec=/bin/../bin/echo\n", 3, "'.' or '..'"),
            ("Method=x\nExec=/bin/echo {a}\nParam=a string [unclosed\n", 4, "not a regular expression"),
            ("Method=x\nExec=/bin/echo {a}\nParam=a\nParam=a integer\n", 5, "declared twice"),
            ("Method=x\nExec=/bin/echo\nOutput=yaml\n", 4, "text, lines, json"),
            ("Method=x\nExec=/bin/echo\nShell=yes\n", 4, "unknown key 'Shell'"),
        ]
        for (section, line, message) in cases {
            XCTAssertThrowsError(try command(section), section) { error in
                let error = error as! ConfigError
                XCTAssertEqual(error.file, "units.conf", section)
                XCTAssertEqual(error.line, line, "\(section): \(error)")
                XCTAssertTrue(error.description.contains(message), "\(section): \(error)")
            }
        }
        XCTAssertThrowsError(try command("Method=x\nExec=nosuchprogram\n", exists: { _ in false })) { error in
            XCTAssertTrue("\(error)".contains("no program 'nosuchprogram' in /usr/local/sbin:"), "\(error)")
        }
        XCTAssertEqual(try command("Method=x\nExec=echo\n", exists: { $0 == "/usr/bin/echo" }).program, "/usr/bin/echo",
                       "a bare name is looked for as systemd looks")

        try write("both.conf", "[Handler]\nModule=calc\n[Command]\nMethod=x\nExec=/bin/true\n")
        try write("inprocess.conf", "[Handler]\nIsolation=none\n[Command]\nMethod=x\nExec=/bin/true\n")
        let errors = directories.scan().errors.map(\.description).sorted()
        XCTAssertEqual(errors.count, 2, "\(errors)")
        XCTAssertTrue(errors[0].hasPrefix(root.path + "/both.conf:3:") && errors[0].contains("Module= or Exec="), errors[0])
        XCTAssertTrue(errors[1].contains("Isolation=none is for modules"), errors[1])
    }

    /// Whatever a param holds, it is one argument: a shell's syntax is text, a NUL or an over-long value is
    /// refused, and a value that would begin an argument with '-' is refused unless nothing can read it as an
    /// option (after literal text, or after a literal `--`).
    func testParamsBecomeExactlyOneArgumentAndNeverAnOption() throws {
        let echo = try command("Method=echo\nExec=/bin/echo -n {text}\nParam=text\n")
        for hostile in ["; rm -rf /", "$(id)", "`id`", "a b\nc", "*", "' \" \\", "|| true", "{text}"] {
            XCTAssertEqual(try arguments(echo, ["text": .string(hostile)]).get(), ["/bin/echo", "-n", hostile], hostile)
        }
        for refused in ["-e", "--help", "-"] {
            guard case .failure(let error) = arguments(echo, ["text": .string(refused)]) else { return XCTFail(refused) }
            XCTAssertEqual(error.code, -32602)
            XCTAssertTrue("\(error.data ?? .null)".contains("would read it as an option"), "\(error)")
        }
        XCTAssertEqual(arguments(echo, ["text": .string("a\u{0}b")]).failure?.code, -32602, "NUL")
        XCTAssertEqual(
            arguments(echo, ["text": .string(String(repeating: "x", count: 4097))]).failure?.code, -32602, "too long")
        XCTAssertEqual(arguments(echo, ["text": .number(5)]).failure?.code, -32602, "not a string")

        let ended = try command("Method=grep\nExec=/bin/grep -c -- {word} /etc/hostname\nParam=word\n")
        XCTAssertEqual(try arguments(ended, ["word": "-v"]).get(), ["/bin/grep", "-c", "--", "-v", "/etc/hostname"], "after --")
        let prefixed = try command("Method=show\nExec=/bin/systemctl show --property={name} x\nParam=name\n")
        XCTAssertEqual(try arguments(prefixed, ["name": "-x y"]).get()[2], "--property=-x y", "after literal text")

        let typed = try command("Method=t\nExec=/bin/echo n={n} {flag} {ratio}\nParam=n integer\nParam=flag boolean\nParam=ratio number\n")
        XCTAssertEqual(try arguments(typed, ["n": 42, "flag": true, "ratio": 0.5]).get(), ["/bin/echo", "n=42", "true", "0.5"])
        let negative = try command("Method=t\nExec=/bin/echo {n}\nParam=n integer\n")
        XCTAssertEqual(arguments(negative, ["n": -1]).failure?.code, -32602, "a negative number is an option too")

        let patterned = try command("Method=p\nExec=/bin/echo {unit}\nParam=unit string [a-z]+\\.service\n")
        XCTAssertEqual(try arguments(patterned, ["unit": "ssh.service"]).get(), ["/bin/echo", "ssh.service"])
        for wrong in ["ssh.service; reboot", "../x.service", "ssh.service\n", "SSH.service"] {
            XCTAssertEqual(arguments(patterned, ["unit": .string(wrong)]).failure?.code, -32602, "the whole value matches: \(wrong)")
        }
        let quoted = try command("Method=q\nExec=/usr/bin/printf '{{\"n\":%s}}' \"a b\" {n}\nParam=n integer\n")
        XCTAssertEqual(try arguments(quoted, ["n": 1]).get(), ["/usr/bin/printf", #"{"n":%s}"#, "a b", "1"])
    }

    func testStandardOutputBecomesTheResultItsOutputNames() throws {
        let text = try command("Method=a\nExec=/bin/true\n")
        XCTAssertEqual(text.result(from: Array("active\n".utf8)), "active", "one final newline dropped")
        XCTAssertEqual(text.result(from: Array("a\n\n".utf8)), "a\n")
        let lines = try command("Method=a\nExec=/bin/true\nOutput=lines\n")
        XCTAssertEqual(lines.result(from: Array("a\nb\n".utf8)), ["a", "b"])
        XCTAssertEqual(lines.result(from: []), [])
        let json = try command("Method=a\nExec=/bin/true\nOutput=json\n")
        XCTAssertEqual(json.result(from: Array(#"{"n": [1, 2]}"#.utf8)), ["n": [1, 2]])
        XCTAssertNil(json.result(from: Array("not json".utf8)))
        XCTAssertEqual(text.result(from: [0xFF, 0x41]), "\u{FFFD}A", "bytes that are not UTF-8 are replaced")
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
