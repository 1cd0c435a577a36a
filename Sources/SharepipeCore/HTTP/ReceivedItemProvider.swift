import Dispatch
import Foundation

/// One attachment received over HTTP: its representations, each a file in the request's receive directory under
/// `staging/`, declared highest fidelity first. It hands out each file as a file representation exactly as any
/// provider does, so the loader's type choice, fallback, sniffing, limits and policy apply unchanged.
struct ReceivedItemProvider: ItemProvider {
    /// One representation: its declared type and the received file.
    struct Representation: Sendable, Equatable {
        var type: String
        var path: String
    }

    let representations: [Representation]
    let suggestedName: String?

    var registeredTypeIdentifiers: [String] { representations.map(\.type) }

    func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) {
        let path = representations.first { $0.type == typeIdentifier }?.path
        DispatchQueue.global().async {
            guard let path else {
                completion(nil, ShareError(.loadFailed, "no representation of that type was received"))
                return
            }
            completion(URL(fileURLWithPath: path), nil)
        }
    }

    func loadDataRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        let path = representations.first { $0.type == typeIdentifier }?.path
        DispatchQueue.global().async {
            guard let path else {
                completion(nil, ShareError(.loadFailed, "no representation of that type was received"))
                return
            }
            do {
                completion(try readRepresentationFile(path), nil)
            } catch {
                completion(nil, error)
            }
        }
    }

    /// The declared types of a received file: the explicit type identifiers when the client gave them; else the
    /// type of the MIME type the client named (unless it said nothing specific: `application/octet-stream`), then
    /// the type the file name's extension names; and when neither is known, what an inbox drop of that name and
    /// content would declare.
    static func declaredTypes(
        explicit: [String]?, mimeType: String?, suggestedName: String?, path: String, registry: TypeRegistry
    ) -> [String] {
        if let explicit, !explicit.isEmpty { return explicit }
        var types: [String] = []
        if let mimeType, mimeType != "application/octet-stream", !mimeType.isEmpty {
            let type = registry.type(forMIMEType: mimeType)
            if !registry.isDynamic(type) { types.append(type) }
        }
        let pathExtension = ((suggestedName ?? "") as NSString).pathExtension
        if !pathExtension.isEmpty {
            let type = registry.type(forFilenameExtension: pathExtension)
            if !registry.isDynamic(type), !types.contains(type) { types.append(type) }
        }
        if !types.isEmpty { return types }
        let sniffed = try? TypeSniffer.sniffHead(path: path)
        return FileItemProvider.derivedTypes(path: suggestedName ?? "upload", sniffed: sniffed, registry: registry)
    }
}
