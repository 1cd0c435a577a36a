import CatalogueProcessor
import Foundation
import SharepipeCore
import SharepipeTesting
import Testing

/// sharepipe's own sample files, two folders up.
func fixture(_ relative: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../../Fixtures").appendingPathComponent(relative).standardized.path
}

/// Two photos (one deleted by its provider right after the callback) and a PDF, as a Photos-like app shares them.
let photosAndAPDF = Scenario(sourceApp: "com.example.photos", attachments: [
    .init(suggestedName: "IMG_0001.HEIC", representations: [
        .init(type: "public.heic", source: .file(fixture("files/photo.heic")), delay: .milliseconds(20),
              afterCallback: .delete),
        .init(type: "public.jpeg", kind: .data, source: .file(fixture("files/photo.jpg"))),
    ]),
    .init(suggestedName: "IMG_0002.PNG", representations: [
        .init(type: "public.png", source: .file(fixture("files/image.png")), afterCallback: .move),
    ]),
    .init(suggestedName: "scan.pdf", representations: [
        .init(type: "com.adobe.pdf", source: .file(fixture("files/document.pdf"))),
    ]),
])

@Suite struct CatalogueProcessorTests {
    @Test(arguments: CrashPoint.allCases)
    func oneLinePerImageWhateverTheCrash(crashPoint: CrashPoint) async throws {
        let harness = try LifecycleHarness()
        let catalogue = harness.directory + "/catalogue.tsv"
        let share = await harness.publish(photosAndAPDF)
        #expect(share.receipt.status == .complete)
        try harness.expectCopiesReadable(share)
        try harness.expectDistinctNames()

        let run = try await harness.expectIdempotent(CatalogueProcessor(catalogue: catalogue), crashingAt: crashPoint) {
            try CatalogueProcessor.lines(of: catalogue)
        }
        #expect(run.deliveries(of: share.shareId).count == (crashPoint == .afterProcessBeforeRecord ? 2 : 1))
        let lines = try CatalogueProcessor.lines(of: catalogue)
        let images = share.receipt.attachments.filter { $0.typeIdentifier != "com.adobe.pdf" }
        #expect(lines.map { String($0.split(separator: "\t")[0]) } == images.compactMap(\.fileId))
        #expect(lines.map { String($0.split(separator: "\t")[2]) } == ["public.heic", "public.png"])
        try harness.expectSpoolEmpty()
        try harness.expectLedgerAgreesWithDirectories()
    }

    /// The same catalogue without the file-id check appends a second line when a share is replayed; the harness
    /// refuses it.
    @Test func theHarnessCatchesACatalogueThatAppendsTwice() async throws {
        struct AppendingCatalogue: Processor {
            let catalogue: String

            func process(_ share: ClaimedShare) async throws {
                let old = try CatalogueProcessor.lines(of: catalogue)
                let new = share.attachments.map { "\($0.fileId)\t\(share.shareId)\t\($0.typeIdentifier)" }
                try Data((old + new).map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: catalogue))
            }
        }
        let harness = try LifecycleHarness()
        let catalogue = harness.directory + "/catalogue.tsv"
        await harness.publish(files: [fixture("files/photo.jpg")])
        await #expect(throws: HarnessFailure.self) {
            try await harness.expectIdempotent(AppendingCatalogue(catalogue: catalogue)) {
                try CatalogueProcessor.lines(of: catalogue)
            }
        }
    }
}
