import Foundation
import SharepipeCore
import SharepipeScenario
import SharepipeTesting
import Testing

/// The path of a committed fixture, e.g. `fixture("files/photo.jpg")`.
func fixture(_ relative: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent(relative).path
}

/// Writes one file per copy, named by its file id: running a share twice leaves the same files.
struct FilePerCopyProcessor: Processor {
    let output: String

    func process(_ share: ClaimedShare) async throws {
        for attachment in share.attachments {
            let line = "\(share.shareId) \(attachment.fileId) \(attachment.typeIdentifier) \(attachment.bytes)\n"
            try Data(line.utf8).write(to: URL(fileURLWithPath: output + "/" + attachment.fileId), options: .atomic)
        }
    }
}

/// Appends one line per copy to a log: running a share twice leaves two lines. Not idempotent.
struct AppendingProcessor: Processor {
    let log: String

    func process(_ share: ClaimedShare) async throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        try handle.seekToEnd()
        for attachment in share.attachments { try handle.write(contentsOf: Data((attachment.fileId + "\n").utf8)) }
    }
}

/// The files in a directory and their contents.
func snapshot(_ directory: String) throws -> [String: Data] {
    var files: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
        files[name] = FileManager.default.contents(atPath: directory + "/" + name)
    }
    return files
}

@Suite(.timeLimit(.minutes(5)))
struct LifecycleHarnessTests {
    @Test(arguments: [ScriptedItemProvider.AfterCallback.delete, .move])
    func copiesOutliveTheTemporarySource(after: ScriptedItemProvider.AfterCallback) async throws {
        let harness = try LifecycleHarness()
        let share = await harness.publish(Scenario(sourceApp: "com.example", attachments: [
            .init(suggestedName: "IMG_0001.JPG", representations: [
                .init(type: "public.jpeg", source: .file(fixture("files/photo.jpg")), afterCallback: after)
            ]),
            .init(representations: [.init(type: "com.adobe.pdf", source: .file(fixture("files/document.pdf")))]),
        ]))
        #expect(share.receipt.status == .complete)
        try harness.expectCopiesReadable(share)
        try harness.expectDistinctNames()
        try harness.expectLedgerAgreesWithDirectories()
    }

    @Test func sameNamedPhotosGetDistinctCopies() async throws {
        let harness = try LifecycleHarness()
        let scenario = try Scenario.load(path: fixture("scenarios/photos-same-name.json"))
        let first = await harness.publish(scenario)
        let second = await harness.publish(scenario)
        try harness.expectCopiesReadable(first)
        try harness.expectCopiesReadable(second)
        try harness.expectDistinctNames()
    }

    @Test(arguments: CrashPoint.allCases)
    func idempotentProcessorPassesEveryCrashPoint(crashPoint: CrashPoint) async throws {
        let harness = try LifecycleHarness()
        let output = harness.directory + "/output"
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let share = await harness.publish(files: [fixture("files/photo.jpg"), fixture("files/image.png")])
        let run = try await harness.expectIdempotent(FilePerCopyProcessor(output: output), crashingAt: crashPoint) {
            try snapshot(output)
        }
        let deliveries = run.deliveries(of: share.shareId)
        #expect(deliveries.count == (crashPoint == .afterProcessBeforeRecord ? 2 : 1))
        let fileIds = share.receipt.attachments.compactMap(\.fileId)
        #expect(deliveries.allSatisfy { $0.attachments.map(\.fileId) == fileIds })
        #expect(try snapshot(output).count == 2)
        try harness.expectSpoolEmpty()
        try harness.expectLedgerAgreesWithDirectories()
    }

    @Test func replayCatchesAProcessorThatIsNotIdempotent() async throws {
        let harness = try LifecycleHarness()
        let log = harness.directory + "/catalogue.log"
        try Data().write(to: URL(fileURLWithPath: log))
        await harness.publish(files: [fixture("files/photo.jpg")])
        let failure = await #expect(throws: HarnessFailure.self) {
            try await harness.expectIdempotent(AppendingProcessor(log: log), crashingAt: .afterProcessBeforeRecord) {
                try String(contentsOfFile: log, encoding: .utf8)
            }
        }
        #expect(failure?.message.contains("not idempotent") == true)
        // The replay did run: the log holds the copy's line twice.
        #expect(try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").count == 2)
    }

    @Test func processWithoutACrashHandsEachShareOverOnce() async throws {
        let harness = try LifecycleHarness()
        let one = await harness.publish(files: [fixture("files/notes.txt")])
        let two = await harness.publish(files: [fixture("files/table.csv")])
        let run = try await harness.process(DiscardProcessor())
        #expect(run.summary.processed == 2)
        #expect(run.recovery == nil)
        #expect(run.deliveries(of: one.shareId).count == 1)
        #expect(run.deliveries(of: two.shareId).count == 1)
        try harness.expectSpoolEmpty()
        try harness.expectLedgerAgreesWithDirectories()
    }

    @Test func checksFailWhileWorkIsLeft() async throws {
        let harness = try LifecycleHarness()
        let share = await harness.publish(files: [fixture("files/photo.jpg")])
        #expect(throws: HarnessFailure.self) { try harness.expectSpoolEmpty() }
        // A claim abandoned by a crash: the directory moved, the ledger never told.
        let spool = harness.spool
        try FileManager.default.moveItem(
            atPath: spool.path(.incoming, share.shareId), toPath: spool.path(.processing, share.shareId))
        let failure = #expect(throws: HarnessFailure.self) { try harness.expectLedgerAgreesWithDirectories() }
        #expect(failure?.message.contains("processing") == true)
        _ = try harness.spool.recover(retryingLockedFor: .seconds(1))
        try harness.expectLedgerAgreesWithDirectories()
    }

    @Test func twoSharesHoldingOneCopyNameAreCaught() async throws {
        let harness = try LifecycleHarness()
        let first = await harness.publish(files: [fixture("files/photo.jpg")])
        let second = await harness.publish(files: [fixture("files/image.png")])
        let file = try #require(first.receipt.attachments[0].file)
        try FileManager.default.copyItem(
            atPath: harness.spool.path(.incoming, first.shareId) + "/" + file,
            toPath: harness.spool.path(.incoming, second.shareId) + "/" + file)
        #expect(throws: HarnessFailure.self) { try harness.expectDistinctNames() }
    }

    @Test func harnessRemovesItsDirectory() async throws {
        var directory = ""
        do {
            let harness = try LifecycleHarness()
            directory = harness.directory
            await harness.publish(files: [fixture("files/photo.jpg")])
            #expect(FileManager.default.fileExists(atPath: directory))
        }
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}

@Suite struct ScenarioFileTests {
    func write(_ text: String, in directory: String, as name: String) throws -> String {
        let path = directory + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/sharepipe-testing-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func malformedScenarioNamesTheKeyAndIndex() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = try write(
            #"{"attachments": [{"representations": [{"type": "public.png", "error": "ERR_LOAD_FAILED"}]},"#
                + #" {"representations": [{"type": "public.png", "kindd": "file"}]}]}"#,
            in: directory, as: "bad.json")
        let error = #expect(throws: ScenarioError.self) { try Scenario.load(path: path) }
        #expect(error?.message.hasPrefix(#"attachments[1].representations[0]: unknown key "kindd""#) == true)
    }

    @Test func expectedReceiptIsCheckedKeyByKey() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let good = try write(
            #"{"status": "partial", "attachments": [{"status": "copied", "typeIdentifier": "public.jpeg"},"#
                + #" {"status": "failed", "code": "ERR_TIMEOUT"}], "activation": {"images-only": true}}"#,
            in: directory, as: "good.expected.json")
        let expectation = try ScenarioExpectation.load(path: good)
        #expect(expectation.args == [])
        #expect(expectation.attachments[1] == .init(status: "failed", typeIdentifier: nil, code: "ERR_TIMEOUT"))
        #expect(expectation.activation == ["images-only": true])
        let bad = try write(
            #"{"status": "partial", "attachments": [{"status": "copied"}, {"status": "lost"}]}"#,
            in: directory, as: "bad.expected.json")
        let error = #expect(throws: ScenarioError.self) { try ScenarioExpectation.load(path: bad) }
        #expect(error?.message.hasPrefix(#"attachments[1]: "status" must be one of"#) == true)
    }
}
