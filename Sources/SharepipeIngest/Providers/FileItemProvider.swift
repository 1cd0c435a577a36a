import Dispatch
import Foundation

/// A provider over a file on disk. Its types come from the caller, or from the file's extension and the type
/// sniffed from its content (a text file named `.jpg` declares `public.jpeg` alone and is then refused by the
/// loader's content check). The file itself is handed out and never modified.
public struct FileItemProvider: PresniffedProvider {
    /// The file's path.
    public let path: String
    public let registeredTypeIdentifiers: [String]
    public let suggestedName: String?

    /// What the content sniff at creation saw, so that the loader need not sniff the same bytes again.
    let sniffed: TypeSniffer.SniffedHead?

    /// A provider for `path`; `types` nil means "derive them from the extension and the content".
    public init(path: String, types: [String]? = nil, suggestedName: String? = nil,
    registry: TypeRegistry = .standard) {
        self.path = path
        self.suggestedName = suggestedName ?? (path as NSString).lastPathComponent
        if let types {
            registeredTypeIdentifiers = types
            sniffed = nil
        } else {
            sniffed = try? TypeSniffer.sniffHead(
                path: path, declaredType: Self.namedType(path: path, registry: registry), registry: registry)
            registeredTypeIdentifiers = Self.derivedTypes(path: path, sniffed: sniffed, registry: registry)
        }
    }

    /// The types of a file known only by its name and content, most informative first: the type the extension
    /// names, then the sniffed type when it says more; a registered sniffed type before a dynamic extension type.
    /// When the content contradicts the name, only the name's type is declared, so that the lie is refused rather
    /// than passed on under the sniffed type.
    ///
    /// Text under a textual name was sniffed by libmagic's built-in tests only (`TypeRegistry.sniffScope`): its
    /// guess at a language could not refuse it, and declares nothing here either.
    static func derivedTypes(path: String, sniffed: TypeSniffer.SniffedHead?, registry: TypeRegistry) -> [String] {
        let named = namedType(path: path, registry: registry)
        guard let sniffed else { return [named ?? "public.data"] }
        if let named, sniffed.scope == .builtin { return [named] }
        let sniffedType = registry.sniffedType(forMIMEType: sniffed.mimeType, head: sniffed.head)
        guard let named else { return [sniffedType] }
        if registry.isDynamic(named) {
            let informative = !registry.isDynamic(sniffedType) && sniffedType != "public.data"
            return informative ? [sniffedType, named] : [named]
        }
        guard registry.isCompatible(sniffedMIMEType: sniffed.mimeType, declaredType: named, head: sniffed.head) else {
            return [named]
        }
        return registry.conforms(named, to: sniffedType) ? [named] : [named, sniffedType]
    }

    /// The type a file's name extension gives, nil when it has none.
    static func namedType(path: String, registry: TypeRegistry) -> String? {
        let pathExtension = ((path as NSString).lastPathComponent as NSString).pathExtension
        return pathExtension.isEmpty ? nil : registry.type(forFilenameExtension: pathExtension)
    }

    public func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) {
        let url = URL(fileURLWithPath: path)
        DispatchQueue.global().async { completion(url, nil) }
    }

    public func loadDataRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        let path = path
        DispatchQueue.global().async {
            do {
                completion(try readRepresentationFile(path), nil)
            } catch {
                completion(nil, error)
            }
        }
    }
}
