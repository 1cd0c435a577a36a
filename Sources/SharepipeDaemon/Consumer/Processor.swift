import SharepipeLedger
import SharepipeSystem

/// What the consumer hands each claimed share to. Library users implement it; `StoreProcessor`, `ExecProcessor`
/// and `DiscardProcessor` are the built-in ones.
///
/// Processing is at-least-once: a share runs again only when a crash fell between the processor's success and its
/// record, and then with the same share id and file ids, so a processor can deduplicate. Returning means the whole
/// share was processed; throwing fails the attempt (retried with backoff, then quarantined). A processor should
/// stop promptly when its task is cancelled (graceful shutdown past its deadline); the share then goes back to
/// `incoming` without counting an attempt.
public protocol Processor: Sendable {
    /// Processes every copied attachment of `share`.
    func process(_ share: ClaimedShare) async throws
}

/// A share claimed for processing: its manifest and, per copied attachment, the absolute path of the copy.
public struct ClaimedShare: Sendable {
    /// One copied attachment.
    public struct Attachment: Sendable, Equatable {
        /// Position in the share.
        public var index: Int
        /// The copy's UUID, the same on every attempt.
        public var fileId: String
        /// Absolute path of the copy inside `processing/<share-id>/`.
        public var path: String
        /// The chosen type identifier.
        public var typeIdentifier: String
        /// What libmagic said about the content.
        public var mimeType: String?
        /// The provider's suggested name, if any.
        public var suggestedName: String?
        /// Size in bytes.
        public var bytes: Int64
        /// The copy this one duplicates (`--duplicates flag`); nil otherwise.
        package var duplicateOf: DuplicateOrigin?
    }

    /// The share's UUID, the same on every attempt.
    public var shareId: String
    /// This attempt's number, from 1.
    public var attempt: Int
    /// The share's `manifest.json`.
    package var manifest: Manifest
    /// The copied attachments, in attachment order.
    public var attachments: [Attachment]

    /// Builds the view of a claimed share from its manifest; `directory` is the absolute path of `processing/S` (or,
    /// to test a processor, of any directory holding a published share). A manifest naming a file outside the
    /// directory is ERR_IO.
    package init(manifest: Manifest, directory: String, attempt: Int) throws {
        shareId = manifest.shareId
        self.attempt = attempt
        self.manifest = manifest
        attachments = try manifest.attachments.compactMap { record in
            guard record.status == .copied else { return nil }
            guard let fileId = record.fileId, let file = record.file, let type = record.typeIdentifier,
                !file.isEmpty, !file.hasPrefix("."), !file.contains("/")
            else { throw ShareError(.io, "manifest.json lists attachment \(record.index) without a usable copy") }
            return Attachment(
                index: record.index, fileId: fileId, path: directory + "/" + file, typeIdentifier: type,
                mimeType: record.sniffedMimeType, suggestedName: record.suggestedName, bytes: record.bytes ?? 0,
                duplicateOf: record.duplicateOf)
        }
    }
}

/// Records and deletes: the consumer records each share processed and removes its copies, as for every
/// processor; this one does nothing else.
public struct DiscardProcessor: Processor {
    /// A processor that keeps nothing.
    public init() {}

    /// Accepts the share as it is.
    public func process(_ share: ClaimedShare) async throws {}
}
