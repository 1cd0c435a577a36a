import Foundation
import SharepipeSystem

/// How a provider hands over a representation.
public enum RepresentationKind: String, Sendable, Codable {
    /// A temporary file, valid only until the completion handler returns.
    case file
    /// Bytes in memory.
    case data
}

/// A source of one attachment, modelled on `NSItemProvider`.
///
/// Completion handlers may run on any thread, at most once each (a well-behaved provider) — the loader copes with
/// providers that call back late, twice or never. A file URL handed to a completion is valid only until that
/// completion returns.
public protocol ItemProvider: Sendable {
    /// Type identifiers the provider can deliver, highest fidelity first.
    var registeredTypeIdentifiers: [String] { get }
    /// The name the source suggests for the item, if any.
    var suggestedName: String? { get }
    /// Whether `typeIdentifier` is best loaded as a file or as data.
    func representationKind(for typeIdentifier: String) -> RepresentationKind
    /// Loads a file representation; the URL is only valid until `completion` returns.
    func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void)
    /// Loads a data representation.
    func loadDataRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (Data?, (any Error)?) -> Void)
}

extension ItemProvider {
    /// Providers hand over files unless they say otherwise.
    public func representationKind(for typeIdentifier: String) -> RepresentationKind { .file }

    /// Whether any registered type conforms to `typeIdentifier`.
    public func hasItemConforming(to typeIdentifier: String, in registry: TypeRegistry = .standard) -> Bool {
        registeredTypeIdentifiers.contains { registry.conforms($0, to: typeIdentifier) }
    }
}

/// Reads a whole file for providers that are asked for data; refuses symlinks and non-regular files.
func readRepresentationFile(_ path: String) throws -> Data {
    Data(try System.readFile(path, limit: Int.max))
}
