import Foundation
import SharepipeSystem

extension TypeRegistry {
    /// Builds a registry from the built-in declarations plus the types declared in a file: an app's `Info.plist`
    /// (XML or binary) or a JSON file with the same keys.
    ///
    /// The file's top level holds `UTExportedTypeDeclarations` and/or `UTImportedTypeDeclarations`, each an array of
    /// `{UTTypeIdentifier, UTTypeConformsTo, UTTypeDescription, UTTypeTagSpecification}`. An exported declaration
    /// wins over an imported one with the same identifier; an imported declaration of a built-in type is ignored, as
    /// the system's own declaration wins. Every problem is a `TypeDeclarationError` naming the key or identifier.
    public convenience init(contentsOfFile path: String) throws {
        let bytes: [UInt8]
        do {
            // A configuration file is trusted input, so a symlink to it (as in /etc) is followed, unlike share content.
            bytes = try System.readFile(URL(fileURLWithPath: path).resolvingSymlinksInPath().path)
        } catch let error as ShareError {
            throw TypeDeclarationError("cannot read type declarations from \(path): \(error.message)")
        }
        try self.init(declarations: Self.declarations(inFileContents: bytes, named: path))
    }

    /// The Info.plist keys that hold an app's own types and the types it uses from others.
    static let exportedKey = "UTExportedTypeDeclarations"
    static let importedKey = "UTImportedTypeDeclarations"

    /// The declarations in a property list or JSON document, exported ones first, imported ones that an exported or
    /// built-in declaration overrides left out.
    static func declarations(inFileContents bytes: [UInt8], named name: String) throws -> [TypeDeclaration] {
        let root = try topLevelDictionary(bytes, named: name)
        guard root[exportedKey] != nil || root[importedKey] != nil else {
            throw TypeDeclarationError("\(name) has neither \(exportedKey) nor \(importedKey)")
        }
        let exported = try declarations(in: root, key: exportedKey)
        let imported = try declarations(in: root, key: importedKey)
        var taken = Set(TypeDeclaration.builtin.map { $0.identifier.lowercased() })
        for declaration in exported { taken.insert(declaration.identifier.lowercased()) }
        return exported + imported.filter { !taken.contains($0.identifier.lowercased()) }
    }

    private static func topLevelDictionary(_ bytes: [UInt8], named name: String) throws -> [String: Any] {
        let data = Data(bytes)
        let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        let firstSignificant = bytes.first(where: { !whitespace.contains($0) })
        let value: Any
        if firstSignificant == UInt8(ascii: "{") || firstSignificant == UInt8(ascii: "[") {
            do {
                value = try JSONSerialization.jsonObject(with: data)
            } catch {
                throw TypeDeclarationError("\(name) is not valid JSON: \(error.localizedDescription)")
            }
        } else {
            do {
                value = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
            } catch {
                throw TypeDeclarationError("\(name) is neither a JSON file nor a property list")
            }
        }
        guard let dictionary = value as? [String: Any] else {
            throw TypeDeclarationError("the top level of \(name) is not a dictionary")
        }
        return dictionary
    }

    /// The declarations under one key, in file order; an identifier declared twice under the same key is an error.
    private static func declarations(in root: [String: Any], key: String) throws -> [TypeDeclaration] {
        guard let value = root[key] else { return [] }
        guard let entries = value as? [Any] else {
            throw TypeDeclarationError("\(key) is not an array of type declarations")
        }
        var result: [TypeDeclaration] = []
        var positions: [String: Int] = [:]
        for (position, entry) in entries.enumerated() {
            let declaration = try declaration(from: entry, at: "\(key)[\(position)]")
            if let earlier = positions[declaration.identifier.lowercased()] {
                throw TypeDeclarationError(
                    "type \(declaration.identifier) is declared twice in \(key) (entries \(earlier) and \(position))")
            }
            positions[declaration.identifier.lowercased()] = position
            result.append(declaration)
        }
        return result
    }

    private static func declaration(from entry: Any, at location: String) throws -> TypeDeclaration {
        guard let fields = entry as? [String: Any] else {
            throw TypeDeclarationError("\(location) is not a dictionary")
        }
        guard let rawIdentifier = fields["UTTypeIdentifier"] else {
            throw TypeDeclarationError("\(location) has no UTTypeIdentifier")
        }
        guard let identifier = rawIdentifier as? String, !identifier.isEmpty else {
            throw TypeDeclarationError("\(location): UTTypeIdentifier must be a non-empty string")
        }
        let parents = try strings(fields["UTTypeConformsTo"], key: "UTTypeConformsTo", type: identifier)
        var description = ""
        if let rawDescription = fields["UTTypeDescription"] {
            guard let text = rawDescription as? String else {
                throw TypeDeclarationError("type \(identifier): UTTypeDescription must be a string")
            }
            description = text
        }
        var extensions: [String] = []
        var mimeTypes: [String] = []
        if let rawTags = fields["UTTypeTagSpecification"] {
            guard let tags = rawTags as? [String: Any] else {
                throw TypeDeclarationError("type \(identifier): UTTypeTagSpecification must be a dictionary")
            }
            extensions = try strings(
                tags["public.filename-extension"], key: "UTTypeTagSpecification.public.filename-extension",
                type: identifier)
            mimeTypes = try strings(
                tags["public.mime-type"], key: "UTTypeTagSpecification.public.mime-type", type: identifier)
        }
        return TypeDeclaration(
            identifier, conformsTo: parents, description: description, filenameExtensions: extensions,
            mimeTypes: mimeTypes)
    }

    /// A value that Apple allows as either one string or an array of strings.
    private static func strings(_ value: Any?, key: String, type identifier: String) throws -> [String] {
        guard let value else { return [] }
        if let single = value as? String { return [single] }
        if let list = value as? [Any] {
            let strings = list.compactMap { $0 as? String }
            if strings.count == list.count { return strings }
        }
        throw TypeDeclarationError("type \(identifier): \(key) must be a string or an array of strings")
    }
}
