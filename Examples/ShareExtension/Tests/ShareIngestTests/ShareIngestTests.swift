import Foundation
import ShareIngest
import SharepipeExtensionKit
import SharepipeTesting
import Testing

/// sharepipe's scenarios, three folders up.
func scenario(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../../Fixtures/scenarios/\(name).json").standardized.path
}

let group = "group.com.example.shareextension"

/// The extension's report, as outcomes the harness checks.
func outcomes(_ report: IngestReport) -> [ExtensionOutcome] {
    report.entries.map { entry in
        switch entry.result {
        case .saved(let file): .accepted(entry.attachment, file: file)
        case .skipped(let reason): .refused(entry.attachment, reason: reason)
        case .failed(let error): .failed(entry.attachment, error: error)
        }
    }
}

/// Runs an ingest function (any of the example's) the way the extension's view controller would.
func run(
    _ harness: ExtensionHarness, _ name: String,
    _ ingest: @escaping @Sendable (NSExtensionContext, @escaping @Sendable (IngestReport) -> Void) -> Void
) async throws -> ExtensionRun {
    try await harness.run(scenarioFile: scenario(name)) { context in
        await withCheckedContinuation { continuation in
            ingest(context) { report in continuation.resume(returning: outcomes(report)) }
        }
    }
}

@Suite(.timeLimit(.minutes(5)))
struct ShareIngestTests {
    static let scenarios = [
        "photo-heic-plus-jpeg", "photo-heic-fails-jpeg-taken", "photo-jpeg-only-accepted", "first-type-unsupported",
        "photos-same-name", "pdf-from-files", "web-page-url-plus-text", "image-plus-url", "never-calls-back",
        "load-error-among-good", "load-error-all-or-nothing", "flaky-provider", "screenshot-png-data",
        "video-from-photos", "mislabelled-image",
    ]

    @Test(arguments: scenarios)
    func passesTheHarnessOnEveryScenario(name: String) async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let ingest = ShareIngest(groupIdentifier: group, loadTimeout: 1)
        let run = try await run(harness, name, ingest.ingest)
        try run.expectPassed()
    }

    @Test func savesTheHighestFidelityImageUnderAUUIDName() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let run = try await run(harness, "photo-heic-plus-jpeg", ShareIngest(groupIdentifier: group).ingest)
        try run.expectPassed()
        guard case .accepted(let file)? = run.outcomes.first?.result else {
            Issue.record("expected the photo accepted, found \(run.outcomes)")
            return
        }
        #expect(file.pathExtension == "heic")
        #expect(UUID(uuidString: file.deletingPathExtension().lastPathComponent) != nil)
        #expect(file.deletingLastPathComponent().deletingLastPathComponent() == run.containerURL)
    }

    @Test func reportsPartialFailureAndATimeoutForASilentProvider() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let ingest = ShareIngest(groupIdentifier: group, loadTimeout: 1)
        let run = try await run(harness, "never-calls-back", ingest.ingest)
        try run.expectPassed()
        #expect(run.requestEndings == 1)
        guard run.outcomes.count == 2, case .accepted = run.outcomes[0].result,
            case .failed(let error) = run.outcomes[1].result
        else {
            Issue.record("expected beach.jpg accepted and sunset.png failed, found \(run.outcomes)")
            return
        }
        guard case IngestError.timedOut? = error as? IngestError else {
            Issue.record("expected a timeout, found \(error)")
            return
        }
    }

    @Test func refusesFilesOverTheLimitWithAReason() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let ingest = ShareIngest(groupIdentifier: group, maxFileSize: 1000)
        let run = try await run(harness, "load-error-among-good", ingest.ingest)
        try run.expectPassed()
        let reasons = run.outcomes.compactMap { outcome -> String? in
            if case .refused(let reason) = outcome.result { reason } else { nil }
        }
        #expect(reasons == ["too large: 1191 bytes (the limit is 1000)"])
    }
}

/// Each classic bug, run against the scenario that exposes it: the harness must fail, naming the bug.
@Suite(.timeLimit(.minutes(5)))
struct ClassicBugTests {
    @Test func firstTypeOnlyIsCaught() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let run = try await run(harness, "first-type-unsupported", FirstTypeOnlyIngest(groupIdentifier: group).ingest)
        let failures = run.failures(.firstConformingType)
        #expect(failures.count == 1, "\(run.failures)")
        #expect(failures.first?.message.contains("first type only") == true, "\(failures)")
        #expect(failures.first?.message.contains("public.heic") == true, "\(failures)")
    }

    @Test func urlKeptPastTheHandlerIsCaught() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let bug = KeptURLIngest(groupIdentifier: group)
        let run = try await harness.run(scenarioFile: scenario("photo-heic-plus-jpeg")) { context in
            let loaded = await withCheckedContinuation { continuation in
                bug.prepare(context) { continuation.resume(returning: $0) }
            }
            // The user reads the sheet, then taps Post.
            await harness.waitForLoads(in: context)
            return outcomes(bug.post(loaded, context: context))
        }
        let failures = run.failures(.copiedInsideHandler)
        #expect(failures.count == 1, "\(run.failures)")
        #expect(failures.first?.message.contains("URL kept past the handler") == true, "\(failures)")
    }

    @Test func fixedFileNameIsCaught() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let run = try await run(harness, "photos-same-name", FixedNameIngest(groupIdentifier: group).ingest)
        let failures = run.failures(.distinctNames)
        #expect(failures.count == 1, "\(run.failures)")
        #expect(failures.first?.message.contains("fixed file name") == true, "\(failures)")
        #expect(failures.first?.message.contains("attachment 0, attachment 1, attachment 2") == true, "\(failures)")
    }

    @Test func silentlyDroppedAttachmentIsCaught() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let run = try await run(harness, "image-plus-url", DroppingIngest(groupIdentifier: group).ingest)
        let failures = run.failures(.everyAttachmentAnswered)
        #expect(failures.count == 1, "\(run.failures)")
        #expect(failures.first?.message.contains("silently dropped") == true, "\(failures)")
        #expect(failures.first?.message.contains("attachment 1 (public.url)") == true, "\(failures)")
    }
}
