import Dispatch
import Foundation
import Glibc

/// A provider over a file on disk. Its types come from the caller, or from the file's extension followed by the
/// type sniffed from its content (so a text file named `.jpg` declares `public.jpeg` first and is then refused
/// by the loader's content check). The file itself is handed out and never modified.
public struct FileItemProvider: ItemProvider {
    /// The file's path.
    public let path: String
    public let registeredTypeIdentifiers: [String]
    public let suggestedName: String?

    /// What the content sniff at creation saw, so that the loader need not sniff the same bytes again.
    let sniffed: TypeSniffer.SniffedHead?

    /// A provider for `path`; `types` nil means "derive them from the extension and the content".
    public init(path: String, types: [String]? = nil, suggestedName: String? = nil, registry: TypeRegistry = .standard) {
        self.path = path
        self.suggestedName = suggestedName ?? (path as NSString).lastPathComponent
        if let types {
            registeredTypeIdentifiers = types
            sniffed = nil
        } else {
            sniffed = try? TypeSniffer.sniffHead(path: path)
            registeredTypeIdentifiers = Self.derivedTypes(path: path, sniffed: sniffed, registry: registry)
        }
    }

    static func derivedTypes(path: String, sniffed: TypeSniffer.SniffedHead?, registry: TypeRegistry) -> [String] {
        var types: [String] = []
        let name = (path as NSString).lastPathComponent
        let pathExtension = (name as NSString).pathExtension
        if !pathExtension.isEmpty {
            types.append(registry.type(forFilenameExtension: pathExtension))
        }
        if let sniffed {
            let sniffedType = registry.sniffedType(forMIMEType: sniffed.mimeType)
            if !types.contains(where: { registry.conforms($0, to: sniffedType) }) { types.append(sniffedType) }
        }
        return types.isEmpty ? ["public.data"] : types
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
