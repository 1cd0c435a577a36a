import Foundation
@testable import SharepipeExtensionKit
import SharepipeTesting
import Testing

/// The patterns real share and action extensions use to read what they were given (learned from open-source
/// extensions, see docs/extension-kit.md), each as iOS behaves.
@Suite(.timeLimit(.minutes(5)))
struct RealExtensionPatternTests {
    @Test func tryAwaitLoadItemOfTextAskedAsPublicTextGivesAString() async throws {
        let text = "Shared from Notes: ünïcödé"
        let provider = dataProvider("public.plain-text", Data(text.utf8))
        let item = try await provider.loadItem(forTypeIdentifier: "public.text")
        // Real code writes `item as? String`; through `Any` the cast is the same and does not warn on Linux.
        #expect((item as Any) as? String == text)
        #expect((item as Any) as? NSString == text as NSString)
    }

    @Test func tryAwaitLoadItemOfAURLGivesAURL() async throws {
        let bookmark = try Data(contentsOf: fixture("scenarios/data/article-url.bplist"))
        let provider = dataProvider("public.url", bookmark)
        let item = try await provider.loadItem(forTypeIdentifier: "public.url")
        let url = (item as Any) as? URL
        #expect(url?.absoluteString == "https://example.com/articles/share-extensions")
    }

    @Test func anImageFileFromLoadItemIsReadLaterOnTheMainQueue() async throws {
        let photo = fixture("files/photo.jpg")
        var provider: NSItemProvider? = fileProvider("public.jpeg", photo)
        let handed = Box<URL?>(nil)
        provider?.loadItem(forTypeIdentifier: "public.image", options: nil) { item, _ in
            handed.update { $0 = (item as Any) as? URL }
        }
        #expect(await eventually { provider?.loadRecords.first?.handlerReturned == true })
        let url = try #require(handed.value)
        // As real code does: the handler hands the URL to the main queue, which reads it once the handler returned.
        let bytes = await MainActor.run { FileManager.default.contents(atPath: url.path) }
        #expect(bytes == FileManager.default.contents(atPath: photo.path))
        let later = try await provider?.loadItem(forTypeIdentifier: "public.jpeg")
        let laterURL = try #require((later as Any) as? URL)
        let read = await Task.detached { FileManager.default.contents(atPath: laterURL.path) }.value
        #expect(read == FileManager.default.contents(atPath: photo.path))
        provider = nil
        #expect(await eventually { !FileManager.default.fileExists(atPath: url.path) }, "kept until the provider goes")
        #expect(!FileManager.default.fileExists(atPath: laterURL.path))
    }

    @Test func hasItemConformingThenLoadItemWithKUTTypeConstants() async throws {
        let photo = fixture("files/photo.jpg")
        let image = fileProvider("public.jpeg", photo)
        let text = dataProvider("public.utf8-plain-text", Data("a caption".utf8))
        let page = dataProvider("public.url", try Data(contentsOf: fixture("scenarios/data/article-url.bplist")))
        // Code written before UniformTypeIdentifiers: pick the kind by kUTType constants, most specific first.
        func kind(_ provider: NSItemProvider) -> String? {
            for type in [kUTTypeImage, kUTTypeMovie, kUTTypeFileURL, kUTTypeURL, kUTTypeText]
            where provider.hasItemConformingToTypeIdentifier(type as String) {
                return type as String
            }
            return nil
        }
        #expect([image, text, page].map(kind) == ["public.image", "public.text", "public.url"])
        let delivered = Box<[String: String]>([:])
        for provider in [image, text, page] {
            let type = try #require(kind(provider))
            provider.loadItem(forTypeIdentifier: type, options: nil) { item, _ in
                let (text, url) = ((item as Any) as? String, (item as Any) as? URL)
                // The result goes to the main queue, where it is looked at after the handler returned.
                DispatchQueue.main.async {
                    let value: String? = if let text {
                        "text:" + text
                    } else if let url, url.isFileURL {
                        FileManager.default.contents(atPath: url.path).map { "file:\($0.count)" }
                    } else {
                        url.map { "url:" + $0.absoluteString }
                    }
                    delivered.update { $0[type] = value ?? "nothing" }
                }
            }
        }
        #expect(await eventually { delivered.value.count == 3 })
        let photoSize = try #require(FileManager.default.contents(atPath: photo.path)).count
        #expect(delivered.value == [
            "public.image": "file:\(photoSize)", "public.text": "text:a caption",
            "public.url": "url:https://example.com/articles/share-extensions",
        ])
        #expect(kUTTypeJPEG as String == UTType.jpeg.identifier)
        #expect(String(kUTTypePropertyList) == UTType.propertyList.identifier)
    }

    @Test func loadObjectOfClassURLGivesTheURL() async throws {
        let page = dataProvider("public.url", try Data(contentsOf: fixture("scenarios/data/article-url.bplist")))
        #expect(page.canLoadObject(ofClass: URL.self))
        let url: URL? = try await completion { done in
            page.loadObject(ofClass: URL.self) { url, _ in done(url) }
        }
        #expect(url?.absoluteString == "https://example.com/articles/share-extensions")

        // A file's contents are not a URL, as on iOS: a JPEG-only provider cannot load one.
        let photo = fileProvider("public.jpeg", fixture("files/photo.jpg"))
        #expect(!photo.canLoadObject(ofClass: URL.self))
        let error: NSError? = try await completion { done in
            photo.loadObject(ofClass: URL.self) { _, error in done(error as NSError?) }
        }
        #expect(error?.code == NSItemProvider.ErrorCode.itemUnavailableError.rawValue)

        let file = NSItemProvider(item: fixture("files/photo.jpg") as NSURL, typeIdentifier: "public.file-url")
        #expect(try await file.loadObject(ofClass: URL.self) == fixture("files/photo.jpg"))
    }

    @Test func loadObjectReadsStringsAndData() async throws {
        let note = NSItemProvider(item: "from Notes" as NSString, typeIdentifier: "public.plain-text")
        #expect(note.canLoadObject(ofClass: String.self))
        #expect(try await note.loadObject(ofClass: String.self) == "from Notes")
        let bytes = dataProvider("public.utf16-plain-text", Data("wide".utf16.flatMap { [UInt8($0 & 0xff), 0] }))
        let text = try await bytes.loadObject(ofClass: NSString.self)
        #expect((text as? NSString).map { $0 as String } == "wide")
        let png = try Data(contentsOf: fixture("files/image.png"))
        #expect(try await dataProvider("public.png", png).loadObject(ofClass: Data.self) == png)
        #expect(!dataProvider("public.png", png).canLoadObject(ofClass: String.self))
    }

    @Test func safarisJavaScriptResultsComeBackAsADictionary() async throws {
        // An action extension's preprocessing results, as Safari registers them.
        let results: NSDictionary = [NSExtensionJavaScriptPreprocessingResultsKey: ["url": "https://example.com/a"]]
        let provider = NSItemProvider(item: results, typeIdentifier: UTType.propertyList.identifier)
        #expect(provider.hasItemConformingToTypeIdentifier(UTType.propertyList.identifier))
        let item = try await provider.loadItem(forTypeIdentifier: UTType.propertyList.identifier)
        let dictionary = (item as Any) as? [String: Any]
        let preprocessed = dictionary?[NSExtensionJavaScriptPreprocessingResultsKey] as? [String: Any]
        #expect(preprocessed?["url"] as? String == "https://example.com/a")

        // The same list registered as bytes is decoded the same way.
        let bytes = try PropertyListSerialization.data(fromPropertyList: results, format: .binary, options: 0)
        let decoded = try await dataProvider(UTType.propertyList.identifier, bytes)
            .loadItem(forTypeIdentifier: UTType.propertyList.identifier)
        #expect(((decoded as Any) as? NSDictionary)?.isEqual(to: results as? [AnyHashable: Any] ?? [:]) == true)
    }

    @Test func theAsyncFormsOfTheOtherLoads() async throws {
        let photo = fixture("files/photo.jpg")
        let provider = fileProvider("public.jpeg", photo)
        let original = FileManager.default.contents(atPath: photo.path)
        #expect(try await provider.loadDataRepresentation(forTypeIdentifier: "public.image") == original)
        #expect(try await provider.loadDataRepresentation(for: .jpeg) == original)
        let file = try await provider.loadFileRepresentation(forTypeIdentifier: "public.jpeg")
        let read = await Task.detached { FileManager.default.contents(atPath: file.path) }.value
        #expect(read == original, "an awaited file stays until the provider goes: no handler marks its end")
        let (typed, inPlace) = try await provider.loadFileRepresentation(for: .image)
        #expect(FileManager.default.contents(atPath: typed.path) == original)
        #expect(!inPlace)
        await #expect(throws: NSError.self) {
            _ = try await provider.loadDataRepresentation(forTypeIdentifier: "public.movie")
        }
    }

    @Test func cancellingTheTaskCancelsTheLoadsProgress() async throws {
        let provider = NSItemProvider()
        let asked = Box(false)
        provider.registerDataRepresentation(forTypeIdentifier: "public.png", visibility: .all) { _ in
            asked.update { $0 = true }   // a source app that never answers
            return nil
        }
        let load = Task { _ = try await provider.loadItem(forTypeIdentifier: "public.image") }
        #expect(await eventually { asked.value })
        load.cancel()
        let result = await load.result
        #expect(throws: CocoaError.self) { try result.get() }
        #expect(provider.loadRecords.first?.result == .cancelled)
    }

    @Test func anExtensionThatReadsLoadItemsFileLaterPassesTheHarness() async throws {
        let group = "group.sharepipe.kit-tests.load-item"
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let run = try await harness.run(scenarioFile: fixture("scenarios/photo-heic-plus-jpeg.json").path) { context in
            let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group)!
            var outcomes: [ExtensionOutcome] = []
            for attachment in (context.inputItems as? [NSExtensionItem] ?? []).flatMap({ $0.attachments ?? [] }) {
                do {
                    let item = try await attachment.loadItem(forTypeIdentifier: UTType.image.identifier)
                    guard let url = (item as Any) as? URL else {
                        outcomes.append(.refused(attachment, reason: "not a file"))
                        continue
                    }
                    // Copied after loadItem returned, on the main actor: fine on iOS, and so here.
                    let copy = container.appendingPathComponent(UUID().uuidString + "." + url.pathExtension)
                    try await MainActor.run { try FileManager.default.copyItem(at: url, to: copy) }
                    outcomes.append(.accepted(attachment, file: copy))
                } catch {
                    outcomes.append(.failed(attachment, error: error))
                }
            }
            context.completeRequest(returningItems: nil)
            return outcomes
        }
        try run.expectPassed()
    }
}
