import Foundation
import SharepipeSystem

/// RFC 9530's digest fields: `Repr-Digest` and `Content-Digest` (a structured-field Dictionary of algorithm to byte
/// sequence, `sha-256=:BASE64:`), and `Want-Repr-Digest`. `sha-256` and `sha-512` are verified; other algorithms
/// are ignored, as the RFC asks.
struct DigestFields: Sendable, Equatable {
    var sha256: [UInt8]?
    var sha512: [UInt8]?

    var isEmpty: Bool { sha256 == nil && sha512 == nil }

    /// The digests a header names; nil without the header or without an algorithm verified here; a known algorithm
    /// with a value that is not a byte sequence of its size is a malformed request.
    static func parse(_ header: String?, name: String) -> Result<DigestFields?, ShareError> {
        guard let header else { return .success(nil) }
        var digests = DigestFields()
        for member in header.split(separator: ",") {
            let item = member.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = pair.first.map { $0.trimmingSpaces().lowercased() } ?? ""
            guard key == "sha-256" || key == "sha-512" else { continue }
            let value = pair.count == 2 ? pair[1].trimmingSpaces() : ""
            let size = key == "sha-256" ? 32 : 64
            guard value.count >= 2, value.hasPrefix(":"), value.hasSuffix(":"),
                let bytes = Data(base64Encoded: String(value.dropFirst().dropLast())), bytes.count == size
            else {
                return .failure(ShareError(.badRequest, "\(name): \(key) is not a byte sequence of \(size) bytes"))
            }
            if key == "sha-256" { digests.sha256 = Array(bytes) } else { digests.sha512 = Array(bytes) }
        }
        return .success(digests.isEmpty ? nil : digests)
    }

    /// What a request says its body (or, for a resumable upload, its whole representation) will be:
    /// `Repr-Digest`, else `Content-Digest` (without a content coding they describe the same bytes).
    static func expected(_ head: HTTPRequestHead) -> Result<DigestFields?, ShareError> {
        if head["repr-digest"] != nil { return parse(head["repr-digest"], name: "Repr-Digest") }
        return parse(head["content-digest"], name: "Content-Digest")
    }

    /// Where an upload made of several requests keeps its `Repr-Digest` and `Want-Repr-Digest` until it completes.
    static let reprKey = "sharepipe.repr-digest"
    static let wantKey = "sharepipe.want-repr-digest"

    /// The one stored copy's SHA-256 of a receipt (a share of one attachment), in hex.
    static func stored(_ receipt: ShareReceipt) -> String? {
        receipt.attachments.count == 1 ? receipt.attachments[0].sha256 : nil
    }

    /// `Repr-Digest` of the stored bytes, when the request asked for it (`Want-Repr-Digest` not refusing sha-256).
    static func answer(want: String?, sha256Hex: String?) -> [(String, String)] {
        guard let want = want?.lowercased(), let sha256Hex,
            !want.replacingOccurrences(of: " ", with: "").contains("sha-256=0")
        else { return [] }
        let bytes = stride(from: 0, to: sha256Hex.utf8.count - 1, by: 2).compactMap { offset -> UInt8? in
            let start = sha256Hex.index(sha256Hex.startIndex, offsetBy: offset)
            return UInt8(sha256Hex[start..<sha256Hex.index(start, offsetBy: 2)], radix: 16)
        }
        return [("Repr-Digest", "sha-256=:" + Data(bytes).base64EncodedString() + ":")]
    }

    /// A file's SHA-256 in hex, read back.
    static func sha256(ofFile path: String) throws -> String {
        let digest = MessageDigest(.sha256)
        try read(path) { digest.update($0) }
        return hex(digest.finalize())
    }

    private static func read(_ path: String, _ body: (UnsafeRawBufferPointer) -> Void) throws {
        let file = try FileDescriptor.openForReading(path)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let read = try System.read(descriptor: file.rawValue, into: buffer, at: offset)
            if read == 0 { break }
            body(UnsafeRawBufferPointer(rebasing: buffer[..<read]))
            offset += Int64(read)
        }
    }

    /// An incremental check of bytes against these digests.
    final class Check: @unchecked Sendable {
        private let expected: DigestFields
        private let sha256: MessageDigest?
        private let sha512: MessageDigest?

        init(_ expected: DigestFields) {
            self.expected = expected
            sha256 = expected.sha256 == nil ? nil : MessageDigest(.sha256)
            sha512 = expected.sha512 == nil ? nil : MessageDigest(.sha512)
        }

        func update(_ bytes: UnsafeRawBufferPointer) {
            sha256?.update(bytes)
            sha512?.update(bytes)
        }

        /// Whether every digest given matches; call once.
        func matches() -> Bool {
            let sha256Matches = sha256.map { $0.finalize() == expected.sha256 } ?? true
            let sha512Matches = sha512.map { $0.finalize() == expected.sha512 } ?? true
            return sha256Matches && sha512Matches
        }

        /// Whether a file's bytes match (read back, for an upload made of several requests).
        static func file(_ path: String, matches expected: DigestFields) throws -> Bool {
            let check = Check(expected)
            try DigestFields.read(path) { check.update($0) }
            return check.matches()
        }
    }
}
