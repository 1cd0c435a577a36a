import Foundation
import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem
@testable import SharepipeScenario
import SharepipeTesting

/// The path of a committed fixture, e.g. `fixture("files/photo.heic")`.
func fixture(_ relative: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent(relative).path
}

func sha256(ofFile path: String) throws -> String {
    SHA256.hash(try System.readFile(path, limit: Int.max))
}

extension ShareReceipt {
    var codes: [String?] { attachments.map { $0.error?.code.rawValue } }
}

@Suite(.timeLimit(.minutes(5))) struct ShareLoaderTests {
    func loader(_ root: String, configure: (inout LoaderConfiguration) -> Void = { _ in }) throws -> ShareLoader {
        var configuration = LoaderConfiguration()
        configure(&configuration)
        return ShareLoader(spool: try Spool(root: root + "/state"), configuration: configuration)
    }

    func file(_ type: String, _ path: String, after: ScriptedItemProvider.AfterCallback = .keep)
        -> ScriptedItemProvider.Representation
    {
        .init(type: type, kind: .file, source: .file(path), afterCallback: after)
    }

    @Test func typeIsChosenByConformanceNotPosition() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir) { $0.accept = ["public.image"] }
            let heicFirst = ScriptedItemProvider(representations: [
                file("public.heic", fixture("files/photo.heic")), file("public.jpeg", fixture("files/photo.jpg")),
            ])
            let textFirst = ScriptedItemProvider(representations: [
                file("public.plain-text", fixture("files/notes.txt")), file("public.jpeg", fixture("files/photo.jpg")),
            ])
            let receipt = await loader.load([heicFirst, textFirst])
            #expect(receipt.status == .complete)
            #expect(receipt.attachments.map(\.typeIdentifier) == ["public.heic", "public.jpeg"])
            let incoming = loader.spool.path(.incoming, receipt.shareId)
            let files = try System.listDirectory(incoming).sorted()
            #expect(files.count == 3)
            #expect(files.contains("manifest.json"))
            let manifest = try loader.spool.manifest(.incoming, receipt.shareId)
            #expect(manifest.attachments == receipt.attachments)
            let heic = try #require(manifest.attachments[0].file)
            #expect(heic.hasSuffix(".heic"))
            #expect(try sha256(ofFile: incoming + "/" + heic) == sha256(ofFile: fixture("files/photo.heic")))
        }
    }

    @Test func unsupportedTypeAndLoadErrorHaveTheirOwnCodes() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir) { $0.accept = ["public.image"] }
            let text = ScriptedItemProvider(representations: [file("public.plain-text", fixture("files/notes.txt"))])
            let broken = ScriptedItemProvider(representations: [
                .init(type: "public.png", source: .none, error: .loadFailed)
            ])
            let receipt = await loader.load([text, broken])
            #expect(receipt.status == .rejected)
            #expect(receipt.codes == ["ERR_UNSUPPORTED_TYPE", "ERR_LOAD_FAILED"])
            #expect(try System.listDirectory(loader.spool.path(.incoming)).isEmpty)
            #expect(try System.listDirectory(loader.spool.path(.staging)).isEmpty)
        }
    }

    @Test func unusableStateDirectoryIsContainerUnavailable() async throws {
        try await withTemporaryDirectory { dir in
            try writeFile(dir + "/state", "not a directory")
            #expect {
                _ = try Spool(root: dir + "/state/inner")
            } throws: { ($0 as? ShareError)?.code == .containerUnavailable }
        }
    }

    @Test(arguments: [SharePolicy.keepSuccessful, .allOrNothing])
    func oneFailingAttachmentOfThree(policy: SharePolicy) async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir) { $0.policy = policy }
            let providers = [
                ScriptedItemProvider(representations: [file("public.jpeg", fixture("files/photo.jpg"))]),
                ScriptedItemProvider(representations: [.init(type: "public.png", source: .none, noFile: true)]),
                ScriptedItemProvider(representations: [file("com.adobe.pdf", fixture("files/document.pdf"))]),
            ]
            let receipt = await loader.load(providers)
            #expect(receipt.codes[1] == "ERR_MISSING_FILE")
            let published = try System.listDirectory(loader.spool.path(.incoming))
            switch policy {
            case .keepSuccessful:
                #expect(receipt.status == .partial)
                #expect(receipt.attachments.map(\.status) == [.copied, .failed, .copied])
                #expect(published == [receipt.shareId])
                #expect(try System.listDirectory(loader.spool.path(.incoming, receipt.shareId)).count == 3)
            case .allOrNothing:
                #expect(receipt.status == .rejected)
                #expect(receipt.attachments.map(\.status) == [.rolledBack, .failed, .rolledBack])
                #expect(published.isEmpty)
            }
            #expect(try System.listDirectory(loader.spool.path(.staging)).isEmpty)
        }
    }

    @Test func sameNamedInputsNeverOverwrite() async throws {
        try await withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/a", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: dir + "/b", withIntermediateDirectories: true)
            try writeFile(dir + "/a/IMG.txt", "first")
            try writeFile(dir + "/b/IMG.txt", "second")
            let loader = try loader(dir)
            let receipt = await loader.load([
                FileItemProvider(path: dir + "/a/IMG.txt"), FileItemProvider(path: dir + "/b/IMG.txt"),
            ])
            #expect(receipt.status == .complete)
            let names = receipt.attachments.compactMap(\.file)
            #expect(Set(names).count == 2)
            let contents = try names.map {
                String(decoding: try System.readFile(loader.spool.path(.incoming, receipt.shareId) + "/" + $0), as: UTF8.self)
            }
            #expect(contents == ["first", "second"])
        }
    }

    @Test(arguments: [ScriptedItemProvider.AfterCallback.delete, .move])
    func copyOutlivesTheTemporarySource(after: ScriptedItemProvider.AfterCallback) async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir)
            let provider = ScriptedItemProvider(representations: [file("public.jpeg", fixture("files/photo.jpg"), after: after)])
            let receipt = await loader.load([provider])
            #expect(receipt.status == .complete)
            let handedOut = try #require(provider.handedOutURLs.first)
            #expect(!FileManager.default.fileExists(atPath: handedOut.path))
            let copy = loader.spool.path(.incoming, receipt.shareId) + "/" + (receipt.attachments[0].file ?? "")
            #expect(try sha256(ofFile: copy) == sha256(ofFile: fixture("files/photo.jpg")))
            #expect(receipt.attachments[0].sha256 == (try sha256(ofFile: copy)))
        }
    }

    @Test func sourceGrowingPastTheLimitLeavesNoPartialFile() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir) { $0.maxFileSize = 1 << 20 }
            let path = dir + "/growing.txt"
            try writeFile(path, [UInt8](repeating: 0x61, count: 1000))
            let grower = Thread {
                guard let handle = FileHandle(forWritingAtPath: path) else { return }
                handle.seekToEndOfFile()
                for _ in 0..<64 { handle.write(Data(repeating: 0x61, count: 64 << 10)) }
                try? handle.close()
            }
            grower.start()
            // Loads while the source grows: in every order of the two, the limit is hit.
            #expect(try await eventually { try System.lstat(path).size > 1000 })
            let receipt = await loader.load([FileItemProvider(path: path, types: ["public.plain-text"])])
            #expect(receipt.codes == ["ERR_TOO_LARGE"])
            #expect(try System.listDirectory(loader.spool.path(.staging)).isEmpty)
            #expect(try System.listDirectory(loader.spool.path(.incoming)).isEmpty)
        }
    }

    @Test func symlinkAndFIFOAreRejectedWithoutBlocking() async throws {
        try await withTemporaryDirectory { dir in
            try writeFile(dir + "/secret.txt", "secret")
            try FileManager.default.createSymbolicLink(atPath: dir + "/link.txt", withDestinationPath: dir + "/secret.txt")
            #expect(mkfifo(dir + "/pipe.txt", 0o600) == 0)
            let loader = try loader(dir)
            let receipt = await loader.load([
                FileItemProvider(path: dir + "/link.txt", types: ["public.plain-text"]),
                FileItemProvider(path: dir + "/pipe.txt", types: ["public.plain-text"]),
            ])
            #expect(receipt.status == .rejected)
            #expect(receipt.codes == ["ERR_NOT_REGULAR_FILE", "ERR_NOT_REGULAR_FILE"])
        }
    }

    @Test func textDeclaredAsJPEGIsATypeMismatch() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir)
            let receipt = await loader.load([FileItemProvider(path: fixture("files/notes.txt"), types: ["public.jpeg"])])
            #expect(receipt.codes == ["ERR_TYPE_MISMATCH"])
            #expect(receipt.attachments[0].sniffedMimeType == "text/plain")
        }
    }

    @Test func providerThatNeverCallsBackTimesOutAndALateCallbackChangesNothing() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir) { $0.loadTimeout = .milliseconds(100) }
            let silent = ScriptedItemProvider(representations: [
                .init(type: "public.jpeg", source: .file(fixture("files/photo.jpg")), neverCalls: true)
            ])
            let late = ScriptedItemProvider(representations: [
                .init(
                    type: "public.jpeg", source: .file(fixture("files/photo.jpg")), delay: .milliseconds(400),
                    afterCallback: .delete)
            ])
            let receipt = await loader.load([silent, late])
            #expect(receipt.codes == ["ERR_TIMEOUT", "ERR_TIMEOUT"])
            // The late callback has returned once the copy it handed out is deleted after it.
            #expect(try await eventually {
                late.handedOutURLs.count == 1 && !FileManager.default.fileExists(atPath: late.handedOutURLs[0].path)
            })
            #expect(try System.listDirectory(loader.spool.path(.staging)).isEmpty)
            #expect(try System.listDirectory(loader.spool.path(.incoming)).isEmpty)
        }
    }

    @Test func secondCallbackIsIgnored() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir)
            let twice = ScriptedItemProvider(representations: [
                .init(type: "public.jpeg", source: .file(fixture("files/photo.jpg")), callsTwice: true, thread: .caller)
            ])
            let receipt = await loader.load([twice])
            #expect(receipt.status == .complete)
            #expect(try System.listDirectory(loader.spool.path(.incoming, receipt.shareId)).count == 2)
        }
    }

    @Test func cancellationIsReported() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir)
            let slow = ScriptedItemProvider(representations: [
                .init(type: "public.jpeg", source: .file(fixture("files/photo.jpg")), delay: .seconds(5))
            ])
            let task = Task { await loader.load([slow]) }
            // The share's staging directory exists once the load has begun.
            #expect(try await eventually { try !entries(loader.spool, .staging).isEmpty })
            task.cancel()
            let receipt = await task.value
            #expect(receipt.codes == ["ERR_CANCELLED"])
            #expect(receipt.status == .failed)
            #expect(receipt.error?.code == .cancelled)
        }
    }

    @Test func dataRepresentationGoesThroughTheSameChecks() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir) { $0.maxFileSize = 10 }
            let receipt = await loader.load([
                DataItemProvider(data: Data(pngBytes), types: ["public.png"]),
                DataItemProvider(data: Data("plain words".utf8), types: ["public.png"]),
            ])
            #expect(receipt.codes == ["ERR_TOO_LARGE", "ERR_TOO_LARGE"])
            let relaxed = try self.loader(dir)
            let second = await relaxed.load([
                DataItemProvider(data: Data(pngBytes), types: ["public.png"]),
                DataItemProvider(data: Data("plain words".utf8), types: ["public.png"]),
            ])
            #expect(second.codes == [nil, "ERR_TYPE_MISMATCH"])
            #expect(second.status == .partial)
        }
    }

    @Test func tooManyAttachmentsRejectsTheWholeShare() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir) { $0.maxAttachments = 1 }
            let receipt = await loader.load([
                DataItemProvider(data: Data(pngBytes), types: ["public.png"]),
                DataItemProvider(data: Data(pngBytes), types: ["public.png"]),
            ])
            #expect(receipt.status == .rejected)
            #expect(receipt.error?.code == .tooManyAttachments)
        }
    }
}
