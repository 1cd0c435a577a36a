import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// SPEC Types, rules (a)-(f): a sniff may only contradict a declared type. Real files whose names tell the truth
/// pass; every lie is still refused. Content is sniffed by the real libmagic wherever a sample can be made.
@Suite struct CompatibilityRulesTests {
    let registry = TypeRegistry.standard

    /// The committed fixture `name` under Fixtures/files.
    static func fixture(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path + "/Fixtures/files/" + name
    }

    static func text(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The bytes of a committed fixture, empty when it is missing (which the tests using it then report).
    static func fixtureBytes(_ name: String) -> [UInt8] {
        FileManager.default.contents(atPath: fixture(name)).map(Array.init) ?? []
    }

    /// A ZIP local file header for `META-INF/MANIFEST.MF`, stored: what libmagic sees of most JAR files.
    static let jarBytes: [UInt8] = {
        let name = Array("META-INF/MANIFEST.MF".utf8)
        let body = Array("Manifest-Version: 1.0\n".utf8)
        var bytes: [UInt8] = [0x50, 0x4B, 0x03, 0x04, 0x0A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x21, 0x00]
        bytes += [0x00, 0x00, 0x00, 0x00]
        for value in [UInt32(body.count), UInt32(body.count)] {
            bytes += withUnsafeBytes(of: value.littleEndian, Array.init)
        }
        bytes += withUnsafeBytes(of: UInt16(name.count).littleEndian, Array.init) + [0x00, 0x00]
        return bytes + name + body
    }()

    /// A gzip header (deflate, no name, no time) and a body: what libmagic sees of an `.svgz`, since it never
    /// looks inside the compression.
    static let svgzBytes: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03]
        + [UInt8](repeating: 0x4B, count: 48)

    static let pdfBytes = text("%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")
    static let html = "<!DOCTYPE html>\n<html><head><title>t</title></head><body><p>hello</p></body></html>\n"
    static let pem = "-----BEGIN CERTIFICATE-----\nMIIBszCCARygAwIBAgIUQ2VydGlmaWNhdGUgZm9yIHRlc3Rz\n"
        + "-----END CERTIFICATE-----\n"
    static let xbm = "#define x_width 8\n#define x_height 2\nstatic unsigned char x_bits[] = {\n   0xff, 0x00};\n"
    static let xhtml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
        <html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body><p>x</p></body></html>

        """

    /// Samples whose sniff must name their own format again: (what, content, the format's identifier).
    static let formatSamples: [(String, [UInt8], String)] = [
        ("JavaScript", text("\"use strict\";\nfunction add(a, b) {\n  return a + b;\n}\nmodule.exports = add;\n"),
            "com.netscape.javascript-source"),
        ("node script", text("#!/usr/bin/env node\nconsole.log(\"hi\");\n"), "com.netscape.javascript-source"),
        ("C source", text("#include <stdio.h>\n\nint main(void)\n{\n    return 0;\n}\n"), "public.c-source"),
        ("shell script", text("#!/bin/sh\necho hi\n"), "public.shell-script"),
        ("Python script", text("#!/usr/bin/env python3\nimport sys\n\ndef main():\n    print(sys.argv)\n"),
            "public.python-script"),
        ("XPM", text("/* XPM */\nstatic char * x_xpm[] = {\n\"2 1 1 1\",\n\"  c None\",\n\"  \"};\n"),
            "org.x.xpixmap-image"),
        ("PostScript", text("%!PS-Adobe-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n"), "com.adobe.postscript"),
        ("SVG", text("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1\" height=\"1\"/>\n"),
            "public.svg-image"),
        ("gettext source", text("msgid \"\"\nmsgstr \"\"\n\"Content-Type: text/plain; charset=UTF-8\\n\"\n\n"
            + "msgid \"Hello\"\nmsgstr \"Hallo\"\n"), "org.gnu.gettext.po"),
        ("gettext catalogue", [0xDE, 0x12, 0x04, 0x95] + [UInt8](repeating: 0, count: 8) + [28, 0, 0, 0, 28]
            + [UInt8](repeating: 0, count: 11), "org.gnu.gettext.mo"),
        ("XML", text("<?xml version=\"1.0\"?>\n<project><modelVersion>4.0.0</modelVersion></project>\n"),
            "public.xml"),
        ("one-byte note", text("x"), "public.plain-text"),
        ("PDF", pdfBytes, "com.adobe.pdf"),
        ("HTML", text(html), "public.html"),
    ]

    /// The committed fixtures and the format each one is.
    static let fixtureFormats: [(String, String)] = [
        ("photo.jpg", "public.jpeg"), ("image.png", "public.png"), ("anim.gif", "com.compuserve.gif"),
        ("photo.heic", "public.heic"), ("image.webp", "org.webmproject.webp"), ("scan.tiff", "public.tiff"),
        ("document.pdf", "com.adobe.pdf"), ("notes.txt", "public.plain-text"),
        ("notes-utf16.txt", "public.plain-text"), ("page.html", "public.html"), ("data.json", "public.json"),
        ("table.csv", "public.comma-separated-values-text"), ("contact.vcf", "public.vcard"),
        ("bundle.zip", "public.zip-archive"), ("notes.txt.gz", "org.gnu.gnu-zip-archive"),
        ("clip.mp4", "public.mpeg-4"), ("tone.mp3", "public.mp3"), ("tone.wav", "com.microsoft.waveform-audio"),
    ]

    func sniffedType(_ bytes: [UInt8]) throws -> String {
        registry.sniffedType(forMIMEType: try Magic.shared.mimeType(of: bytes), head: bytes)
    }

    func compatible(_ bytes: [UInt8], as declared: String) throws -> Bool {
        let mimeType = try Magic.shared.mimeType(of: bytes)
        return registry.isCompatible(sniffedMIMEType: mimeType, declaredType: declared, head: bytes)
    }

    @Test func everySampleSniffsAsItsOwnFormat() throws {
        for (what, bytes, format) in Self.formatSamples {
            #expect(try sniffedType(bytes) == format, "\(what)")
            #expect(try compatible(bytes, as: format), "\(what)")
        }
    }

    @Test func everyFixtureSniffsAsTheTypeItsNameDeclares() throws {
        for (name, format) in Self.fixtureFormats {
            let sniffed = try TypeSniffer.sniff(path: Self.fixture(name))
            #expect(sniffed.typeIdentifier == format, "\(name): \(sniffed.mimeType)")
            let declared = registry.type(forFilenameExtension: (name as NSString).pathExtension)
            #expect(registry.conforms(format, to: declared), "\(name) is declared \(declared)")
        }
    }

    @Test func libmagicAliasesNameTheirFormat() {
        let expected = [
            "application/javascript": "com.netscape.javascript-source",
            "application/x-sh": "public.shell-script",
            "text/x-c": "public.c-source",
            "text/x-c++": "public.c-plus-plus-source",
            "text/x-asm": "public.assembly-source",
            "text/x-java": "com.sun.java-source",
            "application/java-archive": "com.sun.java-archive",
            "image/x-xpixmap": "org.x.xpixmap-image",
            "image/x-xbitmap": "public.xbitmap-image",
            "image/x-eps": "com.adobe.encapsulated-postscript",
            "application/vnd.iccprofile": "com.apple.colorsync-profile",
            "application/x-gettext-translation": "org.gnu.gettext.mo",
            "text/markdown": "net.daringfireball.markdown",
            "font/x-postscript-pfb": "com.adobe.postscript-pfb-font",
            "font/sfnt": "public.font",
        ]
        for (mime, type) in expected {
            #expect(registry.sniffedType(forMIMEType: mime) == type, "\(mime)")
        }
    }

    @Test(arguments: [
        ("a JAR seen as ZIP", jarBytes, "com.sun.java-archive"),
        ("EPS seen as PostScript", text("%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 1 1\n"),
            "com.adobe.encapsulated-postscript"),
        ("XHTML seen as XML", text(xhtml), "public.xhtml"),
        ("XHTML named .html", text(xhtml), "public.html"),
        ("a PEM certificate", text(pem), "public.x509-certificate"),
        ("an XBM bitmap", text(xbm), "public.xbitmap-image"),
        ("a PostScript resource", text("/Resource findresource\n"), "com.adobe.postscript"),
        ("an .svgz", svgzBytes, "public.svg-image"),
        ("HTML named .txt", text(html), "public.plain-text"),
        ("a one-byte note", text("x"), "public.plain-text"),
        ("a URL shared as text", text("https://example.com/page?id=1\n"), "public.url"),
        ("a bare URL", text("https://example.com/"), "public.url"),
        ("CSS libmagic takes for assembly", text("body {\n  color: red;\n}\n.a:b { x: y }\n"), "public.css"),
        ("Markdown", text("# Title\n\nSome *text*.\n"), "net.daringfireball.markdown"),
        ("SQL", text("SELECT a FROM b;\n"), "org.iso.sql"),
        ("a C++ header", text("#include <vector>\nclass A { public: int x; };\n"), "public.c-header"),
        ("a DER certificate", SniffingTests.noiseBytes, "public.x509-certificate"),
    ])
    func truthfulContentIsAccepted(what: String, bytes: [UInt8], declared: String) throws {
        #expect(try compatible(bytes, as: declared), "\(what)")
    }

    /// Lies: (what, content, the type the name declares).
    static let lies: [(String, [UInt8], String)] = [
        ("text named .jpg", text("Meet at noon.\n"), "public.jpeg"),
        ("random bytes named .png", SniffingTests.noiseBytes, "public.png"),
        ("a PDF named .jpg", pdfBytes, "public.jpeg"),
        ("HTML named .pdf", text(html), "com.adobe.pdf"),
        ("a PNG declared as JPEG", pngBytes, "public.jpeg"),
        ("gzip named .png", svgzBytes, "public.png"),
        ("a ZIP named .jpg", jarBytes, "public.jpeg"),
        ("binary junk named .txt", SniffingTests.noiseBytes, "public.plain-text"),
        ("binary junk named .xbm", SniffingTests.noiseBytes, "public.xbitmap-image"),
        ("binary junk named .ps", SniffingTests.noiseBytes, "com.adobe.postscript"),
        ("a one-byte note named .png", text("x"), "public.png"),
        ("text named .zip", text("Meet at noon.\n"), "public.zip-archive"),
        ("a JPEG named .pem", jpegBytes, "public.x509-certificate"),
        ("a PNG named .txt", pngBytes, "public.plain-text"),
        ("a JPEG named .md", jpegBytes, "net.daringfireball.markdown"),
        ("a GIF named .txt", fixtureBytes("anim.gif"), "public.plain-text"),
        ("a PDF named .txt", fixtureBytes("document.pdf"), "public.plain-text"),
        ("a ZIP named .md", jarBytes, "net.daringfireball.markdown"),
        ("UTF-16 text named .png", [0xFF, 0xFE] + Array("note".utf16.flatMap { [UInt8($0), 0] }), "public.png"),
    ]

    @Test(arguments: lies)
    func liesAreRefused(what: String, bytes: [UInt8], declared: String) throws {
        #expect(try !compatible(bytes, as: declared), "\(what)")
    }

    @Test func containersAndGeneralFormsAcceptTheirDescendants() {
        let zipHead = Self.jarBytes
        #expect(registry.isCompatible(
            sniffedMIMEType: "application/zip", declaredType: "org.openxmlformats.wordprocessingml.document",
            head: zipHead))
        #expect(registry.isCompatible(
            sniffedMIMEType: "application/zip", declaredType: "org.idpf.epub-container", head: zipHead))
        #expect(registry.isCompatible(
            sniffedMIMEType: "font/sfnt", declaredType: "public.opentype-font", head: [0, 1, 0, 0]))
        #expect(!registry.isCompatible(
            sniffedMIMEType: "application/zip", declaredType: "com.adobe.pdf", head: zipHead))
    }

    /// An inbox drop's declared types: the name's type, then the sniffed one when it says more; a lie declares the
    /// name's type alone, so that the loader refuses it instead of falling back to the sniff.
    @Test func inboxDropsDeclareTheMostInformativeTypes() async throws {
        try await withTemporaryDirectory { directory in
            let pom = Self.text("<?xml version=\"1.0\"?>\n<project><modelVersion>4.0.0</modelVersion></project>\n")
            let expectations: [(String, [UInt8], [String])] = [
                ("library.pom", pom, ["public.xml", "dyn.ext.pom"]),
                ("README.md", Self.text("# Title\n\nSome *text*.\n"), ["net.daringfireball.markdown"]),
                ("photo.jpg", Self.text("Meet at noon.\n"), ["public.jpeg"]),
                ("image.jpg", pngBytes, ["public.jpeg"]),
                ("note", Self.text("x"), ["public.plain-text"]),
                ("blob.sharepipe-unknown", SniffingTests.noiseBytes, ["dyn.ext.sharepipe-unknown"]),
                ("page.txt", Self.text(Self.html), ["public.plain-text"]),
                ("page.html", Self.text(Self.html), ["public.html"]),
                ("settings.conf", Self.text("a = 1\n"), ["org.freedesktop.config-text"]),
            ]
            for (name, bytes, types) in expectations {
                let provider = FileItemProvider(path: try writeFile(directory + "/" + name, bytes))
                #expect(provider.registeredTypeIdentifiers == types, "\(name)")
            }
        }
    }

    /// Rule (f), text stays text: notes whose first letters look like a signature to libmagic.
    static let signatureLookalikes: [(String, String)] = [
        ("a note that begins GIF89a", "GIF89a is the GIF version this note is about.\n"),
        ("a note that begins MZ", "MZ was the first thing on the whiteboard.\n"),
        ("a note that begins %PDF", "%PDF-1.7 files are what the printer wants.\n"),
        ("a note that begins PK", "PK\u{3}\u{4} is how a ZIP starts, says the note.\n"),
        ("a note that begins with the ELF magic", "\u{7F}ELF headers come first.\n"),
    ]

    @Test func textWhoseFirstLettersLookLikeASignatureStaysText() throws {
        for (what, note) in Self.signatureLookalikes {
            let bytes = Self.text(note)
            let mimeType = try Magic.shared.mimeType(of: bytes)
            for declared in ["public.plain-text", "net.daringfireball.markdown", "public.text"] {
                #expect(registry.isCompatible(sniffedMIMEType: mimeType, declaredType: declared, head: bytes),
                    "\(what) declared \(declared), sniffed \(mimeType)")
            }
            // Still not an image: the rule is about textual declared types only.
            #expect(!registry.isCompatible(sniffedMIMEType: "text/plain", declaredType: "public.png", head: bytes))
        }
        // libmagic does read these as signatures, so the rule is what lets them through.
        #expect(try Magic.shared.mimeType(of: Self.text(Self.signatureLookalikes[0].1)) == "image/gif")
    }

    /// One of 2,000 text files: base64, hex or prose (with accented letters), 1 byte to 8 KiB, the same on every
    /// run.
    static func generatedText(_ index: Int) -> [UInt8] {
        var state = UInt64(index) &* 0x9E37_79B9_7F4A_7C15 | 1
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let length = 1 + next(8192)
        var text = ""
        switch index % 3 {
        case 0:
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
            while text.utf8.count < length {
                text.append(alphabet[next(64)])
                if text.utf8.count % 77 == 76 { text.append("\n") }
            }
        case 1:
            let digits = Array(next(2) == 0 ? "0123456789abcdef" : "0123456789ABCDEF")
            while text.utf8.count < length {
                text.append(digits[next(16)])
                if next(40) == 0 { text.append(next(2) == 0 ? "\n" : " ") }
            }
        default:
            let words = ["the", "café", "naïve", "Straße", "over", "meeting", "at", "noon", "déjà", "vu", "and",
                "GIF89a", "MZ", "PK", "übersetzt", "résumé", "one", "two", "—", "data"]
            while text.utf8.count < length {
                text += words[next(words.count)] + (next(9) == 0 ? ".\n" : " ")
            }
        }
        return Array(text.utf8)
    }

    /// Issue 21: of 1,500 random base64 notes named `.txt`, libmagic took 3 for HP-GL and they were refused. 2,000
    /// generated base64, hex and prose files named `.txt` and `.md`: none is refused, whatever libmagic's full
    /// database says of them, and a drop of each declares its name's type.
    @Test func generatedTextNamedTxtOrMdIsNeverRefused() async throws {
        try await withTemporaryDirectory { directory in
            var refused: [String] = []
            var notPlain: [String: Int] = [:]
            for index in 0..<2_000 {
                let name = "note-\(index)." + (index % 2 == 0 ? "txt" : "md")
                let declared = index % 2 == 0 ? "public.plain-text" : "net.daringfireball.markdown"
                let bytes = Self.generatedText(index)
                let fullSniff = try Magic.shared.mimeType(of: bytes)
                if fullSniff != "text/plain" { notPlain[fullSniff, default: 0] += 1 }
                if !registry.isCompatible(sniffedMIMEType: fullSniff, declaredType: declared, head: bytes) {
                    refused.append("\(name): \(fullSniff)")
                }
                let provider = FileItemProvider(path: try writeFile(directory + "/" + name, bytes))
                if provider.registeredTypeIdentifiers != [declared] {
                    refused.append("\(name) declares \(provider.registeredTypeIdentifiers)")
                }
            }
            print("generated text: libmagic's full database named \(notPlain) among 2,000 files")
            #expect(refused.isEmpty, "\(refused.prefix(10))")
        }
    }
}
