import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite struct BuiltinTypesTests {
    let registry = TypeRegistry.standard
    let table = TypeDeclaration.builtin

    /// The abstract bases Apple declares without parents (see `TypeDeclaration.builtin`).
    static let documentedRoots: Set<String> = [
        "public.item", "public.content", "public.archive", "public.executable", "public.message", "public.contact",
        "public.calendar-event", "public.to-do-item", "public.database", "public.bookmark", "public.playlist",
        "com.apple.resolvable",
    ]

    @Test func tableIsLargeAndIdentifiersAreUnique() {
        #expect(table.count >= 120)
        let identifiers = table.map { $0.identifier.lowercased() }
        #expect(Set(identifiers).count == identifiers.count)
        #expect(registry.allDeclarations.count == table.count)
    }

    @Test func everyParentIsDeclared() {
        let identifiers = Set(table.map(\.identifier))
        for declaration in table {
            for parent in declaration.conformsTo {
                #expect(identifiers.contains(parent), "\(declaration.identifier) conforms to undeclared \(parent)")
            }
        }
    }

    @Test func everyTypeReachesItemOrADocumentedRoot() {
        for declaration in table {
            let type = declaration.identifier
            let reachesRoot = Self.documentedRoots.contains { registry.conforms(type, to: $0) }
            #expect(registry.conforms(type, to: "public.item") || reachesRoot, "\(type) is unrooted")
        }
        let parentless = Set(table.filter { $0.conformsTo.isEmpty }.map(\.identifier))
        #expect(parentless == Self.documentedRoots)
    }

    @Test func graphHasNoCyclesAndConformanceMatchesSupertypes() throws {
        _ = try TypeRegistry(declarations: [])
        for declaration in table {
            let type = declaration.identifier
            let ancestors = registry.supertypes(of: type)
            #expect(!ancestors.contains(type), "\(type) is its own ancestor")
            for other in table.map(\.identifier) {
                let expected = other == type || ancestors.contains(other)
                #expect(registry.conforms(type, to: other) == expected, "\(type) vs \(other)")
            }
        }
    }

    @Test func tagsAreWellFormed() {
        for declaration in table {
            for tag in declaration.filenameExtensions {
                #expect(!tag.isEmpty && !tag.hasPrefix(".") && tag == tag.lowercased(), "\(declaration.identifier)")
            }
            for tag in declaration.mimeTypes {
                #expect(tag.contains("/") && !tag.contains(";") && tag == tag.lowercased(), "\(declaration.identifier)")
            }
        }
    }

    @Test func everySpecFamilyIsDeclared() {
        let required = [
            "public.item", "public.content", "public.data", "public.directory", "public.folder", "public.volume",
            "com.apple.package", "com.apple.bundle", "public.text", "public.plain-text", "public.utf8-plain-text",
            "public.utf16-plain-text", "public.utf16-external-plain-text", "public.utf8-tab-separated-values-text",
            "public.rtf", "public.html", "public.xml", "public.json", "public.yaml", "public.source-code",
            "public.c-source", "public.c-plus-plus-source", "public.swift-source", "public.python-script",
            "public.shell-script", "com.netscape.javascript-source", "public.delimited-values-text",
            "public.comma-separated-values-text", "public.tab-separated-values-text", "public.vcard",
            "com.apple.ical.ics", "public.log", "public.image", "public.jpeg", "public.png", "com.compuserve.gif",
            "public.tiff", "com.microsoft.bmp", "com.microsoft.ico", "public.svg-image", "org.webmproject.webp",
            "public.heif-standard", "public.heic", "public.heif", "public.heics", "public.camera-raw-image",
            "public.jpeg-2000", "com.ilm.openexr-image", "public.avif", "com.adobe.photoshop-image", "com.apple.icns",
            "com.adobe.pdf", "public.audiovisual-content", "public.movie", "public.video", "public.audio",
            "public.mpeg-4", "public.mpeg-4-audio", "public.mp3", "com.microsoft.waveform-audio", "public.aiff-audio",
            "public.midi-audio", "com.apple.quicktime-movie", "public.avi", "public.mpeg", "public.mpeg-2-video",
            "public.3gpp", "com.apple.m4a-audio", "org.xiph.flac", "public.archive", "public.zip-archive",
            "org.gnu.gnu-zip-archive", "public.bzip2-archive", "public.tar-archive", "org.7-zip.7-zip-archive",
            "com.apple.disk-image", "public.url", "public.file-url", "public.url-name", "public.contact",
            "public.message", "public.email-message", "public.executable", "public.unix-executable",
            "public.presentation", "public.spreadsheet", "org.openxmlformats.wordprocessingml.document",
            "org.openxmlformats.spreadsheetml.sheet", "org.openxmlformats.presentationml.presentation",
            "com.microsoft.word.doc", "org.idpf.epub-container", "public.font", "public.3d-content",
            "public.database",
        ]
        for identifier in required {
            #expect(registry.declaration(for: identifier) != nil, "\(identifier) is missing")
        }
    }

    @Test func knownTrapsHold() throws {
        let heic = try #require(registry.declaration(for: "public.heic"))
        let heif = try #require(registry.declaration(for: "public.heif"))
        #expect(heic.conformsTo == ["public.heif-standard"])
        #expect(heif.conformsTo == ["public.heif-standard"])
        #expect(!registry.conforms("public.heic", to: "public.heif"))
        #expect(!registry.conforms("public.heif", to: "public.heic"))
        #expect(registry.conforms("public.heic", to: "public.image"))

        #expect(registry.declaration(for: "public.folder")?.conformsTo == ["public.directory"])
        #expect(registry.declaration(for: "public.directory")?.conformsTo == ["public.item"])
        #expect(!registry.conforms("public.folder", to: "public.data"))
        #expect(registry.conforms("public.folder", to: "public.item"))

        #expect(Set(try #require(registry.declaration(for: "public.text")).conformsTo)
            == ["public.data", "public.content"])
        #expect(registry.declaration(for: "public.item")?.conformsTo == [])
        #expect(registry.declaration(for: "public.content")?.conformsTo == [])
        #expect(registry.declaration(for: "public.vcard").map { $0.conformsTo.contains("public.text") } == true)
        #expect(registry.conforms("public.utf8-tab-separated-values-text", to: "public.delimited-values-text"))
        #expect(registry.conforms("com.apple.m4a-audio", to: "public.audio"))
        #expect(registry.conforms("public.zip-archive", to: "public.archive"))
        #expect(registry.conforms("com.adobe.pdf", to: "public.composite-content"))
    }

    @Test func extensionLookupsPreferPublicTypes() throws {
        #expect(registry.type(forFilenameExtension: "jpg") == "public.jpeg")
        #expect(registry.type(forFilenameExtension: "HEIC") == "public.heic")
        #expect(registry.type(forFilenameExtension: "txt") == "public.plain-text")
        #expect(registry.type(forFilenameExtension: "csv") == "public.comma-separated-values-text")
        #expect(registry.type(forFilenameExtension: "webp") == "org.webmproject.webp")
        #expect(registry.type(forFilenameExtension: "mp4") == "public.mpeg-4")
        #expect(registry.type(forFilenameExtension: "mp4", conformingTo: "public.audio") == "public.mpeg-4-audio")
        #expect(registry.type(forFilenameExtension: "vcf") == "public.vcard")
        #expect(registry.type(forFilenameExtension: "eml") == "com.apple.mail.email")
        #expect(registry.type(forFilenameExtension: "docx") == "org.openxmlformats.wordprocessingml.document")

        let unknown = registry.type(forFilenameExtension: "Sharepipe")
        #expect(unknown.hasPrefix("dyn."))
        let (tagClass, tag) = try #require(TypeRegistry.tag(ofDynamic: unknown))
        #expect(tagClass == .filenameExtension && tag == "sharepipe")
        #expect(registry.preferredFilenameExtension(for: unknown) == "sharepipe")
        #expect(registry.type(forFilenameExtension: "png", conformingTo: "public.audio").hasPrefix("dyn."))
    }

    @Test func mimeLookupsIgnoreParametersAndCase() throws {
        #expect(registry.type(forMIMEType: "text/plain; charset=utf-8") == "public.plain-text")
        #expect(registry.type(forMIMEType: "IMAGE/JPEG") == "public.jpeg")
        #expect(registry.type(forMIMEType: "image/heic") == "public.heic")
        #expect(registry.type(forMIMEType: "application/json") == "public.json")
        #expect(registry.type(forMIMEType: "text/csv;header=present") == "public.comma-separated-values-text")
        #expect(registry.type(forMIMEType: "audio/3gpp") == "public.3gpp")
        #expect(registry.type(forMIMEType: "application/x-msdownload", conformingTo: "public.executable")
            == "com.microsoft.windows-executable")
        #expect(registry.type(forMIMEType: "application/pdf", conformingTo: "public.image").hasPrefix("dyn."))

        let unknown = registry.type(forMIMEType: "application/x-Sharepipe+thing; q=1")
        let (tagClass, tag) = try #require(TypeRegistry.tag(ofDynamic: unknown))
        #expect(tagClass == .mimeType && tag == "application/x-sharepipe+thing")
        #expect(registry.preferredMIMEType(for: unknown) == "application/x-sharepipe+thing")
    }

    @Test func preferredTagsComeFirst() {
        #expect(registry.preferredFilenameExtension(for: "public.jpeg") == "jpeg")
        #expect(registry.preferredFilenameExtension(for: "public.heic") == "heic")
        #expect(registry.preferredFilenameExtension(for: "com.adobe.pdf") == "pdf")
        #expect(registry.preferredFilenameExtension(for: "public.image") == nil)
        #expect(registry.preferredMIMEType(for: "public.jpeg") == "image/jpeg")
        #expect(registry.preferredMIMEType(for: "public.mp3") == "audio/mpeg")
        #expect(registry.preferredMIMEType(for: "public.text") == nil)
        #expect(registry.preferredMIMEType(for: "com.apple.icns") == nil)
    }
}
