import Foundation
import SharepipeCore

/// Keeps a catalogue of the images that were shared: one tab-separated line per image copy —
/// `file-id  share-id  type  bytes  mime-type` — in a text file. Other attachments are skipped.
///
/// Processing is at-least-once: after a crash between this processor's success and the consumer's record, the same
/// share comes back with the same file ids. The catalogue is keyed by file id, so a share processed twice still
/// leaves one line per image; and the file is replaced atomically, so a crash mid-write leaves the old catalogue.
public struct CatalogueProcessor: Processor {
    /// The catalogue file.
    public let catalogue: String
    private let registry: TypeRegistry

    /// A processor appending to `catalogue` (created when missing).
    public init(catalogue: String, registry: TypeRegistry = .standard) {
        self.catalogue = catalogue
        self.registry = registry
    }

    /// Adds a line for each image of `share` whose file id is not catalogued yet.
    public func process(_ share: ClaimedShare) async throws {
        var lines = try Self.lines(of: catalogue)
        let known = Set(lines.compactMap { $0.split(separator: "\t").first.map(String.init) })
        var added = false
        for attachment in share.attachments
        where registry.conforms(attachment.typeIdentifier, to: "public.image") && !known.contains(attachment.fileId) {
            let fields = [
                attachment.fileId, share.shareId, attachment.typeIdentifier, String(attachment.bytes),
                attachment.mimeType ?? "-",
            ]
            lines.append(fields.joined(separator: "\t"))
            added = true
        }
        guard added else { return }
        let text = lines.map { $0 + "\n" }.joined()
        try Data(text.utf8).write(to: URL(fileURLWithPath: catalogue), options: .atomic)
    }

    /// The catalogue's lines; none when it does not exist yet.
    public static func lines(of catalogue: String) throws -> [String] {
        guard FileManager.default.fileExists(atPath: catalogue) else { return [] }
        return try String(contentsOfFile: catalogue, encoding: .utf8).split(separator: "\n").map(String.init)
    }
}
