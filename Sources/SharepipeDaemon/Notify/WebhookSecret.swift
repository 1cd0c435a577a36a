import CCrypto
import Foundation
import SharepipeLedger
import SharepipeSystem

/// A Standard Webhooks signing secret: `whsec_` and the base64 of 24 to 64 random bytes, read from a file that only
/// its owner may read (like `--tokens`). Signatures are `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`.
package struct WebhookSecret: Sendable {
    let key: [UInt8]

    init(key: [UInt8]) {
        self.key = key
    }

    /// Parses `whsec_<base64>`.
    package init(text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("whsec_"), let key = Data(base64Encoded: String(trimmed.dropFirst(6))),
            (24...64).contains(key.count)
        else {
            throw ShareError(
                .io, "the secret must be whsec_ followed by the base64 of 24 to 64 bytes", errno: Errno.invalidArgument)
        }
        self.key = Array(key)
    }

    /// Reads and checks a secret file: a regular file not accessible to group or others, one secret.
    package static func load(path: String) throws -> WebhookSecret {
        try WebhookSecret(text: System.readPrivateFile(path, naming: "the secret file", limit: 4096))
    }

    /// The `webhook-signature` value for a message.
    func signature(id: String, timestamp: Int64, body: String) -> String {
        let message = Array("\(id).\(timestamp).\(body)".utf8)
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                HMAC(
                    EVP_sha256(), keyBytes.baseAddress, Int32(key.count),
                    messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count, &digest, &length)
            }
        }
        return "v1," + Data(digest.prefix(Int(length))).base64EncodedString()
    }
}
