import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite struct SniffingTests {
    let registry = TypeRegistry.standard

    /// 512 bytes from a fixed linear congruential sequence: no signature and not text, the same on every run.
    static let noiseBytes: [UInt8] = {
        var state: UInt32 = 0x5348_5250
        return (0..<512).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
    }()

    func sniff(_ bytes: [UInt8]) throws -> String {
        try Magic.shared.mimeType(of: bytes)
    }

    func sniff(_ text: String) throws -> String {
        try sniff(Array(text.utf8))
    }

    /// Whether `bytes`, sniffed for real, may be passed on as `declared`.
    func compatible(_ bytes: [UInt8], as declared: String) throws -> Bool {
        registry.isCompatible(sniffedMIMEType: try sniff(bytes), declaredType: declared, head: bytes)
    }

    func compatible(_ text: String, as declared: String) throws -> Bool {
        try compatible(Array(text.utf8), as: declared)
    }

    /// Text is valid UTF-8 without NUL; a head cut at the sniff length may end inside a character.
    @Test func textIsValidUTF8WithoutNUL() {
        #expect(TypeRegistry.looksLikeText(Array("plain ASCII\n".utf8)))
        #expect(TypeRegistry.looksLikeText(Array("Grüße, 中文, 🚀".utf8)))
        #expect(!TypeRegistry.looksLikeText([]))
        #expect(!TypeRegistry.looksLikeText(Array("a\u{0}b".utf8)))
        // A byte never in UTF-8, an overlong form, a surrogate, a cut character, a lone continuation, past U+10FFFF.
        let invalids: [[UInt8]] = [
            [0x61, 0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE4, 0xB8], [0x80], [0xF4, 0x90, 0x80, 0x80],
        ]
        for invalid in invalids {
            #expect(!TypeRegistry.looksLikeText(invalid), "\(invalid)")
        }
        let cut = Array(repeating: UInt8(ascii: "a"), count: Sniffer.sniffLength - 2) + [0xE4, 0xB8]
        #expect(TypeRegistry.looksLikeText(cut))
        #expect(!TypeRegistry.looksLikeText(Array(cut.dropLast(3)) + [0xE4, 0xB8]))
    }

    @Test func libmagicNamesMapToDeclaredTypes() {
        let expected = [
            "text/plain": "public.plain-text",
            "text/plain; charset=us-ascii": "public.plain-text",
            "text/x-c": "public.c-source",
            "text/x-makefile": "public.make-source",
            "text/x-m4": "public.text",
            "application/octet-stream": "public.data",
            "inode/x-empty": "public.data",
            "application/x-empty": "public.data",
            "image/jpeg": "public.jpeg",
            "image/x-ms-bmp": "com.microsoft.bmp",
            "image/bmp": "com.microsoft.bmp",
            "audio/x-wav": "com.microsoft.waveform-audio",
            "audio/mpeg": "public.mp3",
            "video/quicktime": "com.apple.quicktime-movie",
            "application/gzip": "org.gnu.gnu-zip-archive",
            "application/x-gzip": "org.gnu.gnu-zip-archive",
            "text/x-shellscript": "public.shell-script",
            "text/xml": "public.xml",
            "image/heic": "public.heic",
            "image/webp": "org.webmproject.webp",
            "text/vcard": "public.vcard",
            "text/x-vcard": "public.vcard",
            "application/csv": "public.comma-separated-values-text",
            "text/csv": "public.comma-separated-values-text",
            "application/json": "public.json",
            "application/pdf": "com.adobe.pdf",
            "application/zip": "public.zip-archive",
        ]
        for (mime, type) in expected {
            #expect(registry.sniffedType(forMIMEType: mime) == type, "\(mime)")
        }
    }

    @Test func unknownSniffedMIMETypesAreDynamic() throws {
        let type = registry.sniffedType(forMIMEType: "application/x-sharepipe-unknown")
        #expect(registry.isDynamic(type))
        let (tagClass, tag) = try #require(TypeRegistry.tag(ofDynamic: type))
        #expect(tagClass == .mimeType && tag == "application/x-sharepipe-unknown")
    }

    @Test func libmagicSniffsTheTestBuffersAsExpected() throws {
        #expect(try sniff(jpegBytes) == "image/jpeg")
        #expect(try sniff(pngBytes) == "image/png")
        #expect(try sniff(Self.noiseBytes) == "application/octet-stream")
        #expect(try registry.sniffedType(forMIMEType: sniff("hello, world\n")) == "public.plain-text")
        #expect(try registry.sniffedType(forMIMEType: sniff([])) == "public.data")
    }

    @Test func signatureContentMatchesItsOwnFamilyOnly() throws {
        #expect(try compatible(jpegBytes, as: "public.jpeg"))
        #expect(try compatible(jpegBytes, as: "public.image"))
        #expect(try !compatible(jpegBytes, as: "public.png"))
        #expect(try !compatible(jpegBytes, as: "public.plain-text"))
        #expect(try compatible(pngBytes, as: "public.png"))
        #expect(try !compatible(pngBytes, as: "com.adobe.pdf"))
    }

    @Test func textIsNeverAnImageButMayBeAnyTextualType() throws {
        let text = "Meet at noon.\nBring the plans.\n"
        #expect(try !compatible(text, as: "public.jpeg"))
        #expect(try !compatible(text, as: "com.adobe.pdf"))
        #expect(try !compatible(text, as: "public.zip-archive"))
        #expect(try compatible(text, as: "public.plain-text"))
        #expect(try compatible(text, as: "public.utf8-plain-text"))
        #expect(try compatible(text, as: "public.comma-separated-values-text"))
        #expect(try compatible(text, as: "public.html"))
    }

    @Test func csvAndJSONPassAsThemselves() throws {
        #expect(try compatible("a,b\n1,2\n", as: "public.comma-separated-values-text"))
        #expect(try compatible("a,b\n1,2\n", as: "public.delimited-values-text"))
        #expect(try compatible(#"{"a":1}"#, as: "public.json"))
        #expect(try compatible(#"{"a":1}"#, as: "public.text"))
        #expect(try !compatible(#"{"a":1}"#, as: "public.png"))
        #expect(try compatible("#!/bin/sh\necho hi\n", as: "public.bash-script"))
        #expect(try compatible("#!/bin/sh\necho hi\n", as: "public.plain-text"))
        #expect(try compatible("<?xml version=\"1.0\"?>\n<plist/>\n", as: "com.apple.xml-property-list"))
    }

    @Test func emptyContentPassesOnlyWithoutASignature() throws {
        #expect(try compatible([], as: "public.plain-text"))
        #expect(try compatible([], as: "public.json"))
        #expect(try compatible([], as: "com.microsoft.word.doc"))
        #expect(try !compatible([], as: "public.png"))
        #expect(try !compatible([], as: "public.heic"))
        #expect(try !compatible([], as: "com.adobe.pdf"))
        #expect(try !compatible([], as: "public.mp3"))
        #expect(try !compatible([], as: "public.zip-archive"))
        #expect(registry.isCompatible(sniffedMIMEType: "inode/x-empty", declaredType: "public.rtf", head: [0x7B]))
    }

    @Test func unrecognisedBytesPassOnlyAsNonTextWithoutASignature() throws {
        #expect(try !compatible(Self.noiseBytes, as: "public.jpeg"))
        #expect(try !compatible(Self.noiseBytes, as: "public.audio"))
        #expect(try !compatible(Self.noiseBytes, as: "public.archive"))
        #expect(try !compatible(Self.noiseBytes, as: "public.plain-text"))
        #expect(try compatible(Self.noiseBytes, as: "com.microsoft.word.doc"))
        #expect(try compatible(Self.noiseBytes, as: "public.font"))
    }

    @Test func typesThatClaimNothingAreAlwaysCompatible() throws {
        let dynamic = registry.type(forFilenameExtension: "sharepipe-unknown")
        for bytes in [jpegBytes, Self.noiseBytes, Array("text\n".utf8), []] {
            #expect(try compatible(bytes, as: dynamic))
            #expect(try compatible(bytes, as: "public.data"))
            #expect(try compatible(bytes, as: "PUBLIC.ITEM"))
        }
        #expect(try !compatible(jpegBytes, as: "com.example.undeclared"))
    }
}
