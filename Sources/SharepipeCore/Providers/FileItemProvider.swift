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

    /// A provider for `path`; `types` nil means "derive them from the extension and the content".
    public init(path: String, types: [String]? = nil, suggestedName: String? = nil, registry: TypeRegistry = .standard) {
        self.path = path
        self.suggestedName = suggestedName ?? (path as NSString).lastPathComponent
        self.registeredTypeIdentifiers = types ?? Self.derivedTypes(path: path, registry: registry)
    }

    static func derivedTypes(path: String, registry: TypeRegistry) -> [String] {
        var types: [String] = []
        let name = (path as NSString).lastPathComponent
        let pathExtension = (name as NSString).pathExtension
        if !pathExtension.isEmpty {
            types.append(registry.type(forFilenameExtension: pathExtension))
        }
        if let sniffed = try? sniffFile(path, registry: registry),
            !types.contains(where: { registry.conforms($0, to: sniffed.typeIdentifier) })
        {
            types.append(sniffed.typeIdentifier)
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

/// Sniffs the first bytes of a regular file without following symlinks or blocking on FIFOs.
func sniffFile(_ path: String, registry: TypeRegistry) throws -> (mimeType: String, typeIdentifier: String) {
    let file = try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
    guard try file.status().kind == .regular else { throw ShareError(.notRegularFile, "not a regular file") }
    var buffer = [UInt8](repeating: 0, count: Sniffer.sniffLength)
    let count = try buffer.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
    let mimeType = try Magic.shared.mimeType(of: Array(buffer[..<count]))
    return (mimeType, registry.sniffedType(forMIMEType: mimeType))
}
