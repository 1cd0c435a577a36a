#if os(Linux)
import Foundation
import SharepipeCore

/// A class of tags that map to type identifiers, as in Apple's `UniformTypeIdentifiers`.
public struct UTTagClass: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The tag class's identifier, such as `public.filename-extension`.
    public let rawValue: String

    /// A tag class with this identifier.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Filename extensions without the dot, such as `jpg`.
    public static let filenameExtension = UTTagClass(rawValue: "public.filename-extension")
    /// MIME types, such as `image/jpeg`.
    public static let mimeType = UTTagClass(rawValue: "public.mime-type")

    /// The identifier.
    public var description: String { rawValue }
}

/// A uniform type identifier under Apple's name, backed by sharepipe's built-in ``TypeRegistry``.
///
/// Two values are equal when their identifiers are (identifiers compare case-insensitively: every value holds the
/// registry's spelling, or the lowercase spelling of a dynamic identifier).
public struct UTType: Hashable, Sendable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The registry every `UTType` is looked up in: sharepipe's built-in declarations of Apple's system types.
    static let registry = TypeRegistry.standard

    /// The type's identifier, such as `public.jpeg`.
    public let identifier: String

    init(canonical identifier: String) {
        self.identifier = identifier
    }

    /// The type for an identifier: a declared one (case-insensitive) or a dynamic one sharepipe can decode;
    /// `nil` for any other identifier.
    public init?(_ identifier: String) {
        if let declaration = Self.registry.declaration(for: identifier) {
            self.init(canonical: declaration.identifier)
        } else if let (tagClass, tag) = TypeRegistry.tag(ofDynamic: identifier) {
            self.init(canonical: TypeRegistry.dynamicIdentifier(tagClass, tag))
        } else {
            return nil
        }
    }

    /// The preferred type for a tag that conforms to `supertype` (any type when `nil`): a declared type, or a dynamic
    /// type when none is declared and `supertype` admits one; `nil` for an empty tag or when no type fits.
    public init?(tag: String, tagClass: UTTagClass, conformingTo supertype: UTType?) {
        guard let found = Self.types(tag: tag, tagClass: tagClass, conformingTo: supertype).first else { return nil }
        self = found
    }

    /// The preferred type for a filename extension (without the dot) that conforms to `supertype`; a dynamic type
    /// for an unknown extension when `supertype` is `.data` or `.item`; `nil` when no type fits.
    public init?(filenameExtension: String, conformingTo supertype: UTType = .data) {
        self.init(tag: filenameExtension, tagClass: .filenameExtension, conformingTo: supertype)
    }

    /// The preferred type for a MIME type (parameters ignored) that conforms to `supertype`; a dynamic type for an
    /// unknown MIME type when `supertype` is `.data` or `.item`; `nil` when no type fits.
    public init?(mimeType: String, conformingTo supertype: UTType = .data) {
        self.init(tag: mimeType, tagClass: .mimeType, conformingTo: supertype)
    }

    /// Every declared type with this tag that conforms to `supertype`, preferred first; a dynamic type when none is
    /// declared and `supertype` admits one; empty for an empty tag or an unknown tag class.
    public static func types(tag: String, tagClass: UTTagClass, conformingTo supertype: UTType?) -> [UTType] {
        let trimmed = tag.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return [] }
        let preferred: String
        let matches: (TypeDeclaration) -> Bool
        switch tagClass {
        case .filenameExtension:
            guard !trimmed.contains("/") else { return [] }
            let key = trimmed.lowercased()
            preferred = registry.type(forFilenameExtension: key, conformingTo: supertype?.identifier)
            matches = { $0.filenameExtensions.contains { $0.lowercased() == key } }
        case .mimeType:
            let key = (trimmed.split(separator: ";", maxSplits: 1).first.map(String.init) ?? trimmed)
                .trimmingCharacters(in: .whitespaces).lowercased()
            guard !key.isEmpty else { return [] }
            preferred = registry.type(forMIMEType: key, conformingTo: supertype?.identifier)
            matches = { $0.mimeTypes.contains { $0.lowercased() == key } }
        default:
            return []
        }
        var found = registry.allDeclarations.filter { declaration in
            matches(declaration)
                && (supertype.map { registry.conforms(declaration.identifier, to: $0.identifier) } ?? true)
        }.map { UTType(canonical: $0.identifier) }
        if let index = found.firstIndex(where: { $0.identifier == preferred }), index > 0 {
            found.insert(found.remove(at: index), at: 0)
        }
        if found.isEmpty, registry.isDynamic(preferred) {
            let dynamic = UTType(canonical: preferred)
            if supertype.map({ dynamic.conforms(to: $0) }) ?? true { found.append(dynamic) }
        }
        return found
    }

    /// The preferred filename extension, without the dot; a dynamic extension type gives back its tag.
    public var preferredFilenameExtension: String? { Self.registry.preferredFilenameExtension(for: identifier) }

    /// The preferred MIME type; a dynamic MIME type gives back its tag.
    public var preferredMIMEType: String? { Self.registry.preferredMIMEType(for: identifier) }

    /// The registry's description of the type (English), or nil for a dynamic type.
    public var localizedDescription: String? {
        Self.registry.declaration(for: identifier).map(\.description)
    }

    /// Every tag of the type, by tag class (empty classes left out).
    public var tags: [UTTagClass: [String]] {
        var tags: [UTTagClass: [String]] = [:]
        if let declaration = Self.registry.declaration(for: identifier) {
            if !declaration.filenameExtensions.isEmpty { tags[.filenameExtension] = declaration.filenameExtensions }
            if !declaration.mimeTypes.isEmpty { tags[.mimeType] = declaration.mimeTypes }
        } else if let (tagClass, tag) = TypeRegistry.tag(ofDynamic: identifier) {
            tags[tagClass == .filenameExtension ? .filenameExtension : .mimeType] = [tag]
        }
        return tags
    }

    /// Every type this type conforms to, directly or indirectly, itself excluded.
    public var supertypes: Set<UTType> {
        Set(Self.registry.supertypes(of: identifier).map { UTType(canonical: $0) })
    }

    /// Whether the type is dynamic: made up for a tag no declaration claims (`dyn.` prefix).
    public var isDynamic: Bool { Self.registry.isDynamic(identifier) }

    /// Whether the registry declares the type.
    public var isDeclared: Bool { Self.registry.declaration(for: identifier) != nil }

    /// Whether the type is a public one (`public.` prefix).
    public var isPublic: Bool { identifier.hasPrefix("public.") }

    /// Whether the type conforms to `type`: reflexive and transitive over every parent.
    public func conforms(to type: UTType) -> Bool { Self.registry.conforms(identifier, to: type.identifier) }

    /// Whether `type` conforms to this type.
    public func isSupertype(of type: UTType) -> Bool { type.conforms(to: self) }

    /// Whether this type conforms to `type`.
    public func isSubtype(of type: UTType) -> Bool { conforms(to: type) }

    /// The identifier.
    public var description: String { identifier }

    /// The identifier.
    public var debugDescription: String { identifier }

    /// Decodes a type from its identifier; an identifier no type has is a data-corrupted error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let identifier = try container.decode(String.self)
        guard let type = UTType(identifier) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "unknown type identifier \(identifier.debugDescription)")
        }
        self = type
    }

    /// Encodes the identifier.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(identifier)
    }
}
#endif
