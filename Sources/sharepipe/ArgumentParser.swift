import Foundation
import SharepipeCore

// The command-line parser: commands are types, options are typed declarations, and every mistake on the command
// line becomes one line naming the flag, the usage line and exit status 2.

/// How `sharepipe` ends: the SPEC's exit statuses.
enum ExitCode: Int32, Sendable {
    /// Everything worked.
    case success = 0
    /// The command failed.
    case failure = 1
    /// The command line was wrong.
    case usage = 2
    /// Part of the work was done.
    case partial = 3
    /// Nothing was accepted.
    case rejected = 4
}

/// A command line that cannot be used. Thrown from anywhere in a command, it ends the process with exit status 2
/// after one `error:` line and the command's usage line.
struct ValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// One line: what is wrong, naming the flag or argument.
    var message: String

    init(_ message: String) {
        self.message = message
    }

    /// An error about one option, written `--name: message`.
    init(option: some OptionDeclaration, _ message: String) {
        self.message = "--\(option.spec.name): \(message)"
    }

    var description: String { message }
}

/// A usage error with the usage line of the command it is about; what `CommandLineTool.resolve` throws.
struct UsageError: Error, Sendable, Equatable {
    /// The `error:` line without its prefix.
    var message: String
    /// The full usage line, `usage: sharepipe …`.
    var usage: String
}

// MARK: - Values

/// Turns the text of an option or list item into a typed value, or says what it expected.
struct ValueParser<Value: Sendable>: Sendable {
    /// The value's name in help and errors: `SIZE`, `N`, `MS`, `FILE`.
    var placeholder: String
    /// The accepted words, when the value is a choice; listed in help.
    var choices: [String] = []
    /// Converts the text or throws a `ValidationError` saying what was expected (without the flag's name).
    var convert: @Sendable (String) throws -> Value
}

extension ValueParser where Value == String {
    /// Any text.
    static var string: ValueParser<String> { string(placeholder: "VALUE") }

    /// Any text, shown in help as `placeholder`.
    static func string(placeholder: String) -> ValueParser<String> {
        ValueParser(placeholder: placeholder) { $0 }
    }

    /// A file system path; empty is refused.
    static var path: ValueParser<String> { path(placeholder: "FILE") }

    /// A file system path shown in help as `placeholder` (`FILE`, `DIR`).
    static func path(placeholder: String) -> ValueParser<String> {
        ValueParser(placeholder: placeholder) { text in
            guard !text.isEmpty else { throw ValidationError("expected a path, got an empty string") }
            return text
        }
    }

    /// One of a fixed set of words.
    static func choice(_ words: [String]) -> ValueParser<String> {
        ValueParser(placeholder: words.joined(separator: "|"), choices: words) { text in
            guard words.contains(text) else { throw choiceError(words, text) }
            return text
        }
    }
}

extension ValueParser where Value: RawRepresentable & CaseIterable, Value.RawValue == String {
    /// One case of a string enum, by raw value.
    static func choice(_ type: Value.Type) -> ValueParser<Value> {
        let words = Value.allCases.map(\.rawValue)
        return ValueParser(placeholder: words.joined(separator: "|"), choices: words) { text in
            guard let value = Value(rawValue: text) else { throw choiceError(words, text) }
            return value
        }
    }
}

private func choiceError(_ words: [String], _ text: String) -> ValidationError {
    ValidationError("expected one of \(words.joined(separator: ", ")), got \(text.debugDescription)")
}

extension ValueParser where Value == Int {
    /// A whole number greater than zero (`--workers 4`).
    static var positiveInteger: ValueParser<Int> {
        ValueParser(placeholder: "N") { text in
            guard let value = decimalInteger(text), value > 0 else {
                throw ValidationError("expected a positive integer, got \(text.debugDescription)")
            }
            return value
        }
    }

    /// A whole number, zero allowed.
    static var nonNegativeInteger: ValueParser<Int> {
        ValueParser(placeholder: "N") { text in
            guard let value = decimalInteger(text) else {
                throw ValidationError("expected a whole number, got \(text.debugDescription)")
            }
            return value
        }
    }

    /// A duration in milliseconds: `1500`, `1500ms`, `2s` or `0.5s`.
    static var milliseconds: ValueParser<Int> {
        ValueParser(placeholder: "MS") { text in
            let lower = text.lowercased()
            let value: Int?
            if lower.hasSuffix("ms") {
                value = decimalInteger(String(lower.dropLast(2)))
            } else if lower.hasSuffix("s") {
                value = scaledDecimal(String(lower.dropLast()), by: 1000)
            } else {
                value = decimalInteger(lower)
            }
            guard let value else {
                throw ValidationError("expected milliseconds such as 500, 500ms or 2s, got \(text.debugDescription)")
            }
            return value
        }
    }
}

extension ValueParser where Value == Int64 {
    /// A byte count: `100`, `512K`, `10M`, `1.5G`, `2T` (powers of 1024; `10MB`, `10MiB` and lower case too).
    static var size: ValueParser<Int64> {
        ValueParser(placeholder: "SIZE") { text in
            let failure = ValidationError(
                "expected a size such as 100, 512K, 10M or 1.5G, got \(text.debugDescription)")
            let units: [Character] = ["k", "m", "g", "t"]
            var number = Substring(text.lowercased())
            if number.hasSuffix("ib") {
                number = number.dropLast(2)
                guard let unit = number.last, units.contains(unit) else { throw failure }
            } else if number.hasSuffix("b") {
                number = number.dropLast()
            }
            var multiplier: Int64 = 1
            if let unit = number.last, let exponent = units.firstIndex(of: unit) {
                multiplier = 1 << (10 * (exponent + 1))
                number = number.dropLast()
            }
            guard let value = scaledDecimal(String(number), by: multiplier) else { throw failure }
            return Int64(value)
        }
    }
}

/// Digits only (no sign), within `Int`.
private func decimalInteger(_ text: String) -> Int? {
    guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
        return nil
    }
    return Int(text)
}

/// `digits[.digits]` times `multiplier`, the fraction rounded to the nearest unit; nil on anything else or on
/// overflow.
private func scaledDecimal(_ text: String, by multiplier: Int64) -> Int? {
    let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    guard let whole = decimalInteger(String(parts[0])) else { return nil }
    let (scaled, overflow) = Int64(whole).multipliedReportingOverflow(by: multiplier)
    guard !overflow else { return nil }
    guard parts.count == 2 else { return Int(scaled) }
    guard decimalInteger(String(parts[1])) != nil, let fraction = Double("0." + parts[1]) else { return nil }
    let (total, totalOverflow) = scaled.addingReportingOverflow(Int64((fraction * Double(multiplier)).rounded()))
    return totalOverflow ? nil : Int(total)
}

// MARK: - Declarations

/// What the parser and the help text need to know about one option, whatever its value type.
struct OptionSpec: Sendable {
    /// How an option takes values.
    enum Kind: Sendable {
        /// Present or absent: `--json`.
        case flag
        /// One value; given twice, the last wins: `--policy all-or-nothing`.
        case single
        /// Comma-separated values, repeatable, collected in order: `--accept a,b --accept c`.
        case list
    }

    /// The long name without dashes.
    var name: String
    var kind: Kind
    /// The value's name in help (`SIZE`); empty for a flag.
    var placeholder: String
    /// The accepted words of a choice, for help.
    var choices: [String]
    /// The default as written in help; parsed like a value from the command line.
    var defaultText: String?
    var help: String
    /// Checks one occurrence's text; throws a `ValidationError` without the flag's name.
    var validate: @Sendable (String) throws -> Void
}

extension OptionSpec {
    /// `--name` for a flag, `--name PLACEHOLDER` otherwise.
    var synopsis: String {
        "--\(name)" + (kind == .flag ? "" : " \(placeholder)")
    }

    /// The help text with the choices, list form and default, as `--help` and the man page show it.
    var fullHelp: String {
        var notes: [String] = []
        if !choices.isEmpty { notes.append("one of: " + choices.joined(separator: ", ")) }
        if kind == .list { notes.append("comma-separated, repeatable") }
        if let value = defaultText { notes.append("default: \(value)") }
        return help + (notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))")
    }
}

/// A declared option: `Flag`, `Option` or `ListOption`. Commands list theirs in `options`.
protocol OptionDeclaration: Sendable {
    /// The type-erased description used by the parser and the help text.
    var spec: OptionSpec { get }
}

/// A boolean flag such as `--json`: true when given.
struct Flag: OptionDeclaration {
    let spec: OptionSpec

    init(_ name: String, help: String) {
        spec = OptionSpec(
            name: name, kind: .flag, placeholder: "", choices: [], defaultText: nil, help: help, validate: { _ in })
    }
}

/// An option with one typed value, such as `--max-file-size 10M`. `default` is written as a user would write it;
/// it is what help shows and what the option reads as when not given.
struct Option<Value: Sendable>: OptionDeclaration {
    let spec: OptionSpec
    let parser: ValueParser<Value>

    init(_ name: String, _ parser: ValueParser<Value>, default defaultText: String? = nil, help: String) {
        self.parser = parser
        let convert = parser.convert
        spec = OptionSpec(
            name: name, kind: .single, placeholder: parser.placeholder, choices: parser.choices,
            defaultText: defaultText, help: help, validate: { _ = try convert($0) })
    }
}

/// A comma-separated, repeatable option such as `--accept public.image,public.pdf`; items are parsed one by one.
struct ListOption<Element: Sendable>: OptionDeclaration {
    let spec: OptionSpec
    let parser: ValueParser<Element>

    init(_ name: String, _ parser: ValueParser<Element>, default defaultText: String? = nil, help: String) {
        self.parser = parser
        let convert = parser.convert
        spec = OptionSpec(
            name: name, kind: .list, placeholder: parser.placeholder + ",...", choices: parser.choices,
            defaultText: defaultText, help: help,
            validate: { text in for item in try Self.items(text) { _ = try convert(item) } })
    }

    /// The items of one occurrence: split at commas, trimmed; an empty item is an error.
    static func items(_ text: String) throws -> [String] {
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard !items.contains("") else {
            throw ValidationError("expected a comma-separated list, got an empty item in \(text.debugDescription)")
        }
        return items
    }
}

/// A positional argument, named in upper case in usage and errors.
struct Positional: Sendable {
    /// How many values a positional takes. Only the last positional may be optional or variadic.
    enum Arity: Sendable {
        case one, optional, oneOrMore, zeroOrMore
    }

    var name: String
    var arity: Arity
    var help: String
    /// The accepted words, when the argument is a choice; offered by shell completion.
    var choices: [String]

    init(_ name: String, _ arity: Arity = .one, choices: [String] = [], help: String) {
        self.name = name
        self.arity = arity
        self.choices = choices
        self.help = help
    }

    var usage: String {
        switch arity {
        case .one: name
        case .optional: "[\(name)]"
        case .oneOrMore: "\(name)..."
        case .zeroOrMore: "[\(name)...]"
        }
    }
}

// MARK: - Commands

/// Anything `sharepipe` can dispatch to by name: a `Command` or a `CommandGroup`.
protocol CommandNode: Sendable {
    /// The word on the command line: `share`, `show`.
    static var name: String { get }
    /// One line for the command list.
    static var abstract: String { get }
    /// Left out of help, completions and the man page (tools for packaging, such as `manpage`).
    static var isHidden: Bool { get }
}

extension CommandNode {
    static var isHidden: Bool { false }
}

/// A command word that only selects a subcommand, such as `types` in `sharepipe types show`.
protocol CommandGroup: CommandNode {
    static var subcommands: [any CommandNode.Type] { get }
}

/// One runnable command: it declares its options and positionals, builds itself from the parsed arguments
/// (throwing `ValidationError` for anything the declarations cannot check), and runs.
protocol Command: CommandNode {
    /// Every option the command accepts; `--help` is implied.
    static var options: [any OptionDeclaration] { get }
    /// The positional arguments, in order.
    static var positionals: [Positional] { get }
    /// What follows the command's name in the usage line; generated from the declarations unless given.
    static var usage: String { get }
    /// Paragraphs shown in `--help` after the abstract.
    static var discussion: String { get }

    init(arguments: ParsedArguments) throws
    func run() async throws -> ExitCode
}

extension Command {
    static var positionals: [Positional] { [] }
    static var discussion: String { "" }
    static var usage: String {
        ((options.isEmpty ? [] : ["[options]"]) + positionals.map(\.usage)).joined(separator: " ")
    }
}

// MARK: - Parsed arguments

/// The parsed command line of one command: options by declaration, positionals in order.
struct ParsedArguments: Sendable {
    /// The positional arguments, their count already checked against the command's `positionals`.
    private(set) var positionals: [String]
    /// The raw text of each occurrence, by option name; a given flag has an empty list.
    private var values: [String: [String]]
    private let specs: [String: OptionSpec]

    /// Parses `tokens` (what follows the command's name) against the declarations.
    init(parsing tokens: [String], options: [any OptionDeclaration], positionals declared: [Positional]) throws {
        var specs: [String: OptionSpec] = [:]
        for option in options { specs[option.spec.name] = option.spec }
        self.specs = specs
        values = [:]
        positionals = []
        var index = tokens.startIndex
        var onlyPositionals = false
        while index < tokens.endIndex {
            let token = tokens[index]
            index += 1
            if onlyPositionals || token == "-" || !token.hasPrefix("-") {
                positionals.append(token)
                continue
            }
            if token == "--" {
                onlyPositionals = true
                continue
            }
            let body = token.hasPrefix("--") ? token.dropFirst(2) : token.dropFirst()
            let name = String(body.prefix(while: { $0 != "=" }))
            let inline = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
            guard token.hasPrefix("--"), let spec = specs[name] else {
                throw ValidationError("unknown option \(token.prefix(while: { $0 != "=" }))" + suggestion(name))
            }
            guard spec.kind != .flag else {
                guard inline == nil else { throw ValidationError("--\(name): takes no value") }
                values[name] = []
                continue
            }
            let text: String
            if let inline {
                text = inline
            } else if index < tokens.endIndex, !tokens[index].hasPrefix("--") {
                text = tokens[index]
                index += 1
            } else {
                throw ValidationError("--\(name): missing value (expected \(spec.placeholder))")
            }
            try Self.check(text, against: spec, origin: "--\(name)")
            values[name] = (spec.kind == .list ? values[name, default: []] : []) + [text]
        }
        try Self.checkCount(positionals, against: declared)
    }

    private func suggestion(_ name: String) -> String {
        let nearest = specs.keys.map { ($0, editDistance($0, name)) }.min { ($0.1, $0.0) < ($1.1, $1.0) }
        guard let nearest, nearest.1 <= max(2, name.count / 3) else { return "" }
        return " (did you mean --\(nearest.0)?)"
    }

    private static func check(_ text: String, against spec: OptionSpec, origin: String) throws {
        do {
            try spec.validate(text)
        } catch let error as ValidationError {
            throw ValidationError("\(origin): \(error.message)")
        }
    }

    private static func checkCount(_ given: [String], against declared: [Positional]) throws {
        var remaining = given[...]
        for positional in declared {
            switch positional.arity {
            case .one, .oneOrMore:
                guard !remaining.isEmpty else { throw ValidationError("missing \(positional.name)") }
                remaining = positional.arity == .one ? remaining.dropFirst() : []
            case .optional:
                remaining = remaining.dropFirst()
            case .zeroOrMore:
                remaining = []
            }
        }
        if let extra = remaining.first { throw ValidationError("unexpected argument \(extra.debugDescription)") }
    }

    /// Whether the flag was given.
    subscript(flag: Flag) -> Bool {
        values[flag.spec.name] != nil
    }

    /// The option's value: as given, else its default, else nil.
    subscript<Value>(option: Option<Value>) -> Value? {
        guard let text = values[option.spec.name]?.last ?? option.spec.defaultText else { return nil }
        return Self.checked(option.spec, text) { try option.parser.convert(text) }
    }

    /// Every item of every occurrence, in order; the default's items when not given.
    subscript<Element>(option: ListOption<Element>) -> [Element] {
        let texts = values[option.spec.name] ?? option.spec.defaultText.map { [$0] } ?? []
        return texts.flatMap { text in
            Self.checked(option.spec, text) { try ListOption<Element>.items(text).map(option.parser.convert) }
        }
    }

    /// The option's value, or a usage error naming it when it has none.
    func required<Value>(_ option: Option<Value>) throws -> Value {
        guard let value = self[option] else { throw ValidationError(option: option, "required") }
        return value
    }

    /// Whether the option was given (rather than defaulted).
    func isSpecified(_ option: some OptionDeclaration) -> Bool {
        values[option.spec.name] != nil
    }

    /// Adds values from a configuration file for options not given on the command line, which always win.
    /// Keys are long option names; a flag takes `"true"` or `"false"`. Errors name `origin` and the key.
    func addingFallbacks(_ fallbacks: [String: [String]], origin: String) throws -> ParsedArguments {
        var result = self
        for (name, texts) in fallbacks.sorted(by: { $0.key < $1.key }) {
            guard let spec = specs[name] else {
                throw ValidationError("\(origin): unknown option \(name.debugDescription)" + suggestion(name))
            }
            guard values[name] == nil else { continue }
            if spec.kind == .flag {
                guard texts.count == 1, let on = Bool(texts[0]) else {
                    throw ValidationError("\(origin): \(name): expected true or false")
                }
                if on { result.values[name] = [] }
                continue
            }
            guard spec.kind == .list || texts.count == 1 else {
                throw ValidationError("\(origin): \(name): expected one value, got \(texts.count)")
            }
            for text in texts { try Self.check(text, against: spec, origin: "\(origin): \(name)") }
            result.values[name] = texts
        }
        return result
    }

    /// Converts text that was checked while parsing (or a declaration's default) without a `try` at every read.
    private static func checked<Value>(_ spec: OptionSpec, _ text: String, _ convert: () throws -> Value) -> Value {
        do {
            return try convert()
        } catch {
            // Given values were checked while parsing, so only a declaration's own default can get here.
            preconditionFailure("--\(spec.name): default \(text.debugDescription) does not parse: \(error)")
        }
    }
}

/// Levenshtein distance, for "did you mean" hints.
private func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    var previous = Array(0...b.count)
    for (i, left) in a.enumerated() {
        var current = [i + 1]
        for (j, right) in b.enumerated() {
            current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (left == right ? 0 : 1)))
        }
        previous = current
    }
    return previous[b.count]
}

// MARK: - Dispatch and help

/// The whole command line: resolves the command words, handles `help`, `--help` and `--version`, runs the
/// command and maps what it throws to an exit status.
struct CommandLineTool: Sendable {
    /// What `resolve` found to do.
    enum Invocation {
        /// Print this text on stdout and exit 0 (help, version).
        case text(String)
        /// Print this help on stderr and exit 2: no command, or a command group without its subcommand.
        case usage(String)
        /// Run this command; `usage` is its usage line, for errors thrown while it runs.
        case run(any Command, usage: String)
    }

    var name: String
    var version: String
    var abstract: String
    var commands: [any CommandNode.Type]

    /// The code a usage error carries in `--json` output; the SPEC's ERR_* codes are all about shares and files.
    static let usageErrorCode = "ERR_USAGE"

    /// Runs the command line (without the program name) and returns the exit status. Errors go to stderr; when
    /// `--json` was given they are also printed on stdout as `{"error": {"code", "message"}}`.
    func run(_ arguments: [String]) async -> Int32 {
        let json = arguments.prefix { $0 != "--" }.contains("--json")
        let invocation: Invocation
        do {
            invocation = try resolve(arguments)
        } catch let error as UsageError {
            return usageFailure(error.message, usage: error.usage, json: json)
        } catch {
            return failure(error, json: json)
        }
        switch invocation {
        case .text(let text):
            Output.write(text, to: .standardOutput)
            return ExitCode.success.rawValue
        case .usage(let text):
            Output.write(text, to: .standardError)
            return ExitCode.usage.rawValue
        case .run(let command, let usage):
            do {
                return try await command.run().rawValue
            } catch let error as ValidationError {
                return usageFailure(error.message, usage: usage, json: json)
            } catch {
                return failure(error, json: json)
            }
        }
    }

    /// Anything but a usage error: `error: ERR_CODE: message`, exit 1; an error that is not a `ShareError` is
    /// reported as ERR_IO, the SPEC's code for any other failure.
    private func failure(_ error: any Error, json: Bool) -> Int32 {
        let shareError = error as? ShareError ?? ShareError(.io, "\(error)")
        Output.printError("\(shareError.code.rawValue): \(shareError.message)")
        if json { Output.printJSONError(code: shareError.code.rawValue, message: shareError.message) }
        return ExitCode.failure.rawValue
    }

    private func usageFailure(_ message: String, usage: String, json: Bool) -> Int32 {
        Output.printError(message)
        Output.write(usage + "\n", to: .standardError)
        if json { Output.printJSONError(code: Self.usageErrorCode, message: message) }
        return ExitCode.usage.rawValue
    }

    /// Finds what to do, parsing the command's options; throws `UsageError` for any mistake.
    func resolve(_ arguments: [String]) throws -> Invocation {
        var tokens = arguments[...]
        switch tokens.first {
        case nil:
            return .usage(help(for: nil, path: []))
        case "--help", "-h":
            return .text(help(for: nil, path: []))
        case "--version":
            return .text("\(name) \(version)\n")
        case "help":
            var path: [String] = []
            var level = commands
            var node: (any CommandNode.Type)?
            for word in tokens.dropFirst() {
                guard let found = level.first(where: { $0.name == word }) else {
                    throw UsageError(
                        message: "unknown command \((path + [word]).joined(separator: " ").debugDescription)",
                        usage: usageLine(for: node, path: path))
                }
                path.append(word)
                node = found
                level = (found as? any CommandGroup.Type)?.subcommands ?? []
            }
            return .text(help(for: node, path: path))
        default:
            break
        }
        var path: [String] = []
        var level = commands
        var group: (any CommandGroup.Type)?
        while let word = tokens.first {
            if word == "--help" || word == "-h" { return .text(help(for: group, path: path)) }
            guard let node = level.first(where: { $0.name == word }) else {
                let known = level.filter { !$0.isHidden }.map { $0.name }.joined(separator: ", ")
                let what = word.hasPrefix("-")
                    ? "unknown option \(word)" : "unknown command \(word.debugDescription); expected one of \(known)"
                throw UsageError(
                    message: (path.isEmpty ? "" : path.joined(separator: " ") + ": ") + what,
                    usage: usageLine(for: group, path: path))
            }
            tokens = tokens.dropFirst()
            path.append(word)
            if let command = node as? any Command.Type {
                let usage = usageLine(for: command, path: path)
                if tokens.prefix(while: { $0 != "--" }).contains(where: { $0 == "--help" || $0 == "-h" }) {
                    return .text(help(for: command, path: path))
                }
                do {
                    let parsed = try ParsedArguments(
                        parsing: Array(tokens), options: command.options, positionals: command.positionals)
                    return .run(try command.init(arguments: parsed), usage: usage)
                } catch let error as ValidationError {
                    throw UsageError(message: error.message, usage: usage)
                }
            }
            group = node as? any CommandGroup.Type
            level = group?.subcommands ?? []
        }
        return .usage(help(for: group, path: path))
    }

    private func usageLine(for node: (any CommandNode.Type)?, path: [String]) -> String {
        let words = ([name] + path).joined(separator: " ")
        if let command = node as? any Command.Type {
            return "usage: \(words)" + (command.usage.isEmpty ? "" : " \(command.usage)")
        }
        return "usage: \(words) COMMAND [options]"
    }

    /// The help text of a command, a group (its subcommands) or, for nil, the whole tool.
    func help(for node: (any CommandNode.Type)?, path: [String]) -> String {
        var text = usageLine(for: node, path: path) + "\n\n" + (node?.abstract ?? abstract) + "\n"
        guard let command = node as? any Command.Type else {
            // The whole tool's help lists every runnable command, groups spelled out: `types show`.
            func rows(_ level: [any CommandNode.Type], prefix: String) -> [(String, String)] {
                level.filter { !$0.isHidden }.flatMap { entry -> [(String, String)] in
                    guard node == nil, let group = entry as? any CommandGroup.Type else {
                        return [(prefix + entry.name, entry.abstract)]
                    }
                    return rows(group.subcommands, prefix: prefix + entry.name + " ")
                }
            }
            var rows = rows((node as? any CommandGroup.Type)?.subcommands ?? commands, prefix: "")
            if node == nil { rows.append(("help [COMMAND]", "Show help for a command.")) }
            text += "\ncommands:\n" + Self.columns(rows)
            var options = [("-h, --help", "Show this help.")]
            if node == nil { options.append(("--version", "Print the version (\(version)).")) }
            text += "\noptions:\n" + Self.columns(options)
            text += "\nRun \"\(([name] + path).joined(separator: " ")) COMMAND --help\" for a command's options.\n"
            return text
        }
        if !command.discussion.isEmpty { text += "\n" + command.discussion + "\n" }
        if !command.positionals.isEmpty {
            text += "\narguments:\n" + Self.columns(command.positionals.map { ($0.name, $0.help) })
        }
        let rows = command.options.map(\.spec).map { spec in (spec.synopsis, spec.fullHelp) }
        text += "\noptions:\n" + Self.columns(rows + [("-h, --help", "Show this help.")])
        return text
    }

    /// Two aligned columns; a long left cell puts its text on the next line.
    private static func columns(_ rows: [(String, String)]) -> String {
        let width = min(28, (rows.map(\.0.count).max() ?? 0) + 2)
        return rows.map { left, right in
            let pad = left.count + 2 > width
                ? "\n" + String(repeating: " ", count: width + 2)
                : String(repeating: " ", count: width - left.count)
            return "  " + left + pad + right + "\n"
        }.joined()
    }
}
