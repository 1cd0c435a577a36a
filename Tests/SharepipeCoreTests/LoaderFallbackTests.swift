import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem
@testable import SharepipeScenario
import SharepipeTesting

/// SPEC Types "Fallback in fidelity order": a failed load of the chosen representation tries the next declared one
/// that conforms, and the receipt and manifest list the attempts.
@Suite(.timeLimit(.minutes(5))) struct LoaderFallbackTests {
    func loader(_ root: String, configure: (inout LoaderConfiguration) -> Void = { _ in }) throws -> ShareLoader {
        var configuration = LoaderConfiguration()
        configure(&configuration)
        return ShareLoader(spool: try Spool(root: root + "/state"), configuration: configuration)
    }

    func file(_ type: String, _ path: String) -> ScriptedItemProvider.Representation {
        .init(type: type, kind: .file, source: .file(path))
    }

    /// The manifest's JSON text, as a consumer reads it.
    func manifest(_ shareDirectory: String) throws -> String {
        String(decoding: try System.readFile(shareDirectory + "/manifest.json", limit: 1 << 20), as: UTF8.self)
    }

    @Test func heicFailsThenJPEGIsTakenAndTheTextInBetweenIsNeverAsked() async throws {
        try await withTemporaryDirectory { dir in
            // Were the text representation asked for, it would never call back: the load would time out and the
            // attempts would list it with ERR_TIMEOUT.
            let loader = try loader(dir) {
                $0.accept = ["public.image"]
                $0.loadTimeout = .seconds(30)
            }
            let photo = ScriptedItemProvider(representations: [
                .init(type: "public.heic", source: .none, error: .loadFailed),
                .init(type: "public.plain-text", kind: .data, source: .none, neverCalls: true),
                file("public.jpeg", fixture("files/photo.jpg")),
            ], suggestedName: "IMG_0001.HEIC")
            let receipt = await loader.load([photo])
            #expect(receipt.status == .complete)
            let record = try #require(receipt.attachments.first)
            #expect(record.typeIdentifier == "public.jpeg")
            #expect(record.attempts == [
                .init(type: "public.heic", code: .loadFailed), .init(type: "public.jpeg", code: nil),
            ])
            let file = try #require(record.file)
            #expect(file.hasSuffix(".jpeg"))
            let incoming = loader.spool.path(.incoming, receipt.shareId)
            #expect(try sha256(ofFile: incoming + "/" + file) == sha256(ofFile: fixture("files/photo.jpg")))
            #expect(try System.listDirectory(incoming).sorted() == [file, "manifest.json"].sorted())
            let manifestText = try manifest(incoming)
            #expect(manifestText.contains(
                #""attempts":[{"code":"ERR_LOAD_FAILED","type":"public.heic"},{"code":null,"type":"public.jpeg"}]"#))
        }
    }

    @Test func aMismatchFallsBackAndItsRefusedCopyNoLongerCountsAgainstTheShare() async throws {
        try await withTemporaryDirectory { dir in
            let notes = fixture("files/notes.txt")
            let size = Int64(try System.readFile(notes, limit: 1 << 20).count)
            // Room for one copy of the text only: the refused one must not be counted twice.
            let loader = try loader(dir) { $0.maxShareSize = size + size / 2 }
            let mislabelled = ScriptedItemProvider(representations: [
                file("public.png", notes), file("public.plain-text", notes),
            ])
            let receipt = await loader.load([mislabelled])
            #expect(receipt.status == .complete)
            let record = try #require(receipt.attachments.first)
            #expect(record.typeIdentifier == "public.plain-text")
            #expect(record.attempts == [
                .init(type: "public.png", code: .typeMismatch), .init(type: "public.plain-text", code: nil),
            ])
            #expect(try System.listDirectory(loader.spool.path(.incoming, receipt.shareId)).count == 2)
        }
    }

    @Test func everyConformingRepresentationFailingGivesTheLastCode() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir) { $0.loadTimeout = .milliseconds(200) }
            let broken = ScriptedItemProvider(representations: [
                .init(type: "public.heic", source: .none, noFile: true),
                .init(type: "public.png", source: .none, neverCalls: true),
                .init(type: "public.jpeg", source: .none, error: .loadFailed),
            ])
            let receipt = await loader.load([broken])
            #expect(receipt.status == .rejected)
            #expect(receipt.codes == ["ERR_LOAD_FAILED"])
            #expect(receipt.attachments.first?.attempts?.map(\.code) == [.missingFile, .timeout, .loadFailed])
            #expect(try System.listDirectory(loader.spool.path(.staging)).isEmpty)
        }
    }

    @Test func aLimitIsNotTheRepresentationsFaultSoNothingElseIsTried() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir) { $0.maxFileSize = 16 }
            let photo = ScriptedItemProvider(representations: [
                file("public.heic", fixture("files/photo.heic")), file("public.jpeg", fixture("files/photo.jpg")),
            ])
            let receipt = await loader.load([photo])
            #expect(receipt.codes == ["ERR_TOO_LARGE"])
            #expect(receipt.attachments.first?.typeIdentifier == "public.heic")
            #expect(receipt.attachments.first?.attempts == nil)
        }
    }

    @Test func oneAttemptListsNoAttempts() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir)
            let receipt = await loader.load([ScriptedItemProvider(representations: [
                file("public.jpeg", fixture("files/photo.jpg")), file("public.png", fixture("files/image.png")),
            ])])
            #expect(receipt.status == .complete)
            #expect(receipt.attachments.first?.attempts == nil)
            let incoming = loader.spool.path(.incoming, receipt.shareId)
            let manifestText = try manifest(incoming)
            #expect(!manifestText.contains("attempts"))
        }
    }
}
