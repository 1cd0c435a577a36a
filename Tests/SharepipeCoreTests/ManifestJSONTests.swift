import Foundation
import Testing
@testable import SharepipeLedger
@testable import SharepipeSystem

/// manifest.json written and read without Codable: the same bytes as Foundation's `JSONEncoder` (sorted keys,
/// slashes unescaped), the same manifest back, and Foundation's path for what the compact one does not take.
@Suite(.timeLimit(.minutes(2)))
struct ManifestJSONTests {
    /// Every control character but NUL (a title may not hold one; `sourceApp` below does), quotes, backslashes, slashes, multi-byte UTF-8 and an emoji.
    static let awkward: String = {
        var text = (1..<0x20).map { String(Character(Unicode.Scalar(UInt8($0)))) }.joined()
        text += "\"\\/ a/b \u{7F} é 中 🚀 \u{2028}"
        return text
    }()

    static func foundationBytes(_ manifest: Manifest) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(manifest))
    }

    static var manifests: [Manifest] {
        get throws {
            let plain = Manifest(
                shareId: "6F1A3C52-0B7E-4D36-9A55-3E2B1F7C9D10", sourceApp: nil, createdAt: "2026-12-07T14:00:00.123Z",
                policy: .keepSuccessful,
                attachments: [
                    AttachmentRecord(
                        index: 0, status: .copied, fileId: "A1", file: "A1.txt", typeIdentifier: "public.plain-text",
                        declaredTypes: ["public.plain-text", "public.data"], sniffedMimeType: "text/plain",
                        bytes: 4096, sha256: String(repeating: "ab", count: 32), suggestedName: "notes.txt")
                ])
            var every = plain
            every.sourceApp = "com.example.\u{0}\(awkward)"
            every.folder = "scans/\(awkward)"
            every.policy = .allOrNothing
            every.details = try ShareDetails(title: awkward, text: "text \(awkward)", tags: ["b", "a", "ünï"])
            every.attachments = [
                AttachmentRecord(
                    index: 0, status: .copied, fileId: "F0", file: "F0.pdf", typeIdentifier: "com.adobe.pdf",
                    declaredTypes: ["com.adobe.pdf"], sniffedMimeType: "application/pdf", bytes: Int64.max,
                    sha256: "00", suggestedName: awkward,
                    attempts: [
                        .init(type: "public.jpeg", code: .unsupportedType), .init(type: "com.adobe.pdf", code: nil),
                    ],
                    duplicateOf: DuplicateOrigin(shareId: "S", fileId: "F", createdAt: "2026-01-01T00:00:00Z")),
                AttachmentRecord(
                    index: 1, status: .failed, declaredTypes: [],
                    error: .init(code: .io, message: "read failed: \(awkward)")),
                AttachmentRecord(index: 2, status: .rolledBack, fileId: "F2", declaredTypes: ["public.data"], bytes: 0),
            ]
            var empty = plain
            empty.attachments = []
            return [plain, every, empty]
        }
    }

    @Test func writesTheBytesFoundationWrites() throws {
        for manifest in try Self.manifests {
            let compact = try #require(manifest.compactJSON())
            #expect(compact == (try Self.foundationBytes(manifest)))
            #expect(try manifest.encoded() == compact)
        }
    }

    @Test func readsBackWhatEitherWrote() throws {
        for manifest in try Self.manifests {
            #expect(Manifest.compactDecoded(try Self.foundationBytes(manifest)) == manifest)
            #expect(try Manifest.decode(try manifest.encoded()) == manifest)
            // Whitespace, escaped slashes and \u escapes are JSON too.
            let pretty = JSONEncoder()
            pretty.outputFormatting = [.prettyPrinted, .sortedKeys]
            #expect(Manifest.compactDecoded(Array(try pretty.encode(manifest))) == manifest)
        }
        let escaped = #"{"attachments":[],"createdAt":"t","policy":"keep-successful","shareId":"\u0041\ud83d\ude80\/","sourceApp":null,"tags":[]}"#
        #expect(Manifest.compactDecoded(Array(escaped.utf8))?.shareId == "A🚀/")
    }

    @Test func leavesUserInfoAndOddInputToFoundation() throws {
        var manifest = try #require(try Self.manifests.first)
        manifest.details = try ShareDetails(title: "t", userInfo: ["n": .number(1.5), "k": .string("v")])
        #expect(manifest.compactJSON() == nil)
        let bytes = try manifest.encoded()
        #expect(bytes == (try Self.foundationBytes(manifest)))
        #expect(Manifest.compactDecoded(bytes) == nil)
        #expect(try Manifest.decode(bytes) == manifest)

        for malformed in [
            "", "{", "[]", #"{"shareId":"x"}"#, #"{"attachments":[],"createdAt":"t","policy":"x","shareId":"s","tags":[]}"#,
            #"{"attachments":[{"index":1.0,"status":"copied","declaredTypes":[]}],"createdAt":"t","policy":"keep-successful","shareId":"s"}"#,
            #"{"attachments":[],"createdAt":"t","policy":"keep-successful","shareId":"s"} x"#,
            "{\"attachments\":[],\"createdAt\":\"t\u{1}\",\"policy\":\"keep-successful\",\"shareId\":\"s\"}",
        ] {
            #expect(Manifest.compactDecoded(Array(malformed.utf8)) == nil, "\(malformed)")
        }
        #expect(throws: ShareError.self) { try Manifest.decode(Array("{".utf8)) }
    }

    @Test func scannerFollowsTheGrammar() {
        #expect(JSONScanner.parse(Array(#" [1, -0, 2.5, 1e3, 9223372036854775808, true, false, null, {}] "#.utf8))
            == .array([.integer(1), .integer(0), .number(2.5), .number(1000), .number(9223372036854775808),
                       .bool(true), .bool(false), .null, .object([:])]))
        for bad in ["01", "1.", ".5", "-", "1e", "[1,]", "{\"a\"}", "tru", "\"\\x\"", "\"\\ud800\"", "[", "nul",
            "{\"a\":1,\"a\":2}"] {
            #expect(JSONScanner.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(JSONScanner.parse(Array(deep.utf8)) == nil)
        #expect(JSONScanner.parse([0x22, 0xFF, 0x22]) == nil)
    }
}
