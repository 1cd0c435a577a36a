import Foundation
import SharepipeCore
import SharepipeScenario
import SharepipeExtensionKit
import SharepipeTesting
import Testing

private func scenarioPath(_ name: String) -> String {
    fixture("scenarios/\(name).json").path
}

private let group = "group.sharepipe.kit-tests"

/// Well-behaved extension code: each attachment's first image type is copied inside the handler into the container
/// under a UUID name; everything else is refused. `finish` ends the request (once, by default).
private func copyImages(
    _ context: NSExtensionContext, finish: @Sendable (NSExtensionContext) -> Void = {
        $0.completeRequest(returningItems: nil)
    }
) async -> [ExtensionOutcome] {
    let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group)!
    var outcomes: [ExtensionOutcome] = []
    for attachment in (context.inputItems as? [NSExtensionItem] ?? []).flatMap({ $0.attachments ?? [] }) {
        guard let type = attachment.registeredTypeIdentifiers.first(where: { UTType($0)?.conforms(to: .image) == true })
        else {
            outcomes.append(.refused(attachment, reason: "not an image"))
            continue
        }
        let outcome: ExtensionOutcome = await withCheckedContinuation { continuation in
            attachment.loadFileRepresentation(forTypeIdentifier: type) { url, error in
                guard let url else { return continuation.resume(returning: .failed(attachment, error: error!)) }
                let copy = container.appendingPathComponent(UUID().uuidString)
                do {
                    try FileManager.default.copyItem(at: url, to: copy)
                    continuation.resume(returning: .accepted(attachment, file: copy))
                } catch {
                    continuation.resume(returning: .failed(attachment, error: error))
                }
            }
        }
        outcomes.append(outcome)
    }
    finish(context)
    return outcomes
}

@Suite(.timeLimit(.minutes(5)))
struct ScenarioItemsTests {
    @Test func aScenarioLoadsAsOneExtensionItemWithAProviderPerAttachment() async throws {
        let scenario = try Scenario.load(path: scenarioPath("photo-heic-plus-jpeg"))
        let items = scenario.makeExtensionItems()
        #expect(items.count == 1)
        let provider = try #require(items.first?.attachments?.first)
        #expect(items.first?.attachments?.count == 1)
        #expect(provider.registeredTypeIdentifiers == ["public.heic", "public.jpeg"])
        #expect(provider.suggestedName == "IMG_0001.HEIC")
        // The HEIC is late (50 ms) and deleted by its source after the callback; the copy is the kit's own.
        let heic: Data? = try await completion { done in
            provider.loadFileRepresentation(forTypeIdentifier: "public.heic") { url, _ in
                done(url.flatMap { FileManager.default.contents(atPath: $0.path) })
            }
        }
        #expect(heic == FileManager.default.contents(atPath: fixture("files/photo.heic").path))
        let jpeg: Data? = try await completion { done in
            provider.loadDataRepresentation(forTypeIdentifier: "public.jpeg") { data, _ in done(data) }
        }
        #expect(jpeg == FileManager.default.contents(atPath: fixture("files/photo.jpg").path))
    }

    @Test func failingSilentAndSafariProvidersBehaveAsScripted() async throws {
        let failing = try Scenario.load(path: scenarioPath("load-error-among-good")).makeItemProviders()[1]
        let code: ShareError.Code? = try await completion { done in
            failing.loadFileRepresentation(forTypeIdentifier: "public.png") { _, error in
                done((error as? ShareError)?.code)
            }
        }
        #expect(code == .loadFailed)

        let silent = try Scenario.load(path: scenarioPath("never-calls-back")).makeItemProviders()[1]
        let results = Box<[String]>([])
        let progress = silent.loadFileRepresentation(forTypeIdentifier: "public.png") { url, error in
            results.update { $0.append(url == nil ? "\((error as? CocoaError)?.code == .userCancelled)" : "url") }
        }
        #expect(silent.loadRecords.first?.result == nil, "a silent provider never answers by itself")
        progress.cancel()
        #expect(await eventually { results.value == ["true"] })

        let safari = try Scenario.load(path: scenarioPath("web-page-url-plus-text")).makeItemProviders()
        let url: URL? = try await completion { done in
            safari[0].loadItem(forTypeIdentifier: UTType.url.identifier) { item, _ in
                done((item as? NSURL).map { $0 as URL })
            }
        }
        #expect(url?.host == "example.com")
        #expect(safari[1].hasItemConformingToTypeIdentifier(UTType.text.identifier))
    }
}

@Suite(.timeLimit(.minutes(5)))
struct ExtensionHarnessTests {
    @Test func wellBehavedCodePassesEveryCheck() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let run = try await harness.run(scenarioFile: scenarioPath("video-from-photos")) { await copyImages($0) }
        try run.expectPassed()
        #expect(run.outcomes.count == 2)
        #expect(run.requestEndings == 1)
    }

    @Test func endingTheRequestTwiceOrNeverFails() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image], grace: .milliseconds(100))
        let twice = try await harness.run(scenarioFile: scenarioPath("photo-jpeg-only-accepted")) { context in
            await copyImages(context) {
                $0.completeRequest(returningItems: nil)
                $0.cancelRequest(withError: CocoaError(.userCancelled))
            }
        }
        #expect(twice.failures.map(\.check) == [.completeRequestOnce])
        #expect(twice.failures.first?.message.contains(
            "found 2: completeRequest(returningItems:), cancelRequest(withError:)") == true)

        let never = try await harness.run(scenarioFile: scenarioPath("photo-jpeg-only-accepted")) { context in
            await copyImages(context) { _ in }
        }
        #expect(never.failures.map(\.check) == [.completeRequestOnce])
        #expect(never.failures.first?.message.contains("found no call") == true)
    }

    @Test func codeWaitingForASilentProviderIsReportedAfterTheDeadline() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image], deadline: .seconds(1))
        let run = try await harness.run(scenarioFile: scenarioPath("never-calls-back")) { context in
            let silent = (context.inputItems.first as? NSExtensionItem)!.attachments![1]
            // Waits for the silent source app, without a timeout.
            return await withCheckedContinuation { continuation in
                silent.loadFileRepresentation(forTypeIdentifier: "public.png") { _, _ in
                    continuation.resume(returning: [])
                }
            }
        }
        #expect(run.failures.map(\.check) == [.finished, .completeRequestOnce])
        let message = try #require(run.failures.first?.message)
        #expect(message.contains("public.png never called back"), "\(message)")
        #expect(message.contains("needs a timeout"), "\(message)")
    }

    @Test func copiesOutsideTheContainerAndStrayFilesFail() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let run = try await harness.run(scenarioFile: scenarioPath("photo-jpeg-only-accepted")) { context in
            let outcomes = await copyImages(context)
            let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group)!
            // A half-written file left behind.
            try? Data("partial".utf8).write(to: container.appendingPathComponent("upload.part"))
            // The copy reported is moved out of the container.
            guard case .accepted(let file)? = outcomes.first?.result else { return outcomes }
            let outside = harness.directory.appendingPathComponent("outside.jpg")
            try? FileManager.default.moveItem(at: file, to: outside)
            return [.accepted(outcomes[0].attachment, file: outside)] + outcomes.dropFirst()
        }
        let messages = run.failures(.insideContainer).map(\.message)
        #expect(messages.count == 2, "\(run.failures)")
        #expect(messages.contains { $0.contains("expected the copy inside the app group's container") })
        #expect(messages.contains { $0.contains("upload.part") })
    }

    @Test func aRefusalWithoutAReasonFails() async throws {
        let harness = try ExtensionHarness(groupIdentifier: group, accepting: [.image])
        let run = try await harness.run(scenarioFile: scenarioPath("pdf-from-files")) { context in
            let attachment = (context.inputItems.first as? NSExtensionItem)!.attachments![0]
            context.completeRequest(returningItems: nil)
            return [.refused(attachment, reason: " ")]
        }
        #expect(run.failures.map(\.check) == [.everyAttachmentAnswered])
        #expect(run.failures.first?.message.contains("expected a refusal to give a reason") == true)
    }
}
