import SharepipeLedger

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

    /// The process exit status the SPEC gives this outcome.
    public var exitStatus: Int32 {
        switch status {
        case .complete: 0
        case .partial: 3
        case .failed: 1
        case .rejected: 4
        }
    }
}
