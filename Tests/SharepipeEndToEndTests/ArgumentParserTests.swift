import Testing

@testable import sharepipe

private enum Policy: String, CaseIterable, Sendable {
    case keepSuccessful = "keep-successful"
    case allOrNothing = "all-or-nothing"
}

/// A command with one option of every kind; it keeps what it parsed so the tests can look.
private struct SampleCommand: Command {
    static let name = "sample"
    static let abstract = "A command for parser tests."
    static let json = Flag("json", help: "Print JSON.")
    static let policy = Option("policy", .choice(Policy.self), default: "keep-successful", help: "What to keep.")
    static let maxFileSize = Option("max-file-size", .size, default: "100M", help: "Largest attachment.")
    static let workers = Option("workers", .positiveInteger, default: "2", help: "Parallel workers.")
    static let loadTimeout = Option("load-timeout", .milliseconds, default: "30s", help: "Load timeout.")
    static let accept = ListOption("accept", .string(placeholder: "TYPE"), default: "public.item", help: "Accepted.")
    static let state = Option("state", .path(placeholder: "DIR"), help: "State directory.")
    static let processor = Option("processor", .choice(["store", "exec", "discard"]), help: "Processor.")
    static let options: [any OptionDeclaration] = [
        json, policy, maxFileSize, workers, loadTimeout, accept, state, processor,
    ]
    static let positionals = [Positional("ATTACHMENT", .zeroOrMore, help: "Files to share.")]

    let arguments: ParsedArguments

    init(arguments: ParsedArguments) {
        self.arguments = arguments
    }

    func run() -> ExitCode { .success }
}

private struct PairCommand: Command {
    static let name = "pair"
    static let abstract = "Takes exactly two arguments."
    static let options: [any OptionDeclaration] = []
    static let positionals = [Positional("LEFT", help: "Left."), Positional("RIGHT", help: "Right.")]

    init(arguments: ParsedArguments) throws {
        guard arguments.positionals[0] != arguments.positionals[1] else {
            throw ValidationError("LEFT and RIGHT must differ")
        }
    }

    func run() -> ExitCode { .success }
}

private struct GroupCommand: CommandGroup {
    static let name = "group"
    static let abstract = "A group."
    static let subcommands: [any CommandNode.Type] = [PairCommand.self]
}

private let tool = CommandLineTool(
    name: "sharepipe", version: "9.8.7", abstract: "The test tool.", commands: [SampleCommand.self, GroupCommand.self])

private func parse(_ arguments: [String]) throws -> ParsedArguments {
    guard case .run(let command, _) = try tool.resolve(["sample"] + arguments) else {
        throw SupportError("expected a command to run")
    }
    return try #require(command as? SampleCommand).arguments
}

/// The usage error `arguments` produce, or nil when they parse.
private func usageError(_ arguments: [String]) -> UsageError? {
    do {
        _ = try tool.resolve(arguments)
        return nil
    } catch {
        return error as? UsageError
    }
}

private func helpText(_ arguments: [String]) throws -> String {
    guard case .text(let text) = try tool.resolve(arguments) else { throw SupportError("expected text") }
    return text
}

/// The help printed on stderr, with exit status 2, for a command line that names no runnable command.
private func usageText(_ arguments: [String]) throws -> String {
    guard case .usage(let text) = try tool.resolve(arguments) else { throw SupportError("expected usage") }
    return text
}

@Suite struct ArgumentParserTests {
    @Test func valuesWithEqualsOrSpace() throws {
        let spaced = try parse(["--policy", "all-or-nothing", "--state", "/tmp/s", "--max-file-size", "10M"])
        let joined = try parse(["--policy=all-or-nothing", "--state=/tmp/s", "--max-file-size=10M"])
        for arguments in [spaced, joined] {
            #expect(arguments[SampleCommand.policy] == .allOrNothing)
            #expect(arguments[SampleCommand.state] == "/tmp/s")
            #expect(arguments[SampleCommand.maxFileSize] == 10 << 20)
        }
        #expect(try parse(["--state=a=b"])[SampleCommand.state] == "a=b")
        #expect(try parse(["--processor", "exec"])[SampleCommand.processor] == "exec")
    }

    @Test func defaultsApplyWhenOptionsAreAbsent() throws {
        let arguments = try parse([])
        #expect(arguments[SampleCommand.policy] == .keepSuccessful)
        #expect(arguments[SampleCommand.maxFileSize] == 100 << 20)
        #expect(arguments[SampleCommand.workers] == 2)
        #expect(arguments[SampleCommand.loadTimeout] == 30_000)
        #expect(arguments[SampleCommand.accept] == ["public.item"])
        #expect(arguments[SampleCommand.state] == nil)
        #expect(arguments[SampleCommand.json] == false)
        #expect(!arguments.isSpecified(SampleCommand.policy))
        #expect(try parse(["--policy", "keep-successful"]).isSpecified(SampleCommand.policy))
    }

    @Test func flagsListsPositionalsAndTerminator() throws {
        let arguments = try parse(["a.jpg", "--json", "--accept", "public.image,public.pdf", "b.png", "--accept=x.y"])
        #expect(arguments[SampleCommand.json])
        #expect(arguments[SampleCommand.accept] == ["public.image", "public.pdf", "x.y"])
        #expect(arguments.positionals == ["a.jpg", "b.png"])
        #expect(try parse(["--accept", "a, b"])[SampleCommand.accept] == ["a", "b"])

        let terminated = try parse(["--", "--json", "-x", "--policy=nope"])
        #expect(terminated.positionals == ["--json", "-x", "--policy=nope"])
        #expect(!terminated[SampleCommand.json])
        #expect(try parse(["-"]).positionals == ["-"])
        #expect(try parse(["--workers", "3", "--workers", "5"])[SampleCommand.workers] == 5)
    }

    @Test(arguments: [
        ("100", 100), ("0", 0), ("512K", 512 << 10), ("512k", 512 << 10), ("10M", 10 << 20), ("1G", 1 << 30),
        ("1.5G", 3 << 29), ("10MB", 10 << 20), ("10MiB", 10 << 20), ("2T", 2 << 40), ("100B", 100),
        ("0.5K", 512),
    ] as [(String, Int64)])
    func sizes(text: String, bytes: Int64) throws {
        #expect(try ValueParser.size.convert(text) == bytes)
    }

    @Test(arguments: ["-5", "abc", "10X", "1.", ".5", "", "M", "10iB", "1e3", " 10M", "1,5G", "99999999999T", "+5"])
    func badSizes(text: String) {
        #expect(throws: ValidationError.self) { try ValueParser.size.convert(text) }
    }

    @Test func millisecondsAndIntegers() throws {
        #expect(try ValueParser.milliseconds.convert("1500") == 1500)
        #expect(try ValueParser.milliseconds.convert("1500ms") == 1500)
        #expect(try ValueParser.milliseconds.convert("2s") == 2000)
        #expect(try ValueParser.milliseconds.convert("0.3s") == 300)
        #expect(try ValueParser.positiveInteger.convert("8") == 8)
        #expect(try ValueParser.nonNegativeInteger.convert("0") == 0)
        for text in ["-1", "1h", "abc", ""] {
            #expect(throws: ValidationError.self) { try ValueParser.milliseconds.convert(text) }
        }
        for text in ["0", "-1", "1.5", "+3", "x", ""] {
            #expect(throws: ValidationError.self) { try ValueParser.positiveInteger.convert(text) }
        }
    }

    @Test func badValuesNameTheFlag() throws {
        let policy = try #require(usageError(["sample", "--policy", "sometimes"]))
        #expect(policy.message == "--policy: expected one of keep-successful, all-or-nothing, got \"sometimes\"")
        #expect(policy.usage == "usage: sharepipe sample [options] [ATTACHMENT...]")

        let cases: [([String], String)] = [
            (["--max-file-size", "-5"], "--max-file-size: expected a size"),
            (["--max-file-size=lots"], "--max-file-size: expected a size"),
            (["--workers", "0"], "--workers: expected a positive integer, got \"0\""),
            (["--load-timeout", "soon"], "--load-timeout: expected milliseconds"),
            (["--processor", "shred"], "--processor: expected one of store, exec, discard"),
            (["--accept", "a,,b"], "--accept: expected a comma-separated list"),
            (["--state="], "--state: expected a path"),
            (["--json=yes"], "--json: takes no value"),
        ]
        for (arguments, message) in cases {
            let error = try #require(usageError(["sample"] + arguments), "\(arguments)")
            #expect(error.message.hasPrefix(message), "\(arguments): \(error.message)")
            #expect(!error.message.contains("\n"))
        }
        let multiline = try #require(usageError(["sample", "--workers", "1\n2"]))
        #expect(!multiline.message.contains("\n"))
    }

    @Test func missingValuesAndUnknownOptions() throws {
        #expect(usageError(["sample", "--state"])?.message == "--state: missing value (expected DIR)")
        #expect(usageError(["sample", "--state", "--json"])?.message == "--state: missing value (expected DIR)")
        #expect(usageError(["sample", "--frobnicate"])?.message == "unknown option --frobnicate")
        #expect(usageError(["sample", "--polcy=x"])?.message == "unknown option --polcy (did you mean --policy?)")
        #expect(usageError(["sample", "-x"])?.message == "unknown option -x")
        #expect(usageError(["sample", "--max-file-size", "-5"])?.message.contains("got \"-5\"") == true)
    }

    @Test func commandsAndPositionals() throws {
        let unknown = try #require(usageError(["frobnicate"]))
        #expect(unknown.message == "unknown command \"frobnicate\"; expected one of sample, group")
        #expect(unknown.usage == "usage: sharepipe COMMAND [options]")
        #expect(usageError(["--bogus"])?.message == "unknown option --bogus")

        let sub = try #require(usageError(["group", "nope"]))
        #expect(sub.message == "group: unknown command \"nope\"; expected one of pair")
        #expect(sub.usage == "usage: sharepipe group COMMAND [options]")

        #expect(usageError(["group", "pair", "a"])?.message == "missing RIGHT")
        #expect(usageError(["group", "pair", "a", "b", "c"])?.message == "unexpected argument \"c\"")
        let fromInit = try #require(usageError(["group", "pair", "a", "a"]))
        #expect(fromInit.message == "LEFT and RIGHT must differ")
        #expect(fromInit.usage == "usage: sharepipe group pair LEFT RIGHT")
        #expect(usageError(["group", "pair", "a", "b"]) == nil)
    }

    @Test func helpAndVersion() throws {
        #expect(try helpText(["--version"]) == "sharepipe 9.8.7\n")
        #expect(try usageText([]) == helpText(["--help"]))
        for arguments in [["help"], ["--help"], ["-h"]] {
            let top = try helpText(arguments)
            #expect(top.hasPrefix("usage: sharepipe COMMAND [options]\n"))
            #expect(top.contains("sample") && top.contains("A command for parser tests."))
            #expect(top.contains(/\n  group pair +Takes exactly two arguments\.\n/))
            #expect(top.contains("--version"))
        }
        let sample = try helpText(["sample", "--help"])
        #expect(try helpText(["help", "sample"]) == sample)
        #expect(try helpText(["sample", "a.jpg", "--policy", "bad", "-h"]) == sample)
        #expect(sample.hasPrefix("usage: sharepipe sample [options] [ATTACHMENT...]\n"))
        for expected in [
            "--json", "--policy keep-successful|all-or-nothing", "one of: keep-successful, all-or-nothing",
            "default: keep-successful", "--max-file-size SIZE", "default: 100M", "--workers N", "default: 2",
            "--load-timeout MS", "--accept TYPE,...", "comma-separated, repeatable", "--state DIR", "--help",
            "ATTACHMENT", "Files to share.",
        ] {
            #expect(sample.contains(expected), "help lacks \(expected)")
        }
        #expect(try usageText(["group"]) == helpText(["group", "--help"]))
        #expect(try usageText(["group"]).contains("pair"))
        #expect(try helpText(["group", "--help"]) == helpText(["help", "group"]))
        #expect(try helpText(["help", "group", "pair"]).hasPrefix("usage: sharepipe group pair LEFT RIGHT\n"))
        #expect(usageError(["help", "nothing"])?.message == "unknown command \"nothing\"")
    }

    @Test func requiredOptionsAndConfigFallbacks() throws {
        let arguments = try parse(["--workers", "3"])
        #expect(throws: ValidationError("--state: required")) { try arguments.required(SampleCommand.state) }
        #expect(try arguments.required(SampleCommand.workers) == 3)

        let merged = try arguments.addingFallbacks(
            ["max-file-size": ["5M"], "workers": ["8"], "json": ["true"], "accept": ["a", "b,c"]], origin: "c.json")
        #expect(merged[SampleCommand.workers] == 3)
        #expect(merged[SampleCommand.maxFileSize] == 5 << 20)
        #expect(merged[SampleCommand.json])
        #expect(merged[SampleCommand.accept] == ["a", "b", "c"])
        #expect(!merged.isSpecified(SampleCommand.state))

        #expect(throws: ValidationError("c.json: unknown option \"wrkers\" (did you mean --workers?)")) {
            try arguments.addingFallbacks(["wrkers": ["1"]], origin: "c.json")
        }
        #expect(throws: ValidationError("c.json: max-file-size: expected a size such as 100, 512K, 10M or 1.5G, "
            + "got \"big\"")) {
            try arguments.addingFallbacks(["max-file-size": ["big"]], origin: "c.json")
        }
        #expect(throws: ValidationError("c.json: json: expected true or false")) {
            try arguments.addingFallbacks(["json": ["yes"]], origin: "c.json")
        }
    }

    /// `--notify-hold` (session 11) as a flag and as a config file key, over its default; 0 turns the hold off.
    @Test func notifyHoldFromTheCommandLineAndTheConfigFile() async throws {
        try await withTemporaryDirectory { dir in
            func hold(_ arguments: [String]) throws -> Duration {
                guard case .run(let command, _) = try CommandLineTool.sharepipe.resolve(
                    ["daemon", "--inbox", dir + "/inbox", "--state", dir + "/state"] + arguments)
                else { throw SupportError("expected a command to run") }
                let daemon = try #require(command as? DaemonCommand)
                return try DaemonCommand.settings(daemon.arguments).configuration.notify.hold
            }
            let config = try writeFile(dir + "/config.json", #"{"notify-hold": 0}"#)
            #expect(try hold([]) == .milliseconds(2000))
            #expect(try hold(["--notify-hold", "500"]) == .milliseconds(500))
            #expect(try hold(["--notify-hold", "3s"]) == .seconds(3))
            #expect(try hold(["--config", config]) == .zero)
            #expect(try hold(["--config", config, "--notify-hold", "250"]) == .milliseconds(250))
            #expect(throws: (any Error).self) { try hold(["--notify-hold", "-1"]) }
        }
    }

    /// Guards every command anyone adds: unique option names, no `help`, and defaults that parse.
    @Test func everyRealCommandHasSoundDeclarations() throws {
        var pending: [(path: String, node: any CommandNode.Type)] = CommandLineTool.sharepipe.commands.map {
            ($0.name, $0)
        }
        var seen = 0
        while let (path, node) = pending.popLast() {
            #expect(!node.abstract.isEmpty, "\(path) has no abstract")
            if let group = node as? any CommandGroup.Type {
                pending += group.subcommands.map { ("\(path) \($0.name)", $0) }
                continue
            }
            let command = try #require(node as? any Command.Type)
            let names = command.options.map(\.spec.name)
            #expect(Set(names).count == names.count, "\(path) declares an option twice")
            #expect(!names.contains("help") && !names.contains("version"), "\(path) redeclares --help")
            #expect(
                command.positionals.dropLast().allSatisfy { $0.arity == .one },
                "\(path): only the last positional may be optional or variadic")
            for spec in command.options.map(\.spec) {
                if let text = spec.defaultText { #expect(throws: Never.self) { try spec.validate(text) } }
            }
            seen += 1
        }
        #expect(seen >= 5)
    }
}

@Suite struct OutputTests {
    @Test func tablesAlignIgnoringColourAndBytesReadWell() {
        let table = Output.table([["\u{1B}[31mfailed\u{1B}[0m", "x"], ["ok", "y"]], header: ["RESULT", "NAME"])
        #expect(table == "RESULT  NAME\n\u{1B}[31mfailed\u{1B}[0m  x\nok      y\n")
        #expect(Output.formatBytes(512) == "512 B")
        #expect(Output.formatBytes(1536) == "1.5 KiB")
        #expect(Output.formatBytes(10 << 20) == "10.0 MiB")
        #expect(Output.formatBytes(3 << 40) == "3.0 TiB")
    }
}
