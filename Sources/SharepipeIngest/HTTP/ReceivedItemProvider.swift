import Dispatch
import Foundation
import SharepipeSpool
import SharepipeSystem
import Synchronization

/// One attachment received over HTTP: its representations, each a file in the request's receive directory under
/// `staging/`, declared highest fidelity first. The loader's type choice, fallback, sniffing, limits and policy
/// apply unchanged; a file received whole and hashed on its way in is adopted as the copy (no second pass over its
/// bytes), any other (a tus upload's data) is handed out as a file representation and copied as any provider's.
struct ReceivedItemProvider: AdoptingProvider, PresniffedProvider {
    /// One representation: its declared type and the received file.
    struct Representation: Sendable, Equatable {
        var type: String
        var path: String
        /// Set when the file was hashed as it was received into `staging`.
        var received: ReceivedFile?
    }

    let representations: [Representation]
    let suggestedName: String?
    /// What libmagic said of a received file's head when its types were derived from it.
    let sniffed: TypeSniffer.SniffedHead?
    let spareSink: (any SpareSink)?

    /// How many times each type was asked for: two parts of one field may declare the same type, and the loader
    /// then asks for that type once per part, the second time as the fallback of the first.
    private let asked = Asked()

    private final class Asked: Sendable {
        let counts = Mutex<[String: Int]>([:])
    }

    init(
        representations: [Representation], suggestedName: String?, sniffed: TypeSniffer.SniffedHead? = nil,
        spareSink: (any SpareSink)? = nil
    ) {
        self.representations = representations
        self.suggestedName = suggestedName
        self.sniffed = sniffed
        self.spareSink = spareSink
    }

    var registeredTypeIdentifiers: [String] { representations.map(\.type) }

    /// The loader's next attempt at `typeIdentifier` (it always asks for the received file first): the next
    /// representation of that type.
    func receivedFile(forTypeIdentifier typeIdentifier: String) -> ReceivedFile? {
        let attempt = asked.counts.withLock { counts in
            defer { counts[typeIdentifier, default: 0] += 1 }
            return counts[typeIdentifier, default: 0]
        }
        return representation(typeIdentifier, attempt: attempt)?.received
    }

    /// The representation of the current attempt at `typeIdentifier`.
    private func current(_ typeIdentifier: String) -> Representation? {
        let attempt = asked.counts.withLock { max(0, $0[typeIdentifier, default: 0] - 1) }
        return representation(typeIdentifier, attempt: attempt)
    }

    private func representation(_ typeIdentifier: String, attempt: Int) -> Representation? {
        let matching = representations.filter { $0.type == typeIdentifier }
        return matching.indices.contains(attempt) ? matching[attempt] : matching.first
    }

    func adoptionsEnded() {
        for case let received? in representations.map(\.received) { try? System.unlink(received.path) }
    }

    func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) {
        let path = current(typeIdentifier)?.path
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
        let path = current(typeIdentifier)?.path
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
    /// content would declare (then the head was sniffed, and what libmagic said comes along).
    static func declaredTypes(
        explicit: [String]?, mimeType: String?, suggestedName: String?, path: String, registry: TypeRegistry
    ) -> (types: [String], sniffed: TypeSniffer.SniffedHead?) {
        if let explicit, !explicit.isEmpty { return (explicit, nil) }
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
        if !types.isEmpty { return (types, nil) }
        let sniffed = try? TypeSniffer.sniffHead(path: path)
        let derived = FileItemProvider.derivedTypes(path: suggestedName ?? "upload", sniffed: sniffed, registry: registry)
        return (derived, sniffed)
    }
}
