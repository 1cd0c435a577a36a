import Foundation
import SharepipeSystem

/// `manifest.json`, one per share, exactly in the SPEC's shape.
package struct Manifest: Codable, Sendable, Equatable {
    /// The share's UUID.
    package var shareId: String
    /// The bundle identifier of the app that shared, if known.
    package var sourceApp: String?
    /// RFC 3339 creation time.
    package var createdAt: String
    /// The partial-failure policy the share was loaded with.
    package var policy: SharePolicy
    /// Every attachment, copied or not, in attachment order.
    package var attachments: [AttachmentRecord]
    /// The name of the folder dropped into the inbox, for a folder share (the store processor's `{folder}`); absent
    /// otherwise. Set by the ingester; the key is left out when nil.
    package var folder: String?
    /// The share's title, text, userInfo and tags, written as the manifest's own keys (`title`, `text`, `userInfo`
    /// null when absent, `tags` always).
    package var details: ShareDetails = .empty

    private enum CodingKeys: String, CodingKey {
        case shareId, sourceApp, createdAt, policy, attachments, folder
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(shareId, forKey: .shareId)
        try container.encode(sourceApp, forKey: .sourceApp)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(policy, forKey: .policy)
        try container.encode(attachments, forKey: .attachments)
        try container.encodeIfPresent(folder, forKey: .folder)
        try details.encode(to: encoder)
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        shareId = try container.decode(String.self, forKey: .shareId)
        sourceApp = try container.decodeIfPresent(String.self, forKey: .sourceApp)
        createdAt = try container.decode(String.self, forKey: .createdAt)
        policy = try container.decode(SharePolicy.self, forKey: .policy)
        attachments = try container.decode([AttachmentRecord].self, forKey: .attachments)
        folder = try container.decodeIfPresent(String.self, forKey: .folder)
        details = try ShareDetails(from: decoder)
    }

    /// A manifest built in code.
    package init(
        shareId: String, sourceApp: String?, createdAt: String, policy: SharePolicy, attachments: [AttachmentRecord],
        folder: String? = nil, details: ShareDetails = .empty
    ) {
        self.shareId = shareId
        self.sourceApp = sourceApp
        self.createdAt = createdAt
        self.policy = policy
        self.attachments = attachments
        self.folder = folder
        self.details = details
    }

    /// Encodes the manifest as JSON bytes (stable key order).
    package func encoded() throws -> [UInt8] {
        if let bytes = compactJSON() { return bytes }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(self))
    }

    /// Decodes a manifest; anything malformed is ERR_IO.
    package static func decode(_ bytes: [UInt8]) throws -> Manifest {
        if let manifest = compactDecoded(bytes) { return manifest }
        do {
            return try JSONDecoder().decode(Manifest.self, from: Data(bytes))
        } catch {
            throw ShareError(.io, "manifest.json is malformed: \(error)")
        }
    }

    package init(
        shareId: String, sourceApp: String? = nil, createdAt: String, policy: SharePolicy,
        attachments: [AttachmentRecord], folder: String? = nil
    ) {
        self.shareId = shareId
        self.sourceApp = sourceApp
        self.createdAt = createdAt
        self.policy = policy
        self.attachments = attachments
        self.folder = folder
    }
}

/// The partial-failure policy of a share.
public enum SharePolicy: String, Codable, Sendable, CaseIterable {
    /// Publish what copied; failed attachments are listed with their codes.
    case keepSuccessful = "keep-successful"
    /// Any failure rolls the whole share back.
    case allOrNothing = "all-or-nothing"
}

/// One attachment's outcome, as recorded in the manifest and the receipt.
public struct AttachmentRecord: Codable, Sendable, Equatable {
    /// The outcome of one attachment.
    public enum Status: String, Codable, Sendable {
        /// Copied into the share.
        case copied
        /// Failed with an error code.
        case failed
        /// Copied, then removed because an all-or-nothing share failed elsewhere.
        case rolledBack = "rolled-back"
    }

    /// An error code with its message.
    public struct ErrorInfo: Codable, Sendable, Equatable {
        /// The `ERR_*` code.
        public var code: ShareError.Code
        /// A human-readable message.
        public var message: String

        package init(code: ShareError.Code, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// Position in the share.
    public var index: Int
    /// The outcome.
    public var status: Status
    /// The copy's UUID.
    public var fileId: String?
    /// The copy's file name inside the share directory (`<fileId>.<ext>`).
    package var file: String?
    /// The chosen type.
    public var typeIdentifier: String?
    /// The types the provider declared, highest fidelity first.
    package var declaredTypes: [String]
    /// What libmagic said about the content.
    package var sniffedMimeType: String?
    /// Bytes copied.
    public var bytes: Int64?
    /// SHA-256 of the copy, lowercase hex.
    public var sha256: String?
    /// The provider's suggested name.
    package var suggestedName: String?
    /// Why the attachment failed.
    public var error: ErrorInfo?
    /// Every representation tried, in order, when more than one was (fallback); nil otherwise.
    package var attempts: [Attempt]?
    /// The copy this attachment's content duplicates (`--duplicates flag` or `reject`); nil otherwise.
    package var duplicateOf: DuplicateOrigin?

    /// One representation the loader tried: its type, and the code it failed with (null for the one taken).
    package struct Attempt: Codable, Sendable, Equatable {
        /// The representation's type.
        package var type: String
        /// Why loading it failed; nil when it was taken.
        package var code: ShareError.Code?

        /// Creates an attempt record.
        package init(type: String, code: ShareError.Code?) {
            self.type = type
            self.code = code
        }

        private enum CodingKeys: String, CodingKey {
            case type, code
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(type, forKey: .type)
            try container.encode(code, forKey: .code)
        }
    }

    package var shareError: ShareError? { error.map { ShareError($0.code, $0.message) } }

    package init(
        index: Int, status: Status, fileId: String? = nil, file: String? = nil, typeIdentifier: String? = nil,
        declaredTypes: [String], sniffedMimeType: String? = nil, bytes: Int64? = nil, sha256: String? = nil,
        suggestedName: String? = nil, error: ErrorInfo? = nil, attempts: [Attempt]? = nil,
        duplicateOf: DuplicateOrigin? = nil
    ) {
        self.index = index
        self.status = status
        self.fileId = fileId
        self.file = file
        self.typeIdentifier = typeIdentifier
        self.declaredTypes = declaredTypes
        self.sniffedMimeType = sniffedMimeType
        self.bytes = bytes
        self.sha256 = sha256
        self.suggestedName = suggestedName
        self.error = error
        self.attempts = attempts
        self.duplicateOf = duplicateOf
    }
}
