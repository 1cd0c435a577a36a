import Dispatch
import Foundation

/// A provider over bytes in memory, delivered as data; asked for a file, it writes a temporary file that lives
/// only until the completion returns, as the system does.
public struct DataItemProvider: ItemProvider {
    /// The bytes.
    public let data: Data
    public let registeredTypeIdentifiers: [String]
    public let suggestedName: String?

    /// A provider for `data` declared as `types`, highest fidelity first.
    public init(data: Data, types: [String], suggestedName: String? = nil) {
        self.data = data
        self.registeredTypeIdentifiers = types
        self.suggestedName = suggestedName
    }

    public func representationKind(for typeIdentifier: String) -> RepresentationKind { .data }

    public func loadDataRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        let data = data
        DispatchQueue.global().async { completion(data, nil) }
    }

    public func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) {
        let data = data
        DispatchQueue.global().async {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("sharepipe-\(UUID().uuidString)")
            do {
                try data.write(to: url)
                completion(url, nil)
            } catch {
                completion(nil, error)
            }
            try? FileManager.default.removeItem(at: url)
        }
    }
}
