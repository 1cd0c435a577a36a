import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite struct TypeLoadingTests {
    enum Format: CaseIterable {
        case json, xmlPropertyList, binaryPropertyList
    }

    /// An app's type declarations: one exported document type and one imported third-party type.
    static let appDeclarations = """
        { "CFBundleIdentifier": "com.example.notes",
          "UTExportedTypeDeclarations": [
            { "UTTypeIdentifier": "com.example.notes.document",
              "UTTypeConformsTo": ["public.data", "public.composite-content"],
              "UTTypeDescription": "Notes document",
              "UTTypeTagSpecification": {
                "public.filename-extension": ["exnote", "exnotes"],
                "public.mime-type": "application/x-example-note" } } ],
          "UTImportedTypeDeclarations": [
            { "UTTypeIdentifier": "org.example.sketch", "UTTypeConformsTo": "public.image",
              "UTTypeTagSpecification": { "public.filename-extension": "exsketch" } } ] }
        """

    /// Writes declarations given as JSON text in `format`: as they are, or converted to an XML or binary plist.
    func write(_ json: String, as format: Format, in dir: String) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8))
        switch format {
        case .json:
            return try writeFile(dir + "/types.json", json)
        case .xmlPropertyList:
            let data = try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
            #expect(data.starts(with: Array("<?xml".utf8)))
            return try writeFile(dir + "/Info.plist", [UInt8](data))
        case .binaryPropertyList:
            let data = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
            #expect(data.starts(with: Array("bplist".utf8)))
            return try writeFile(dir + "/Binary-Info.plist", [UInt8](data))
        }
    }

    /// Loads declarations given as JSON text, written in `format`, and returns the error loading fails with.
    func loadingError(_ json: String, as format: Format = .json) async throws -> TypeDeclarationError? {
        try await withTemporaryDirectory { dir in
            let path = try write(json, as: format, in: dir)
            return #expect(throws: TypeDeclarationError.self) { try TypeRegistry(contentsOfFile: path) }
        }
    }

    /// A file exporting one declaration, given as a JSON object.
    func exported(_ entry: String) -> String {
        "{\"UTExportedTypeDeclarations\": [\(entry)]}"
    }

    @Test(arguments: Format.allCases)
    func jsonXMLAndBinaryPropertyListsLoadAlike(format: Format) async throws {
        try await withTemporaryDirectory { dir in
            let path = try write(Self.appDeclarations, as: format, in: dir)
            let registry = try TypeRegistry(contentsOfFile: path)
            let note = try #require(registry.declaration(for: "com.example.notes.document"))
            #expect(note.conformsTo == ["public.data", "public.composite-content"])
            #expect(note.description == "Notes document")
            #expect(note.filenameExtensions == ["exnote", "exnotes"])
            #expect(note.mimeTypes == ["application/x-example-note"])
            #expect(registry.type(forFilenameExtension: "EXNOTES") == "com.example.notes.document")
            #expect(registry.type(forMIMEType: "application/x-example-note") == "com.example.notes.document")
            #expect(registry.conforms("com.example.notes.document", to: "public.content"))
            #expect(registry.type(forFilenameExtension: "exsketch") == "org.example.sketch")
            #expect(registry.conforms("org.example.sketch", to: "public.image"))
            #expect(registry.type(forFilenameExtension: "jpg") == "public.jpeg")
            #expect(registry.allDeclarations.count == TypeDeclaration.builtin.count + 2)
        }
    }

    @Test func aSymlinkToTheDeclarationsFileIsFollowed() async throws {
        try await withTemporaryDirectory { dir in
            let target = try write(Self.appDeclarations, as: .xmlPropertyList, in: dir)
            try FileManager.default.createSymbolicLink(atPath: dir + "/linked.plist", withDestinationPath: target)
            let registry = try TypeRegistry(contentsOfFile: dir + "/linked.plist")
            #expect(registry.type(forFilenameExtension: "exnote") == "com.example.notes.document")
        }
    }

    @Test func exportedDeclarationWinsOverImported() async throws {
        let json = """
            { "UTImportedTypeDeclarations": [
                { "UTTypeIdentifier": "com.example.shared", "UTTypeConformsTo": ["public.text"],
                  "UTTypeTagSpecification": { "public.filename-extension": ["imported"] } } ],
              "UTExportedTypeDeclarations": [
                { "UTTypeIdentifier": "com.example.shared", "UTTypeConformsTo": ["public.image"],
                  "UTTypeTagSpecification": { "public.filename-extension": ["exported"] } } ] }
            """
        try await withTemporaryDirectory { dir in
            let registry = try TypeRegistry(contentsOfFile: write(json, as: .xmlPropertyList, in: dir))
            #expect(registry.declaration(for: "com.example.shared")?.conformsTo == ["public.image"])
            #expect(registry.conforms("com.example.shared", to: "public.image"))
            #expect(!registry.conforms("com.example.shared", to: "public.text"))
            #expect(registry.type(forFilenameExtension: "exported") == "com.example.shared")
            #expect(registry.type(forFilenameExtension: "imported").hasPrefix("dyn."))
        }
    }

    @Test func importedBuiltinTypesKeepTheSystemDeclaration() async throws {
        let json = """
            { "UTImportedTypeDeclarations": [
                { "UTTypeIdentifier": "com.adobe.pdf", "UTTypeConformsTo": ["public.data"],
                  "UTTypeTagSpecification": { "public.filename-extension": ["pdf"] } },
                { "UTTypeIdentifier": "public.heic", "UTTypeConformsTo": ["public.image"] } ] }
            """
        try await withTemporaryDirectory { dir in
            let registry = try TypeRegistry(contentsOfFile: write(json, as: .json, in: dir))
            #expect(registry.conforms("com.adobe.pdf", to: "public.composite-content"))
            #expect(registry.conforms("public.heic", to: "public.heif-standard"))
            #expect(registry.allDeclarations.count == TypeDeclaration.builtin.count)
        }
    }

    @Test func missingIdentifierNamesTheEntry() async throws {
        let error = try await loadingError(
            #"{"UTImportedTypeDeclarations": [{"UTTypeConformsTo": ["public.data"]}]}"#, as: .binaryPropertyList)
        #expect(error?.message.contains("UTImportedTypeDeclarations[0]") == true)
        #expect(error?.message.contains("UTTypeIdentifier") == true)
    }

    @Test func wrongValueTypesNameTheIdentifierAndKey() async throws {
        let badParents = try await loadingError(
            exported(#"{"UTTypeIdentifier": "com.example.bad", "UTTypeConformsTo": 42}"#), as: .xmlPropertyList)
        #expect(badParents?.message.contains("com.example.bad") == true)
        #expect(badParents?.message.contains("UTTypeConformsTo") == true)

        let badTags = try await loadingError(exported("""
            {"UTTypeIdentifier": "com.example.tags", "UTTypeConformsTo": ["public.data"],
             "UTTypeTagSpecification": {"public.filename-extension": ["ok", 7]}}
            """))
        #expect(badTags?.message.contains("com.example.tags") == true)
        #expect(badTags?.message.contains("public.filename-extension") == true)

        let badDescription = try await loadingError(
            exported(#"{"UTTypeIdentifier": "com.example.desc", "UTTypeDescription": ["x"]}"#))
        #expect(badDescription?.message.contains("com.example.desc") == true)
        #expect(badDescription?.message.contains("UTTypeDescription") == true)

        let badIdentifier = try await loadingError(exported(#"{"UTTypeIdentifier": ["com.example.list"]}"#))
        #expect(badIdentifier?.message.contains("UTTypeIdentifier") == true)

        let badList = try await loadingError(#"{"UTExportedTypeDeclarations": "com.example.x"}"#)
        #expect(badList?.message.contains("UTExportedTypeDeclarations") == true)
    }

    @Test func reservedPrefixUnknownParentAndCycleAreErrors() async throws {
        let reserved = try await loadingError(exported(#"{"UTTypeIdentifier": "public.mine"}"#))
        #expect(reserved?.message.contains("public.mine") == true)

        let apple = try await loadingError(
            exported(#"{"UTTypeIdentifier": "com.apple.mine"}"#), as: .binaryPropertyList)
        #expect(apple?.message.contains("com.apple.mine") == true)

        let orphan = try await loadingError(
            exported(#"{"UTTypeIdentifier": "com.example.orphan", "UTTypeConformsTo": ["com.example.nowhere"]}"#))
        #expect(orphan?.message.contains("com.example.orphan") == true)
        #expect(orphan?.message.contains("com.example.nowhere") == true)

        let cycle = try await loadingError("""
            { "UTExportedTypeDeclarations": [
                { "UTTypeIdentifier": "com.example.egg", "UTTypeConformsTo": ["com.example.chicken"] },
                { "UTTypeIdentifier": "com.example.chicken", "UTTypeConformsTo": "com.example.egg" } ] }
            """)
        #expect(cycle?.message.contains("com.example.egg") == true)
        #expect(cycle?.message.contains("com.example.chicken") == true)

        let twice = try await loadingError("""
            { "UTExportedTypeDeclarations": [
                { "UTTypeIdentifier": "com.example.twice" }, { "UTTypeIdentifier": "com.example.TWICE" } ] }
            """)
        #expect(twice?.message.lowercased().contains("com.example.twice") == true)
        #expect(twice?.message.contains("entries 0 and 1") == true)
    }

    @Test func unusableFilesAreTypeDeclarationErrors() async throws {
        try await withTemporaryDirectory { dir in
            let missing = #expect(throws: TypeDeclarationError.self) {
                try TypeRegistry(contentsOfFile: dir + "/absent.json")
            }
            #expect(missing?.message.contains("absent.json") == true)

            let garbage = try writeFile(dir + "/garbage.plist", [0x00, 0xFF, 0x13, 0x37])
            #expect(throws: TypeDeclarationError.self) { try TypeRegistry(contentsOfFile: garbage) }

            let brokenJSON = try writeFile(dir + "/broken.json", "{\"UTExportedTypeDeclarations\": [")
            #expect(throws: TypeDeclarationError.self) { try TypeRegistry(contentsOfFile: brokenJSON) }

            let array = try writeFile(dir + "/array.json", "[]")
            #expect(throws: TypeDeclarationError.self) { try TypeRegistry(contentsOfFile: array) }
        }
        let empty = try await loadingError(#"{"CFBundleIdentifier": "com.example.app"}"#)
        #expect(empty?.message.contains("UTExportedTypeDeclarations") == true)
    }
}
