/// Incremental SHA-256 over OpenSSL's libcrypto (it uses the CPU's SHA extensions when present), as lowercase hex.
package struct SHA256: ~Copyable {
    private let digest = MessageDigest(.sha256)

    package init() {}

    package func update(_ bytes: UnsafeRawBufferPointer) {
        digest.update(bytes)
    }

    /// The digest as lowercase hex; call once.
    package func finalize() -> String {
        hex(digest.finalize())
    }

    package static func hash(_ bytes: [UInt8]) -> String {
        let hasher = SHA256()
        bytes.withUnsafeBytes { hasher.update($0) }
        return hasher.finalize()
    }
}

package func hex<C: Collection<UInt8>>(_ bytes: C) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}
