import SharepipeCore

/// Options several commands share, declared once so that help and parsing agree everywhere.
enum CommonOptions {
    /// `--json`: machine-readable output on stdout.
    static let json = Flag("json", help: "Print machine-readable JSON on stdout.")
    /// `--types FILE`: user type declarations, read with `loadTypeRegistry(_:)`.
    static let types = Option(
        "types", .path, help: "Add type declarations from an Info.plist (XML or binary) or a JSON file.")
}

/// The registry a command works with: the built-in types plus the declarations in `--types FILE` when given.
/// A file that cannot be read or declares bad types is a usage error naming `--types`.
func loadTypeRegistry(_ arguments: ParsedArguments) throws -> TypeRegistry {
    guard let path = arguments[CommonOptions.types] else { return .standard }
    do {
        return try TypeRegistry(contentsOfFile: path)
    } catch let error as TypeDeclarationError {
        throw ValidationError(option: CommonOptions.types, error.message)
    } catch {
        throw ValidationError(option: CommonOptions.types, "\(error)")
    }
}

/// `sharepipe types …`: the type registry from the command line.
struct TypesCommand: CommandGroup {
    static let name = "types"
    static let abstract = "Look up type identifiers, their conformance and tags; sniff a file's type."
    static let subcommands: [any CommandNode.Type] = [
        TypesShowCommand.self, TypesConformsCommand.self, TypesForExtensionCommand.self,
        TypesForMIMECommand.self, TypesSniffCommand.self,
    ]
}

/// `sharepipe types show TYPE`: everything the registry knows about one type.
struct TypesShowCommand: Command {
    static let name = "show"
    static let abstract = "Print a type's description, parents, every supertype and its tags."
    static let options: [any OptionDeclaration] = [CommonOptions.json, CommonOptions.types]
    static let positionals = [Positional("TYPE", help: "A type identifier, such as public.jpeg or dyn.ext.xyz.")]

    /// The JSON shape: every key always present, `tag` null unless the type is dynamic.
    struct Report: Encodable {
        struct Tag: Encodable {
            var `class`: String
            var value: String
        }

        var identifier: String
        var description: String
        var parents: [String]
        var supertypes: [String]
        var filenameExtensions: [String]
        var mimeTypes: [String]
        var dynamic: Bool
        var tag: Tag?

        enum CodingKeys: String, CodingKey {
            case identifier, description, parents, supertypes, filenameExtensions, mimeTypes, dynamic, tag
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(identifier, forKey: .identifier)
            try container.encode(description, forKey: .description)
            try container.encode(parents, forKey: .parents)
            try container.encode(supertypes, forKey: .supertypes)
            try container.encode(filenameExtensions, forKey: .filenameExtensions)
            try container.encode(mimeTypes, forKey: .mimeTypes)
            try container.encode(dynamic, forKey: .dynamic)
            try container.encode(tag, forKey: .tag)
        }
    }

    let type: String
    let json: Bool
    let registry: TypeRegistry

    init(arguments: ParsedArguments) throws {
        type = arguments.positionals[0]
        json = arguments[CommonOptions.json]
        registry = try loadTypeRegistry(arguments)
    }

    func run() throws -> ExitCode {
        guard let report = report() else {
            throw ShareError(.notFound, "unknown type identifier \(type.debugDescription)")
        }
        if json {
            try Output.printJSON(report)
            return .success
        }
        func list(_ items: [String]) -> String { items.isEmpty ? "(none)" : items.joined(separator: ", ") }
        var rows = [
            ["description", report.description], ["parents", list(report.parents)],
            ["supertypes", list(report.supertypes)], ["extensions", list(report.filenameExtensions)],
            ["MIME types", list(report.mimeTypes)],
        ]
        if let tag = report.tag { rows.append(["tag", "\(tag.class) \(tag.value)"]) }
        Output.line(Output.styled(report.identifier, .bold, for: .standardOutput))
        Output.write(Output.table(rows).split(separator: "\n").map { "  \($0)\n" }.joined())
        return .success
    }

    private func report() -> Report? {
        if let declaration = registry.declaration(for: type) {
            return Report(
                identifier: declaration.identifier, description: declaration.description,
                parents: declaration.conformsTo, supertypes: registry.supertypes(of: declaration.identifier),
                filenameExtensions: declaration.filenameExtensions, mimeTypes: declaration.mimeTypes,
                dynamic: false, tag: nil)
        }
        guard let (tagClass, value) = TypeRegistry.tag(ofDynamic: type) else { return nil }
        let isExtension = tagClass == .filenameExtension
        return Report(
            identifier: TypeRegistry.dynamicIdentifier(tagClass, value),
            description: "dynamic type for the \(isExtension ? "filename extension" : "MIME type") \"\(value)\"",
            parents: ["public.data"], supertypes: registry.supertypes(of: type),
            filenameExtensions: isExtension ? [value] : [], mimeTypes: isExtension ? [] : [value],
            dynamic: true, tag: Report.Tag(class: tagClass.rawValue, value: value))
    }
}

/// `sharepipe types conforms TYPE SUPERTYPE`: exit 0 when it conforms, 1 when not.
struct TypesConformsCommand: Command {
    static let name = "conforms"
    static let abstract = "Exit 0 when TYPE conforms to SUPERTYPE, 1 when it does not."
    static let options: [any OptionDeclaration] = [CommonOptions.json, CommonOptions.types]
    static let positionals = [
        Positional("TYPE", help: "The type to test, such as public.jpeg."),
        Positional("SUPERTYPE", help: "The type it should conform to, such as public.image."),
    ]

    /// The JSON shape.
    struct Report: Encodable {
        var type: String
        var supertype: String
        var conforms: Bool
    }

    let type: String
    let supertype: String
    let json: Bool
    let registry: TypeRegistry

    init(arguments: ParsedArguments) throws {
        type = arguments.positionals[0]
        supertype = arguments.positionals[1]
        json = arguments[CommonOptions.json]
        registry = try loadTypeRegistry(arguments)
    }

    func run() throws -> ExitCode {
        for identifier in [type, supertype] where !isKnown(identifier) {
            Output.printWarning("\(identifier.debugDescription) is not a declared type identifier")
        }
        let conforms = registry.conforms(type, to: supertype)
        if json {
            try Output.printJSON(Report(type: type, supertype: supertype, conforms: conforms))
        } else {
            Output.line("\(type) \(conforms ? "conforms" : "does not conform") to \(supertype)")
        }
        return conforms ? .success : .failure
    }

    private func isKnown(_ identifier: String) -> Bool {
        registry.declaration(for: identifier) != nil || TypeRegistry.tag(ofDynamic: identifier) != nil
    }
}

/// The JSON shape of `for-extension`, `for-mime` and `sniff`: the tag looked up and the type it maps to.
private struct TagLookup: Encodable {
    var tagKey: String
    var tag: String
    var identifier: String
    var dynamic: Bool

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(tag, forKey: Key(stringValue: tagKey))
        try container.encode(identifier, forKey: Key(stringValue: "identifier"))
        try container.encode(dynamic, forKey: Key(stringValue: "dynamic"))
    }
}

private let conformingTo = Option(
    "conforming-to", .string(placeholder: "TYPE"), help: "Consider only types that conform to TYPE.")

/// A kind of tag that `types for-…` looks a type up by.
enum TypeTagKind: Sendable {
    case filenameExtension, mimeType

    var command: String {
        switch self {
        case .filenameExtension: "for-extension"
        case .mimeType: "for-mime"
        }
    }

    var abstract: String {
        "Print the type identifier for a " + (self == .filenameExtension ? "filename extension." : "MIME type.")
    }

    var positional: Positional {
        switch self {
        case .filenameExtension: Positional("EXT", help: "A filename extension, with or without the dot: jpg, .pdf.")
        case .mimeType: Positional("MIME", help: "A MIME type such as image/png; parameters are ignored.")
        }
    }

    /// The tag's key in the JSON output.
    var jsonKey: String { self == .filenameExtension ? "extension" : "mimeType" }

    /// The tag as given on the command line, checked and in the registry's form; a usage error otherwise.
    func tag(_ text: String) throws -> String {
        switch self {
        case .filenameExtension:
            let tag = text.hasPrefix(".") ? String(text.dropFirst()) : text
            guard !tag.isEmpty else {
                throw ValidationError("EXT: expected a filename extension, got \(text.debugDescription)")
            }
            return tag
        case .mimeType:
            guard text.contains("/") else {
                throw ValidationError("MIME: expected a MIME type such as image/png, got \(text.debugDescription)")
            }
            return text
        }
    }

    /// The type the registry maps `tag` to, among those conforming to `supertype` when given.
    func type(for tag: String, in registry: TypeRegistry, conformingTo supertype: String?) -> String {
        switch self {
        case .filenameExtension: registry.type(forFilenameExtension: tag, conformingTo: supertype)
        case .mimeType: registry.type(forMIMEType: tag, conformingTo: supertype)
        }
    }
}

/// `sharepipe types for-extension EXT` and `sharepipe types for-mime MIME`: the type for a tag, one command over
/// the kind of tag.
protocol TypesForTagCommand: Command {
    static var kind: TypeTagKind { get }
    init(tag: String, supertype: String?, json: Bool, registry: TypeRegistry)
    var tag: String { get }
    var supertype: String? { get }
    var json: Bool { get }
    var registry: TypeRegistry { get }
}

extension TypesForTagCommand {
    static var name: String { kind.command }
    static var abstract: String { kind.abstract }
    static var options: [any OptionDeclaration] { [CommonOptions.json, CommonOptions.types, conformingTo] }
    static var positionals: [Positional] { [kind.positional] }

    init(arguments: ParsedArguments) throws {
        self.init(
            tag: try Self.kind.tag(arguments.positionals[0]), supertype: arguments[conformingTo],
            json: arguments[CommonOptions.json], registry: try loadTypeRegistry(arguments))
    }

    func run() throws -> ExitCode {
        let identifier = Self.kind.type(for: tag, in: registry, conformingTo: supertype)
        let lookup = TagLookup(
            tagKey: Self.kind.jsonKey, tag: tag, identifier: identifier, dynamic: registry.isDynamic(identifier))
        try json ? Output.printJSON(lookup) : Output.line(identifier)
        return .success
    }
}

/// `sharepipe types for-extension EXT`: the type for a filename extension.
struct TypesForExtensionCommand: TypesForTagCommand {
    static let kind = TypeTagKind.filenameExtension
    let tag: String, supertype: String?, json: Bool, registry: TypeRegistry
}

/// `sharepipe types for-mime MIME`: the type for a MIME type.
struct TypesForMIMECommand: TypesForTagCommand {
    static let kind = TypeTagKind.mimeType
    let tag: String, supertype: String?, json: Bool, registry: TypeRegistry
}

/// `sharepipe types sniff FILE`: what libmagic says the content is, and the type that maps to.
struct TypesSniffCommand: Command {
    static let name = "sniff"
    static let abstract = "Sniff a file's content with libmagic; print its MIME type and type identifier."
    static let options: [any OptionDeclaration] = [CommonOptions.json, CommonOptions.types]
    static let positionals = [Positional("FILE", help: "A regular file; symlinks are not followed.")]
    static let discussion = "Only a regular file is read; a symlink, FIFO, socket, device or directory fails with "
        + "ERR_NOT_REGULAR_FILE (exit 1)."

    let path: String
    let json: Bool
    let registry: TypeRegistry

    init(arguments: ParsedArguments) throws {
        path = arguments.positionals[0]
        json = arguments[CommonOptions.json]
        registry = try loadTypeRegistry(arguments)
    }

    func run() throws -> ExitCode {
        let sniffed = try TypeSniffer.sniff(path: path, registry: registry)
        let dynamic = registry.isDynamic(sniffed.typeIdentifier)
        if json {
            try Output.printJSON(TagLookup(
                tagKey: "mimeType", tag: sniffed.mimeType, identifier: sniffed.typeIdentifier, dynamic: dynamic))
        } else {
            Output.write(Output.table([["MIME type", sniffed.mimeType], ["type", sniffed.typeIdentifier]]))
        }
        return .success
    }
}
