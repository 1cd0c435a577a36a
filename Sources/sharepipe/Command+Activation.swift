import Foundation
import SharepipeCore
import SharepipeScenario

/// `sharepipe activation …`: a share extension's `NSExtensionActivationRule`, from the command line.
struct ActivationCommand: CommandGroup {
    static let name = "activation"
    static let abstract = "Evaluate a share extension's NSExtensionActivationRule against a share."
    static let subcommands: [any CommandNode.Type] = [ActivationCheckCommand.self]
}

/// `sharepipe activation check`: would an extension with this rule appear for this share? Exit 0 yes, 1 no.
struct ActivationCheckCommand: Command {
    static let name = "check"
    static let abstract = "Exit 0 when the extension would appear for the share, 1 when not; print the deciding clause."
    static let rule = Option(
        "rule", .string(placeholder: "FILE|STRING"),
        help: "The activation rule: an Info.plist (XML or binary), a JSON file, inline JSON or a predicate.")
    static let scenario = Option(
        "scenario", .path,
        help: "Take the attachments and their declared types from a share scenario (as for `share --scenario`).")
    static let options: [any OptionDeclaration] = [rule, scenario, CommonOptions.types, CommonOptions.json]
    static let positionals = [
        Positional(
            "ATTACHMENT", .zeroOrMore,
            help: "PATH (types from its extension and content), PATH=TYPE,... or =TYPE,... (declared types only).")
    ]
    static let usage = "--rule FILE|STRING [--scenario FILE | ATTACHMENT...] [--types FILE] [--json]"
    static let discussion = """
        Each attachment is the list of its registered type identifiers, highest fidelity first. PATH=TYPE,... and \
        =TYPE,... give them; a bare PATH takes them from the file's extension and its sniffed content. An argument \
        that names an existing file is always a PATH, even when it contains "=". No attachments is an empty share.
        Exit status: 0 activated, 1 not activated, 2 for a malformed rule (with the position in a predicate) or any \
        other usage error.
        """

    /// The JSON shape.
    struct Report: Encodable {
        var activated: Bool
        var reason: String
        var attachments: [[String]]
    }

    /// One attachment as given on the command line.
    enum AttachmentArgument {
        /// A file whose types are derived from its extension and content.
        case file(String)
        /// Declared types, from `PATH=TYPE,...` or `=TYPE,...`.
        case declared([String])
    }

    let activationRule: ActivationRule
    let attachments: [AttachmentArgument]
    let scenarioPath: String?
    let json: Bool
    let registry: TypeRegistry

    init(arguments: ParsedArguments) throws {
        let ruleText = try arguments.required(Self.rule)
        scenarioPath = arguments[Self.scenario]
        if scenarioPath != nil, !arguments.positionals.isEmpty {
            throw ValidationError(option: Self.scenario, "give either --scenario or ATTACHMENT arguments, not both")
        }
        attachments = try arguments.positionals.map(Self.attachment)
        json = arguments[CommonOptions.json]
        registry = try loadTypeRegistry(arguments)
        activationRule = try Self.loadRule(ruleText)
    }

    func run() throws -> ExitCode {
        let share: [[String]]
        if let scenarioPath {
            share = try Self.scenarioTypes(atPath: scenarioPath)
        } else {
            share = try attachments.map(types)
        }
        warnAboutUndeclaredTypes(share)
        let result = activationRule.evaluate(share, registry: registry)
        if json {
            try Output.printJSON(Report(activated: result.activated, reason: result.reason, attachments: share))
        } else {
            Output.line(result.description)
        }
        return result.activated ? .success : .failure
    }

    /// Reads the rule; anything wrong with it is a usage error naming `--rule`.
    static func loadRule(_ text: String) throws -> ActivationRule {
        do {
            return try ActivationRule.load(from: text)
        } catch let error as ActivationRuleError {
            throw ValidationError(option: rule, describe(error) + excerpt(of: text, at: error.position))
        } catch let error as ShareError {
            throw ValidationError(option: rule, "\(error.code.rawValue): \(error.message)")
        }
    }

    /// Every error inside a predicate reads `position N: expected E`, an unsupported construct included:
    /// `position 51: expected one of == != < <= > >= (unsupported operator ~=)`.
    static func describe(_ error: ActivationRuleError) -> String {
        guard error.position >= 0, !error.message.hasPrefix("position ") else { return error.message }
        let detail = error.message.replacingOccurrences(of: " at position \(error.position)", with: "")
        return "position \(error.position): expected \(error.expected) (\(detail))"
    }

    /// For an inline predicate, its line with a caret under `position`: the position counts `Character`s of the
    /// whole text. Empty for a rule file, inline JSON or an error without a position.
    static func excerpt(of text: String, at position: Int) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard position >= 0, !trimmed.hasPrefix("{"), !pathExists(text) else { return "" }
        let characters = Array(text)
        guard position <= characters.count else { return "" }
        let lineStart = characters[..<position].lastIndex(where: \.isNewline).map { $0 + 1 } ?? 0
        let lineEnd = characters[position...].firstIndex(where: \.isNewline) ?? characters.count
        let line = String(characters[lineStart..<lineEnd])
        return "\n  " + line + "\n  " + String(repeating: " ", count: position - lineStart) + "^"
    }

    /// Parses `PATH`, `PATH=TYPE,...` or `=TYPE,...`. An argument naming an existing file is a path whatever it
    /// contains; otherwise the types follow the last `=`, since type identifiers never contain one.
    static func attachment(_ argument: String) throws -> AttachmentArgument {
        guard !pathExists(argument), let equals = argument.lastIndex(of: "=") else {
            guard !argument.isEmpty else { throw ValidationError("ATTACHMENT: expected PATH or PATH=TYPE,...") }
            return .file(argument)
        }
        let list = String(argument[argument.index(after: equals)...])
        guard !list.isEmpty else {
            throw ValidationError(
                "ATTACHMENT \(argument.debugDescription): expected type identifiers after \"=\", such as "
                    + "=public.heic,public.jpeg")
        }
        do {
            return .declared(try ListOption<String>.items(list))
        } catch let error as ValidationError {
            throw ValidationError("ATTACHMENT \(argument.debugDescription): \(error.message)")
        }
    }

    /// The registered types of one attachment; a bare path must name a regular file, sniffed without following
    /// symlinks.
    private func types(_ attachment: AttachmentArgument) throws -> [String] {
        switch attachment {
        case .declared(let types):
            return types
        case .file(let path):
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
            guard let attributes else {
                throw ValidationError(
                    "ATTACHMENT \(path.debugDescription): no such file; to give its types without a file, write "
                        + "=TYPE,...")
            }
            guard attributes[.type] as? FileAttributeType == .typeRegular else {
                throw ValidationError(
                    "ATTACHMENT \(path.debugDescription): not a regular file; give its types as PATH=TYPE,...")
            }
            return FileItemProvider(path: path, registry: registry).registeredTypeIdentifiers
        }
    }

    /// A typo in a type identifier silently changes the answer, so undeclared identifiers are pointed out.
    private func warnAboutUndeclaredTypes(_ share: [[String]]) {
        for (index, types) in share.enumerated() {
            for type in types
            where registry.declaration(for: type) == nil && TypeRegistry.tag(ofDynamic: type) == nil {
                Output.printWarning("attachment \(index): \(type.debugDescription) is not a declared type identifier")
            }
        }
    }

    /// The declared types of each scenario attachment, `attachments[].representations[].type` in order; the
    /// scenario is checked as `share --scenario` checks it, and its errors name `--scenario` and the key.
    private static func scenarioTypes(atPath path: String) throws -> [[String]] {
        do {
            return try Scenario.load(path: path).attachments.map { $0.representations.map(\.type) }
        } catch let error as ScenarioError {
            throw ValidationError(option: scenario, error.message)
        }
    }

    /// Whether anything (a symlink included) is at `path`.
    private static func pathExists(_ path: String) -> Bool {
        !path.isEmpty && (try? FileManager.default.attributesOfItem(atPath: path)) != nil
    }
}
