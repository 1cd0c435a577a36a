import Foundation
import SharepipeSystem

/// `quarantine/S/reason.json`: why a share failed for good.
struct QuarantineReason: Codable, Sendable, Equatable {
    /// Always ERR_PROCESSOR_FAILED for a share the consumer gave up on.
    var code: ShareError.Code
    /// The last attempt's error, code first.
    var message: String
    /// Attempts made.
    var attempts: Int
    /// RFC 3339.
    var firstAttemptAt: String
    /// RFC 3339.
    var lastAttemptAt: String

    static let fileName = "reason.json"
}
