import Foundation
import SharepipeSystem

/// Type identifiers, their conformance graph and their tags; immutable once built, so safe to share.
///
/// Every supertype closure is computed once when the registry is built, so `conforms(_:to:)` is two
/// hash lookups and a bit test.
public final class TypeRegistry: Sendable {
    /// The built-in declarations only.
    public static let standard: TypeRegistry = {
        do {
            return try TypeRegistry(declarations: [])
        } catch {
            preconditionFailure("built-in type declarations are invalid: \(error)")
        }
    }()

    /// The kind of tag a dynamic identifier stands for.
    package enum TagClass: String, Sendable {
        case filenameExtension = "ext"
        case mimeType = "mime"
    }

    static let dynamicPrefix = "dyn."
    static let reservedPrefixes = ["public.", "dyn.", "com.apple."]

    private let declarations: [TypeDeclaration]
    private let indexByIdentifier: [String: Int]
    /// Bit set per declaration: bit j set when declaration i conforms to declaration j (i itself included).
    private let closures: [[UInt64]]
    private let indexesByExtension: [String: [Int]]
    private let indexesByMIMEType: [String: [Int]]
    private let dataIndex: Int
    private let itemIndex: Int

    /// Builds a registry from the built-in declarations plus `declarations` (user types).
    ///
    /// User identifiers may not use the reserved prefixes `public.`, `dyn.` and `com.apple.`; every parent must be
    /// declared; cycles are refused.
    package init(declarations userDeclarations: [TypeDeclaration]) throws {
        var all = TypeDeclaration.builtin
        var index: [String: Int] = [:]
        for (position, declaration) in all.enumerated() {
            index[declaration.identifier.lowercased()] = position
        }
        for declaration in userDeclarations {
            let key = declaration.identifier.lowercased()
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }) else {
                throw TypeDeclarationError("type identifier \"\(declaration.identifier)\" is not a reverse-DNS name")
            }
            if let prefix = Self.reservedPrefixes.first(where: { key.hasPrefix($0) }) {
                throw TypeDeclarationError(
                    "type identifier \(declaration.identifier) uses the reserved prefix \"\(prefix)\"")
            }
            guard index[key] == nil else {
                throw TypeDeclarationError("type identifier \(declaration.identifier) is declared twice")
            }
            index[key] = all.count
            all.append(declaration)
        }
        var parents: [[Int]] = []
        for declaration in all {
            var direct: [Int] = []
            for parent in declaration.conformsTo {
                guard let parentIndex = index[parent.lowercased()] else {
                    throw TypeDeclarationError(
                        "type \(declaration.identifier) conforms to \(parent), which is not declared")
                }
                direct.append(parentIndex)
            }
            parents.append(direct)
        }
        self.closures = try Self.closures(parents: parents, declarations: all)
        self.declarations = all
        self.indexByIdentifier = index
        var byExtension: [String: [Int]] = [:]
        var byMIME: [String: [Int]] = [:]
        for (position, declaration) in all.enumerated() {
            for tag in declaration.filenameExtensions { byExtension[tag.lowercased(), default: []].append(position) }
            for tag in declaration.mimeTypes { byMIME[tag.lowercased(), default: []].append(position) }
        }
        self.indexesByExtension = byExtension
        self.indexesByMIMEType = byMIME
        self.dataIndex = index["public.data"]!
        self.itemIndex = index["public.item"]!
    }

    /// Depth-first closure computation; a back edge is a cycle and names the identifiers on it.
    private static func closures(parents: [[Int]], declarations: [TypeDeclaration]) throws
        -> [[UInt64]]
    {
        let words = (declarations.count + 63) / 64
        var closures = [[UInt64]?](repeating: nil, count: declarations.count)
        var onPath = [Bool](repeating: false, count: declarations.count)

        func visit(_ node: Int, path: [Int]) throws -> [UInt64] {
            if let done = closures[node] { return done }
            if onPath[node] {
                let cycle = (path.drop(while: { $0 != node }) + [node]).map { declarations[$0].identifier }
                throw TypeDeclarationError("type declarations form a cycle: \(cycle.joined(separator: " -> "))")
            }
            onPath[node] = true
            var bits = [UInt64](repeating: 0, count: words)
            bits[node / 64] |= 1 << UInt64(node % 64)
            for parent in parents[node] {
                let parentBits = try visit(parent, path: path + [node])
                for word in 0..<words { bits[word] |= parentBits[word] }
            }
            onPath[node] = false
            closures[node] = bits
            return bits
        }

        for node in declarations.indices { _ = try visit(node, path: []) }
        return closures.map { $0! }
    }

    private func position(of identifier: String) -> Int? {
        indexByIdentifier[identifier] ?? indexByIdentifier[identifier.lowercased()]
    }

    /// The declaration for an identifier (case-insensitive), or nil for dynamic and unknown identifiers.
    package func declaration(for identifier: String) -> TypeDeclaration? {
        position(of: identifier).map { declarations[$0] }
    }

    /// Every declaration the registry knows, built-in first.
    package var allDeclarations: [TypeDeclaration] { declarations }

    /// Whether `type` conforms to `supertype`: reflexive, transitive over all parents, case-insensitive.
    /// Dynamic types conform to themselves, `public.data` and `public.item` only.
    public func conforms(_ type: String, to supertype: String) -> Bool {
        guard let child = position(of: type) else {
            if type.caseInsensitiveEquals(supertype) { return true }
            guard isDynamic(type), let parent = position(of: supertype) else { return false }
            return parent == dataIndex || parent == itemIndex
        }
        guard let parent = position(of: supertype) else { return false }
        return closures[child][parent / 64] & (1 << UInt64(parent % 64)) != 0
    }

    /// All types `type` conforms to, itself excluded, nearest first.
    public func supertypes(of type: String) -> [String] {
        guard let child = position(of: type) else {
            return isDynamic(type) ? ["public.data", "public.item"] : []
        }
        var result: [String] = []
        var queue = declarations[child].conformsTo
        while !queue.isEmpty {
            let next = queue.removeFirst()
            guard let found = position(of: next), !result.contains(declarations[found].identifier) else { continue }
            result.append(declarations[found].identifier)
            queue += declarations[found].conformsTo
        }
        return result
    }

    /// Whether the identifier is a dynamic one (`dyn.` prefix).
    package func isDynamic(_ type: String) -> Bool {
        type.lowercased().hasPrefix(Self.dynamicPrefix)
    }

    /// The type for a filename extension (without the dot); public types win; an unknown extension gives a
    /// dynamic type. With `conformingTo`, only types conforming to it are considered.
    public func type(forFilenameExtension tag: String, conformingTo supertype: String? = nil) -> String {
        let key = tag.lowercased()
        return best(indexesByExtension[key] ?? [], conformingTo: supertype)
            ?? Self.dynamicIdentifier(.filenameExtension, key)
    }

    /// The type for a MIME type (parameters ignored); public types win; an unknown MIME type gives a dynamic type.
    public func type(forMIMEType tag: String, conformingTo supertype: String? = nil) -> String {
        let key = Self.normalizedMIMEType(tag)
        return best(indexesByMIMEType[key] ?? [], conformingTo: supertype)
            ?? Self.dynamicIdentifier(.mimeType, key)
    }

    /// The known (non-dynamic) type for a MIME type, if any.
    func knownType(forMIMEType tag: String) -> String? {
        best(indexesByMIMEType[Self.normalizedMIMEType(tag)] ?? [], conformingTo: nil)
    }

    private func best(_ candidates: [Int], conformingTo supertype: String?) -> String? {
        let eligible = candidates.filter { supertype == nil || conforms(declarations[$0].identifier, to: supertype!) }
        let chosen = eligible.first(where: { declarations[$0].identifier.hasPrefix("public.") }) ?? eligible.first
        return chosen.map { declarations[$0].identifier }
    }

    /// The preferred filename extension of a type; a dynamic extension type gives back its tag.
    public func preferredFilenameExtension(for type: String) -> String? {
        if let declaration = declaration(for: type) { return declaration.filenameExtensions.first }
        if let (tagClass, tag) = Self.tag(ofDynamic: type), tagClass == .filenameExtension { return tag }
        return nil
    }

    /// The preferred MIME type of a type; a dynamic MIME type gives back its tag.
    public func preferredMIMEType(for type: String) -> String? {
        if let declaration = declaration(for: type) {
            return declaration.mimeTypes.first(where: { !$0.hasSuffix("/*") })
        }
        if let (tagClass, tag) = Self.tag(ofDynamic: type), tagClass == .mimeType { return tag }
        return nil
    }

    static func normalizedMIMEType(_ tag: String) -> String {
        let base = tag.split(separator: ";", maxSplits: 1).first.map(String.init) ?? tag
        return base.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// A dynamic identifier that encodes its tag: `dyn.ext.<tag>` or `dyn.mime.<tag>`, with every byte outside
    /// `[a-z0-9-]` written as `_hh`.
    package static func dynamicIdentifier(_ tagClass: TagClass, _ tag: String) -> String {
        var encoded = ""
        for byte in tag.lowercased().utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += "_" + hex([byte])
            }
        }
        return dynamicPrefix + tagClass.rawValue + "." + encoded
    }

    /// The tag a dynamic identifier stands for, or nil when it is not one of ours.
    package static func tag(ofDynamic type: String) -> (TagClass, String)? {
        let parts = type.lowercased().split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "dyn", let tagClass = TagClass(rawValue: String(parts[1])) else {
            return nil
        }
        var bytes: [UInt8] = []
        var iterator = Array(parts[2].utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "_") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return (tagClass, String(decoding: bytes, as: UTF8.self))
    }
}

extension String {
    func caseInsensitiveEquals(_ other: String) -> Bool {
        self == other || lowercased() == other.lowercased()
    }
}
