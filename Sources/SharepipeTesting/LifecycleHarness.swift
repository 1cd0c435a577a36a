import Foundation
import SharepipeCore
import SharepipeScenario
import Synchronization

/// Where `LifecycleHarness` stops the consumer, as a kill -9 would, before recovery and a replay.
public enum CrashPoint: String, Sendable, CaseIterable, CustomStringConvertible {
    /// The share was claimed (renamed into `processing`) and the processor never ran.
    case beforeProcess
    /// The processor returned, and the ledger never recorded the share processed: the share runs again.
    case afterProcessBeforeRecord
    /// The ledger recorded the share processed, and its copies were never deleted: recovery deletes them.
    case afterRecordBeforeDelete

    /// The raw value.
    public var description: String { rawValue }
}

/// A check of the harness that did not hold; its message says what was expected and what was found. Throwing it
/// from a test fails the test in Swift Testing and in XCTest alike.
public struct HarnessFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was expected and what was found.
    public var message: String

    /// A failure with this message.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// A share the harness published, with what is needed to check its copies.
public struct PublishedShare: Sendable {
    /// The loader's receipt.
    public var receipt: ShareReceipt
    /// The providers the share was loaded from, in attachment order.
    public var providers: [any ItemProvider]

    /// The share's UUID.
    public var shareId: String { receipt.shareId }
}

/// What one lifecycle run did.
public struct LifecycleRun: Sendable {
    /// Where the consumer was stopped, if anywhere.
    public var crashPoint: CrashPoint?
    /// What recovery found after the crash (nil without a crash).
    public var recovery: RecoveryReport?
    /// What the last consumer pass did.
    public var summary: ConsumeSummary
    /// Every share handed to the processor, in the order it was handed over (a replayed share appears twice).
    public var deliveries: [ClaimedShare]

    /// The deliveries of one share, in order.
    public func deliveries(of shareId: String) -> [ClaimedShare] {
        deliveries.filter { $0.shareId == shareId }
    }
}

/// A lifecycle test bench for a processor: a temporary state directory with its ledger, a loader publishing shares
/// from scenarios, providers or files, and the user's `Processor` run through claim → process → complete, with a
/// crash injected at one of three points and replayed after recovery with the same share and file ids.
///
/// ```swift
/// let harness = try LifecycleHarness()
/// let share = try await harness.publish(Scenario.load(path: "photos.json"))
/// try harness.expectCopiesReadable(share)
/// try await harness.expectIdempotent(MyProcessor(output: out), crashingAt: .afterProcessBeforeRecord) {
///     try String(contentsOfFile: out + "/catalogue.txt", encoding: .utf8)
/// }
/// try harness.expectSpoolEmpty()
/// try harness.expectLedgerAgreesWithDirectories()
/// ```
///
/// The state directory is removed when the harness is deinitialised. Every check throws a `HarnessFailure`.
public final class LifecycleHarness: Sendable {
    /// The temporary directory holding the state directory and the harness's own files.
    public let directory: String
    /// The spool under test, in `directory/state`.
    public let spool: Spool
    /// The loader's limits and accepted types.
    public let loaderConfiguration: LoaderConfiguration
    /// The consumer's configuration: one worker and no retry delay unless given.
    public let consumerConfiguration: ConsumerConfiguration
    /// The type registry of the loader.
    public let registry: TypeRegistry
    private let published = Mutex<[PublishedShare]>([])

    /// A harness in a new temporary directory.
    public init(
        loader: LoaderConfiguration = .init(), consumer: ConsumerConfiguration? = nil,
        registry: TypeRegistry = .standard
    ) throws {
        directory = FileManager.default.temporaryDirectory.path + "/sharepipe-harness-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        spool = try Spool(root: directory + "/state")
        loaderConfiguration = loader
        consumerConfiguration = consumer ?? {
            var configuration = ConsumerConfiguration()
            configuration.workers = 1
            configuration.retryDelay = .zero
            return configuration
        }()
        self.registry = registry
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: - Publishing

    /// Loads and publishes one share from these providers, with its title, text, userInfo and tags.
    @discardableResult
    public func publish(
        _ providers: [any ItemProvider], sourceApp: String? = nil, details: ShareDetails = .empty
    ) async -> PublishedShare {
        let loader = ShareLoader(spool: spool, registry: registry, configuration: loaderConfiguration)
        let receipt = await loader.load(providers, sourceApp: sourceApp, details: details)
        let share = PublishedShare(receipt: receipt, providers: providers)
        published.withLock { $0.append(share) }
        return share
    }

    /// Loads and publishes a scripted share, with its title, text, userInfo and tags.
    @discardableResult
    public func publish(_ scenario: Scenario) async -> PublishedShare {
        await publish(scenario.makeProviders(), sourceApp: scenario.sourceApp, details: scenario.details)
    }

    /// Loads and publishes a share of these files, each declaring the types of its extension and content.
    @discardableResult
    public func publish(files paths: [String], sourceApp: String? = nil) async -> PublishedShare {
        await publish(paths.map { FileItemProvider(path: $0, registry: registry) }, sourceApp: sourceApp)
    }

    /// Every share published so far, in order.
    public var publishedShares: [PublishedShare] { published.withLock { $0 } }

    // MARK: - Processing

    /// Runs every published share through `processor`: claim → process → complete. With a crash point, each share
    /// is first taken to that point and abandoned as a kill -9 would leave it, `Spool.recover()` runs, and a
    /// consumer replays what recovery sent back — with the same share id and file ids, which this checks.
    public func process(_ processor: some Processor, crashingAt crashPoint: CrashPoint? = nil) async throws
        -> LifecycleRun
    {
        try await run(processor, crashingAt: crashPoint, effects: { NoEffects() })
    }

    /// Crashes at `crashPoint`, recovers and replays (as `process`), and checks that the processor is idempotent:
    /// what `effects` observes (the processor's output) after the replay equals what it observed right after the
    /// processor first ran, before the crash. A processor that appends a record each time it runs fails this at
    /// `.afterProcessBeforeRecord`. At `.beforeProcess` the processor had not run, so only the replay is checked.
    @discardableResult
    public func expectIdempotent<Effects: Equatable>(
        _ processor: some Processor, crashingAt crashPoint: CrashPoint = .afterProcessBeforeRecord,
        effects: () throws -> Effects
    ) async throws -> LifecycleRun {
        try await run(processor, crashingAt: crashPoint, effects: effects)
    }

    private func run<Effects: Equatable>(
        _ processor: some Processor, crashingAt crashPoint: CrashPoint?, effects: () throws -> Effects
    ) async throws -> LifecycleRun {
        let recording = RecordingProcessor(processor)
        var recovery: RecoveryReport?
        var before: Effects?
        if let crashPoint {
            let shareIDs = try spool.shareIDs(in: .incoming)
            try await crash(shareIDs, at: crashPoint, recording: recording)
            // Before `.beforeProcess` the processor never ran, so there is nothing a replay could repeat.
            if crashPoint != .beforeProcess { before = try effects() }
            // The restarted process; a dropped claim's lock may outlive it for an instant.
            let report = try spool.recover(retryingLockedFor: .seconds(1))
            recovery = report
            let expected = crashPoint == .afterRecordBeforeDelete
                ? report.completed : report.returnedToIncoming
            guard expected == shareIDs.count else {
                throw HarnessFailure(
                    "after a crash at \(crashPoint), recovery should have dealt with \(shareIDs.count) share(s), "
                        + "found \(report)")
            }
        }
        let summary = try await Consumer(spool: spool, processor: recording, configuration: consumerConfiguration)
            .drain()
        let deliveries = recording.deliveries
        if let crashPoint {
            try Self.checkReplay(deliveries, crashPoint: crashPoint)
        }
        if let before {
            let after = try effects()
            guard after == before else {
                throw HarnessFailure(
                    "the processor is not idempotent: replaying after a crash at \(crashPoint?.rawValue ?? "-") "
                        + "changed its effects from \(before) to \(after)")
            }
        }
        return LifecycleRun(crashPoint: crashPoint, recovery: recovery, summary: summary, deliveries: deliveries)
    }

    /// Takes each share through the real claim, process and record steps up to the crash point, then lets go of
    /// its claim — releasing the lock as the kernel does when a process dies — and leaves the rest to recovery.
    private func crash(_ shareIDs: [String], at crashPoint: CrashPoint, recording: RecordingProcessor) async throws {
        for claim in try spool.claim(shareIDs) {
            guard crashPoint != .beforeProcess else { continue }
            // The run's start, recorded as the consumer records it before its processor runs.
            guard case .started = try spool.start(claim, maxAttempts: consumerConfiguration.maxAttempts) else {
                throw HarnessFailure("share \(claim.shareID) was quarantined instead of started")
            }
            let manifest = try spool.manifest(.processing, claim.shareID)
            let share = try ClaimedShare(
                manifest: manifest, directory: absolute(spool.path(.processing, claim.shareID)),
                attempt: claim.previousAttempts + 1)
            try await recording.process(share)
            if crashPoint == .afterRecordBeforeDelete {
                // The production completion, stopped after its ledger commit as a kill -9 there would.
                try spool.complete(claim, durationMilliseconds: 0, stoppingAfter: "complete.record-processed")
            }
        }
    }

    /// A replayed share must come back with the same share id and file ids; a share recorded processed must not
    /// run again.
    private static func checkReplay(_ deliveries: [ClaimedShare], crashPoint: CrashPoint) throws {
        for shareID in Set(deliveries.map(\.shareId)).sorted() {
            let runs = deliveries.filter { $0.shareId == shareID }
            let expected = crashPoint == .afterProcessBeforeRecord ? 2 : 1
            guard runs.count == expected else {
                throw HarnessFailure(
                    "share \(shareID) was handed to the processor \(runs.count) time(s) after a crash at "
                        + "\(crashPoint), expected \(expected)")
            }
            let ids = runs.map { $0.attachments.map(\.fileId) }
            guard Set(ids.map { $0.joined(separator: ",") }).count == 1 else {
                throw HarnessFailure("share \(shareID) was replayed with different file ids: \(ids)")
            }
        }
    }

    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    // MARK: - Checks

    /// Every copy of `share` is readable where the spool keeps it, has the size its manifest gives and, when the
    /// provider's source is known (a scripted file or bytes, a `FileItemProvider`), the same bytes — even though a
    /// scripted provider deleted or moved its temporary file the moment its callback returned, which this also
    /// checks. Call it before processing: processing deletes the copies.
    public func expectCopiesReadable(_ share: PublishedShare) throws {
        guard let stage = [Spool.Stage.incoming, .processing, .quarantine].first(where: {
            FileManager.default.fileExists(atPath: spool.path($0, share.shareId))
        }) else {
            throw HarnessFailure("share \(share.shareId) is in none of incoming, processing, quarantine")
        }
        for record in share.receipt.attachments where record.status == .copied {
            guard let file = record.file else { throw HarnessFailure("attachment \(record.index) has no file") }
            let path = spool.path(stage, share.shareId) + "/" + file
            guard let copy = FileManager.default.contents(atPath: path) else {
                throw HarnessFailure("attachment \(record.index): the copy \(stage.rawValue)/\(share.shareId)/\(file) "
                    + "cannot be read")
            }
            guard Int64(copy.count) == record.bytes else {
                throw HarnessFailure(
                    "attachment \(record.index): the copy has \(copy.count) bytes, "
                        + "the manifest says \(record.bytes ?? 0)")
            }
            let provider = share.providers.indices.contains(record.index) ? share.providers[record.index] : nil
            if let expected = try Self.sourceBytes(provider, type: record.typeIdentifier), expected != copy {
                throw HarnessFailure("attachment \(record.index): the copy's bytes differ from the provider's source")
            }
            if let scripted = provider as? ScriptedItemProvider {
                try Self.checkTemporariesGone(scripted, index: record.index)
            }
        }
    }

    /// The bytes the provider was to deliver for `type`, when the harness can know them.
    private static func sourceBytes(_ provider: (any ItemProvider)?, type: String?) throws -> Data? {
        if let provider = provider as? FileItemProvider {
            return FileManager.default.contents(atPath: provider.path)
        }
        guard let scripted = provider as? ScriptedItemProvider, let type,
            let representation = scripted.representations.first(where: { $0.type.lowercased() == type.lowercased() })
        else { return nil }
        switch representation.source {
        case .file(let path): return FileManager.default.contents(atPath: path)
        case .bytes(let data): return data
        case .none: return Data()
        }
    }

    /// When every file representation of a scripted provider deletes or moves its temporary file after the
    /// callback, no temporary it handed out may still be where it was handed out.
    private static func checkTemporariesGone(_ provider: ScriptedItemProvider, index: Int) throws {
        let files = provider.representations.filter { $0.kind == .file }
        guard !files.isEmpty, files.allSatisfy({ $0.afterCallback != .keep }) else { return }
        for url in provider.handedOutURLs where FileManager.default.fileExists(atPath: url.path) {
            throw HarnessFailure(
                "attachment \(index): the provider's temporary file is still at \(url.path) after its callback")
        }
    }

    /// No two copies share a name or a file id: across every published share's receipt, and across the copies on
    /// disk in `incoming`, `processing` and `quarantine`.
    public func expectDistinctNames() throws {
        var fileIds: Set<String> = []
        var files: Set<String> = []
        for share in publishedShares {
            for record in share.receipt.attachments where record.status == .copied {
                guard let fileId = record.fileId, fileIds.insert(fileId).inserted else {
                    throw HarnessFailure("file id \(record.fileId ?? "nil") is used twice (share \(share.shareId))")
                }
                guard let file = record.file, files.insert(file).inserted else {
                    throw HarnessFailure("copy name \(record.file ?? "nil") is used twice (share \(share.shareId))")
                }
            }
        }
        var onDisk: [String: String] = [:]
        for stage in [Spool.Stage.incoming, .processing, .quarantine] {
            for shareID in try spool.shareIDs(in: stage) {
                let names = try FileManager.default.contentsOfDirectory(atPath: spool.path(stage, shareID))
                for name in names where !Self.spoolFiles.contains(name) {
                    if let other = onDisk.updateValue(shareID, forKey: name) {
                        throw HarnessFailure("copy name \(name) is in shares \(other) and \(shareID)")
                    }
                }
            }
        }
    }

    /// The spool's own files inside a share directory.
    private static let spoolFiles: Set<String> = ["manifest.json", ".lock", "reason.json"]

    /// Nothing is left in `staging`, `incoming` or `processing` (nor in `quarantine`, unless allowed): every share
    /// was processed and its copies deleted.
    public func expectSpoolEmpty(allowingQuarantine: Bool = false) throws {
        let stages: [Spool.Stage] = allowingQuarantine
            ? [.staging, .incoming, .processing] : [.staging, .incoming, .processing, .quarantine]
        for stage in stages {
            let entries = try FileManager.default.contentsOfDirectory(atPath: spool.path(stage))
            guard entries.isEmpty else {
                throw HarnessFailure("\(stage.rawValue) is not empty: \(entries.sorted().joined(separator: ", "))")
            }
        }
    }

    /// The ledger and the directories tell the same story: every unfinished share the ledger records is in the stage
    /// directory its state names (staged → `staging`, published → `incoming`, claimed → `processing`,
    /// quarantined → `quarantine`), and every share directory is recorded in that state.
    public func expectLedgerAgreesWithDirectories() throws {
        var recorded: [String: Spool.Stage] = [:]
        for listing in try spool.listShares() { recorded[listing.shareId] = listing.stage }
        var found: [String: Spool.Stage] = [:]
        for stage in Spool.Stage.allCases {
            for shareID in try spool.shareIDs(in: stage) { found[shareID] = stage }
        }
        for shareID in Set(recorded.keys).union(found.keys).sorted() where recorded[shareID] != found[shareID] {
            let ledger = recorded[shareID]?.rawValue ?? "finished or unknown"
            let disk = found[shareID]?.rawValue ?? "no directory"
            throw HarnessFailure("share \(shareID): the ledger says \(ledger), the directories say \(disk)")
        }
    }
}

/// What `process` observes: nothing, so only the replay itself is checked.
private struct NoEffects: Equatable {}

/// Hands each share to the user's processor and keeps every `ClaimedShare` it was given.
private final class RecordingProcessor: Processor {
    private let processor: any Processor
    private let log = Mutex<[ClaimedShare]>([])

    init(_ processor: any Processor) {
        self.processor = processor
    }

    var deliveries: [ClaimedShare] { log.withLock { $0 } }

    func process(_ share: ClaimedShare) async throws {
        log.withLock { $0.append(share) }
        try await processor.process(share)
    }
}
