import Foundation
import SharepipeLedger
import SharepipeSystem

/// What the loader did with a share: the id, the overall status and each attachment's outcome.
public struct ShareReceipt: Codable, Sendable, Equatable {
    /// The overall outcome, as the SPEC names it.
    public enum Status: String, Codable, Sendable {
        /// Every attachment copied (exit 0).
        case complete
        /// Some copied, some failed (exit 3).
        case partial
        /// The share could not be attempted: container unavailable, I/O, spool full (exit 1).
        case failed
        /// Nothing accepted, or all rolled back by all-or-nothing (exit 4).
        case rejected
    }

    /// The share's UUID.
    public var shareId: String
    /// The overall outcome.
    public var status: Status
    /// Per attachment, in order.
    public var attachments: [AttachmentRecord]
    /// A share-level error (container, spool full, too many attachments, not activated).
    public var error: AttachmentRecord.ErrorInfo?
    /// The share's title, text, userInfo and tags, written as the receipt's own keys when it has any of them (all four
    /// then, null and [] for those it lacks).
    public var details: ShareDetails = .empty

    private enum CodingKeys: String, CodingKey {
        case shareId, status, attachments, error
    }

    /// A receipt built in code.
    public init(
        shareId: String, status: Status, attachments: [AttachmentRecord], error: AttachmentRecord.ErrorInfo? = nil,
        details: ShareDetails = .empty
    ) {
        self.shareId = shareId
        self.status = status
        self.attachments = attachments
        self.error = error
        self.details = details
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(shareId, forKey: .shareId)
        try container.encode(status, forKey: .status)
        try container.encode(attachments, forKey: .attachments)
        try container.encodeIfPresent(error, forKey: .error)
        if !details.isEmpty { try details.encode(to: encoder) }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        shareId = try container.decode(String.self, forKey: .shareId)
        status = try container.decode(Status.self, forKey: .status)
        attachments = try container.decode([AttachmentRecord].self, forKey: .attachments)
        error = try container.decodeIfPresent(AttachmentRecord.ErrorInfo.self, forKey: .error)
        details = try ShareDetails(from: decoder)
    }

    /// The process exit status the SPEC gives this outcome.
    public var exitStatus: Int32 {
        switch status {
        case .complete: 0
        case .partial: 3
        case .failed: 1
        case .rejected: 4
        }
    }

    /// A share refused whole before anything was loaded: the share-level error, and every attachment failed with it.
    package static func refused(
        _ status: Status, _ error: ShareError, providers: [any ItemProvider], details: ShareDetails = .empty
    ) -> ShareReceipt {
        let info = AttachmentRecord.ErrorInfo(code: error.code, message: error.message)
        return ShareReceipt(
            shareId: UUID.random().uuidString, status: status,
            attachments: providers.enumerated().map { index, provider in
                AttachmentRecord(
                    index: index, status: .failed, declaredTypes: provider.registeredTypeIdentifiers,
                    suggestedName: provider.suggestedName, error: info)
            },
            error: info, details: details)
    }
}
