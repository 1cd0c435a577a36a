import CCrypto

/// An incremental SHA-1, SHA-256 or SHA-512 over libcrypto, giving raw digest bytes (tus's `Upload-Checksum` and
/// RFC 9530's digest fields compare them with what the client sent in base64).
package final class MessageDigest {
    package enum Algorithm: Sendable { case sha1, sha256, sha512 }

    private let context: OpaquePointer

    package init(_ algorithm: Algorithm) {
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        switch algorithm {
        case .sha1: EVP_DigestInit_ex(context, EVP_sha1(), nil)
        case .sha256: EVP_DigestInit_ex(context, EVP_sha256(), nil)
        case .sha512: EVP_DigestInit_ex(context, EVP_sha512(), nil)
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest; call once.
    package func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return Array(digest[..<Int(length)])
    }
}
