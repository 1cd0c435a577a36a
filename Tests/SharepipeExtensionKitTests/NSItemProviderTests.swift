import Foundation
@testable import SharepipeExtensionKit
import Testing

/// What a file load's handler saw while it ran.
private struct SeenFile: Sendable {
    var url: URL?
    var bytes: Data?
    var error: String?
    var onMainThread: Bool
}

@Suite(.timeLimit(.minutes(5)))
struct NSItemProviderTests {
    @Test func fileRepresentationIsATemporaryCopyDeletedWhenTheHandlerReturns() async throws {
        let source = fixture("files/photo.jpg")
        let provider = fileProvider("public.jpeg", source, suggestedName: "IMG_0001.JPG")
        let seen: SeenFile = try await completion { done in
            provider.loadFileRepresentation(forTypeIdentifier: "public.jpeg") { url, error in
                done(SeenFile(
                    url: url, bytes: url.flatMap { FileManager.default.contents(atPath: $0.path) },
                    error: error.map { "\($0)" }, onMainThread: Thread.isMainThread))
            }
        }
        let url = try #require(seen.url, "error: \(seen.error ?? "none")")
        #expect(url != source)
        #expect(url.lastPathComponent == "IMG_0001.jpeg")
        #expect(seen.bytes == FileManager.default.contents(atPath: source.path))
        #expect(await eventually { !FileManager.default.fileExists(atPath: url.path) })
        #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path))
        #expect(FileManager.default.fileExists(atPath: source.path), "the source app's file is left alone")
    }

    @Test func completionHandlerRunsExactlyOnceAndNotOnTheMainThread() async throws {
        let provider = NSItemProvider()
        let sourceCalls = Box(0)
        provider.registerFileRepresentation(forTypeIdentifier: "public.png", visibility: .all) { completion in
            // A misbehaving source: calls back twice, on the caller's thread.
            completion(fixture("files/image.png"), false, nil)
            completion(fixture("files/image.png"), false, nil)
            sourceCalls.update { $0 += 2 }
            return nil
        }
        let calls = Box<[Bool]>([])
        provider.loadFileRepresentation(forTypeIdentifier: "public.png") { _, _ in
            calls.update { $0.append(Thread.isMainThread) }
        }
        #expect(sourceCalls.value == 2)
        #expect(await eventually { provider.loadRecords.first?.handlerReturned == true })
        #expect(calls.value == [false])
    }

    @Test func dataRepresentationDeliversTheBytesAndFilesAreReadWhole() async throws {
        let bytes = Data("https://example.com/a".utf8)
        let fromData: Data? = try await completion { done in
            let provider = dataProvider("public.plain-text", bytes)
            provider.loadDataRepresentation(forTypeIdentifier: "public.text") { data, _ in done(data) }
        }
        #expect(fromData == bytes)

        let pdf = fixture("files/document.pdf")
        let fromFile: Data? = try await completion { done in
            fileProvider("com.adobe.pdf", pdf).loadDataRepresentation(forTypeIdentifier: "com.adobe.pdf") { data, _ in
                done(data)
            }
        }
        #expect(fromFile == FileManager.default.contents(atPath: pdf.path))
    }

    @Test func dataRepresentationLoadedAsAFileIsWrittenToATemporaryFile() async throws {
        let png = try Data(contentsOf: fixture("files/image.png"))
        let provider = dataProvider("public.png", png, suggestedName: "Screenshot.PNG")
        let seen: SeenFile = try await completion { done in
            provider.loadFileRepresentation(forTypeIdentifier: "public.image") { url, error in
                done(SeenFile(
                    url: url, bytes: url.flatMap { FileManager.default.contents(atPath: $0.path) },
                    error: error.map { "\($0)" }, onMainThread: Thread.isMainThread))
            }
        }
        let url = try #require(seen.url)
        #expect(url.lastPathComponent == "Screenshot.png")
        #expect(seen.bytes == png)
        #expect(await eventually { !FileManager.default.fileExists(atPath: url.path) })
    }

    @Test func loadItemGivesTheURLOfATemporaryCopyKeptUntilTheProviderIsReleased() async throws {
        let source = fixture("files/photo.heic")
        var provider: NSItemProvider? = fileProvider("public.heic", source)
        let seen: SeenFile = try await completion { done in
            provider?.loadItem(forTypeIdentifier: "public.image", options: nil) { item, error in
                let url = (item as? NSURL).map { $0 as URL }
                done(SeenFile(
                    url: url, bytes: url.flatMap { FileManager.default.contents(atPath: $0.path) },
                    error: error.map { "\($0)" }, onMainThread: false))
            }
        }
        let url = try #require(seen.url)
        #expect(url != source)
        #expect(seen.bytes == FileManager.default.contents(atPath: source.path))
        #expect(await eventually { provider?.loadRecords.first?.handlerReturned == true })
        #expect(provider?.loadRecords.first?.keepsFile == true)
        #expect(FileManager.default.contents(atPath: url.path) == FileManager.default.contents(atPath: source.path))
        provider = nil
        #expect(await eventually { !FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path) })
        #expect(FileManager.default.fileExists(atPath: source.path), "the source app's file is left alone")
    }

    @Test func loadItemCoercesDataRepresentationsByTheRegisteredType() async throws {
        let bookmark = try Data(contentsOf: fixture("scenarios/data/article-url.bplist"))
        let url: URL? = try await completion { done in
            dataProvider("public.url", bookmark).loadItem(forTypeIdentifier: "public.url") { item, _ in
                done((item as? NSURL).map { $0 as URL })
            }
        }
        #expect(url?.absoluteString == "https://example.com/articles/share-extensions")

        let title = try Data(contentsOf: fixture("scenarios/data/article-title.txt"))
        let text: String? = try await completion { done in
            dataProvider("public.plain-text", title).loadItem(forTypeIdentifier: "public.plain-text") { item, _ in
                done((item as? NSString).map { $0 as String })
            }
        }
        #expect(text == String(decoding: title, as: UTF8.self))

        let png = try Data(contentsOf: fixture("files/image.png"))
        let bytes: Data? = try await completion { done in
            dataProvider("public.png", png).loadItem(forTypeIdentifier: "public.png") { item, _ in
                done((item as? NSData).map { $0 as Data })
            }
        }
        #expect(bytes == png)
    }

    @Test func initContentsOfTypesTheFileByItsExtension() throws {
        let jpeg = try #require(NSItemProvider(contentsOf: fixture("files/photo.jpg")))
        #expect(jpeg.registeredTypeIdentifiers == ["public.jpeg"])
        #expect(jpeg.suggestedName == "photo.jpg")
        let pdf = NSItemProvider(contentsOf: fixture("files/document.pdf"))
        #expect(pdf?.registeredTypeIdentifiers == ["com.adobe.pdf"])
        #expect(NSItemProvider(contentsOf: fixture("files/notes.txt.gz"))?.registeredTypeIdentifiers
            == ["org.gnu.gnu-zip-archive"])

        let directory = try TemporaryDirectory()
        let unknown = directory.url.appendingPathComponent("notes.xyz")
        try Data("x".utf8).write(to: unknown)
        let dynamic = try #require(NSItemProvider(contentsOf: unknown)?.registeredTypeIdentifiers.first)
        #expect(UTType(dynamic)?.isDynamic == true)
        #expect(UTType(dynamic)?.preferredFilenameExtension == "xyz")

        #expect(NSItemProvider(contentsOf: directory.url.appendingPathComponent("missing.jpg")) == nil)
        #expect(NSItemProvider(contentsOf: directory.url) == nil)
        #expect(NSItemProvider(contentsOf: URL(string: "https://example.com/a.jpg")!) == nil)
    }

    @Test func loadReturnsAProgressThatCompletes() async throws {
        let provider = fileProvider("public.jpeg", fixture("files/photo.jpg"))
        let progress = Box<Progress?>(nil)
        let delivered: Bool = try await completion { done in
            progress.update {
                $0 = provider.loadFileRepresentation(forTypeIdentifier: "public.jpeg") { url, _ in done(url != nil) }
            }
        }
        #expect(delivered)
        let returned = try #require(progress.value)
        #expect(returned.totalUnitCount == 1)
        #expect(await eventually { returned.completedUnitCount == 1 })
        #expect(!returned.isCancelled)
    }

    @Test func cancellingTheProgressEndsTheLoadWithUserCancelledOnce() async throws {
        let provider = NSItemProvider()
        let pending = Box<(@Sendable (URL?, Bool, (any Error)?) -> Void)?>(nil)
        provider.registerFileRepresentation(forTypeIdentifier: "public.png", visibility: .all) { completion in
            pending.update { $0 = completion }
            return nil
        }
        let results = Box<[String]>([])
        let progress = provider.loadFileRepresentation(forTypeIdentifier: "public.png") { url, error in
            results.update { $0.append(url == nil ? "error \((error as? CocoaError)?.code == .userCancelled)" : "url") }
        }
        progress.cancel()
        #expect(await eventually { results.value.count == 1 })
        // The source answers late: its file is dropped, the handler is not called again.
        pending.value?(fixture("files/image.png"), false, nil)
        #expect(await eventually { provider.loadRecords.first?.handlerReturned == true })
        #expect(results.value == ["error true"])
        #expect(provider.loadRecords.first?.result == .cancelled)
    }

    @Test func registrationOrderIsFidelityOrder() async throws {
        let provider = NSItemProvider()
        let registrations = [("public.heic", "photo.heic"), ("public.jpeg", "photo.jpg"), ("public.heic", "image.png")]
        for (type, file) in registrations {
            provider.registerFileRepresentation(forTypeIdentifier: type, visibility: .all) { completion in
                completion(fixture("files/" + file), false, nil)
                return nil
            }
        }
        provider.registerDataRepresentation(forTypeIdentifier: "public.plain-text", visibility: .all) { completion in
            completion(Data("caption".utf8), nil)
            return nil
        }
        #expect(provider.registeredTypeIdentifiers == ["public.heic", "public.jpeg", "public.plain-text"])
        #expect(provider.registeredTypeIdentifiers(fileOptions: [.openInPlace]).isEmpty)
        let image: Data? = try await completion { done in
            provider.loadDataRepresentation(forTypeIdentifier: "public.image") { data, _ in done(data) }
        }
        #expect(image == FileManager.default.contents(atPath: fixture("files/photo.heic").path))
        #expect(provider.loadRecords.map(\.registeredType) == ["public.heic"])
    }

    @Test func hasItemConformingToTypeIdentifierFollowsConformance() {
        let provider = fileProvider("public.jpeg", fixture("files/photo.jpg"))
        for type in ["public.jpeg", "PUBLIC.JPEG", "public.image", "public.data", "public.content", "public.item"] {
            #expect(provider.hasItemConformingToTypeIdentifier(type), "\(type)")
        }
        for type in ["public.png", "public.text", "public.movie", "com.example.unknown"] {
            #expect(!provider.hasItemConformingToTypeIdentifier(type), "\(type)")
        }
        #expect(!NSItemProvider().hasItemConformingToTypeIdentifier("public.item"))
    }

    @Test func aTypeNoRepresentationConformsToFailsWithItemUnavailable() async throws {
        let provider = fileProvider("public.jpeg", fixture("files/photo.jpg"))
        let error: NSError? = try await completion { done in
            provider.loadFileRepresentation(forTypeIdentifier: "public.movie") { _, error in done(error as NSError?) }
        }
        #expect(error?.domain == NSItemProviderErrorDomain)
        #expect(error?.code == NSItemProvider.ErrorCode.itemUnavailableError.rawValue)
    }

    @Test func theSourceAppsErrorIsHandedOnAndNoFileIsItemUnavailable() async throws {
        struct SourceError: Error {}
        let failing = NSItemProvider()
        failing.registerFileRepresentation(forTypeIdentifier: "public.png", visibility: .all) { completion in
            completion(nil, false, SourceError())
            return nil
        }
        let handedOn: Bool = try await completion { done in
            failing.loadFileRepresentation(forTypeIdentifier: "public.png") { _, error in done(error is SourceError) }
        }
        #expect(handedOn)

        let empty = NSItemProvider()
        empty.registerDataRepresentation(forTypeIdentifier: "public.png", visibility: .all) { completion in
            completion(nil, nil)
            return nil
        }
        let error: NSError? = try await completion { done in
            empty.loadDataRepresentation(forTypeIdentifier: "public.png") { _, error in done(error as NSError?) }
        }
        #expect(error?.code == NSItemProvider.ErrorCode.itemUnavailableError.rawValue)
    }
}

@Suite(.timeLimit(.minutes(5)))
struct NSItemProviderContentTypeTests {
    @Test func theUTTypeVariantsRegisterAndLoadAsTheStringOnesDo() async throws {
        let provider = NSItemProvider()
        provider.registerFileRepresentation(for: .heic) { completion in
            completion(fixture("files/photo.heic"), false, nil)
            return nil
        }
        provider.registerDataRepresentation(for: .jpeg) { completion in
            completion(FileManager.default.contents(atPath: fixture("files/photo.jpg").path), nil)
            return nil
        }
        #expect(provider.registeredContentTypes == [.heic, .jpeg])
        #expect(provider.registeredContentTypes(conformingTo: .image) == [.heic, .jpeg])
        #expect(provider.registeredContentTypesForOpenInPlace.isEmpty)
        let seen: [String] = try await completion { done in
            provider.loadFileRepresentation(for: .jpeg) { url, inPlace, _ in
                done([url?.lastPathComponent ?? "none", "\(inPlace)"])
            }
        }
        #expect(seen == ["item.jpeg", "false"])
        let bytes: Data? = try await completion { done in
            provider.loadDataRepresentation(for: .heic) { data, _ in done(data) }
        }
        #expect(bytes == FileManager.default.contents(atPath: fixture("files/photo.heic").path))
    }
}
