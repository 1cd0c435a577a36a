import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// The ledger protocol's transitions, run against both implementations: the same calls must leave the same states,
/// attempts, violations and counts.
@Suite(.timeLimit(.minutes(5))) struct LedgerConformanceTests {
    /// A staged record of one copied text attachment of `bytes` bytes, with one source identity.
    static func record(bytes: Int64 = 5, inode: UInt64 = 7) -> StagedRecord {
        let id = UUID().uuidString
        let attachment = AttachmentRecord(
            index: 0, status: .copied, fileId: UUID().uuidString, file: "x.txt", typeIdentifier: "public.plain-text",
            declaredTypes: ["public.plain-text"], sniffedMimeType: "text/plain", bytes: bytes, sha256: "ab",
            suggestedName: nil, error: nil)
        let manifest = Manifest(
            shareId: id, sourceApp: "app \"quoted\" \\ {braces}", createdAt: Date().rfc3339, policy: .keepSuccessful,
            attachments: [attachment])
        let source = SourceIdentity(
            device: UInt64.max - 1, inode: inode, size: bytes, modificationTime: 1_700_000_000_000_000_000,
            sha256: "ab")
        return StagedRecord(manifest: manifest, sources: [source])
    }

    /// A share staged and published (its source done) on `ledger`; its id.
    static func publishedShare(in ledger: LedgerStore) throws -> String {
        let share = record()
        try ledger.recordStaged([share])
        _ = try ledger.recordPublished([share.manifest.shareId], sourcesDone: [share.manifest.shareId])
        return share.manifest.shareId
    }

    @Test(arguments: LedgerKind.available)
    func publishClaimAndProcessAreGuardedAndIdempotent(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let a = Self.record(bytes: 5, inode: 1)
            let b = Self.record(bytes: 7, inode: 2)
            let (idA, idB) = (a.manifest.shareId, b.manifest.shareId)
            try ledger.recordStaged([a, b])
            #expect(try ledger.state(ofShare: idA) == .staged)
            #expect(try ledger.pending() == (2, 12))
            let staged = try ledger.stagedSources()
            #expect(Set(staged.map(\.shareID)) == [idA, idB])
            #expect(staged.first { $0.shareID == idA }?.identity == a.sources[0])

            #expect(try ledger.recordPublished([idA, idB], sourcesDone: [idA]).isEmpty)
            #expect(try ledger.stagedSources().map(\.shareID) == [idB])
            #expect(try Set(ledger.shareIDs(inState: .published)) == [idA, idB])
            // Published twice: not a violation (a consumer may have claimed it meanwhile).
            #expect(try ledger.recordPublished([idA], sourcesDone: []).isEmpty)

            let unknown = UUID().uuidString
            let (histories, violations) = try ledger.recordClaimed([idA, unknown])
            #expect(histories == [idA: .init(attempts: 0, deaths: 0)])
            #expect(violations
                == [PreconditionViolation(shareID: unknown, expected: [.published, .staged], found: nil)])
            #expect(try ledger.state(ofShare: idA) == .claimed)
            #expect(try ledger.firstAttemptAt(shareID: idA) != nil)

            let before = try ledger.lastEventSequence()
            #expect(try ledger.recordProcessed([(idA, 12)]).isEmpty)
            #expect(try ledger.state(ofShare: idA) == .processed)
            #expect(try ledger.attempts(ofShare: idA) == 1)
            let events = try ledger.metricEvents(after: before, limit: 10)
            #expect(events.map(\.event) == [.processed])
            #expect(try ledger.lastEventSequence() > before)
            // Completion is idempotent: a second record is refused and changes nothing.
            #expect(try ledger.recordProcessed([(idA, 12)])
                == [PreconditionViolation(shareID: idA, expected: [.claimed], found: .processed)])
            #expect(try ledger.attempts(ofShare: idA) == 1)
            #expect(try ledger.pending() == (1, 7))

            // A run that succeeded, its claimer dead before the completion was recorded: recovery completes it.
            _ = try ledger.recordClaimed([idB])
            #expect(try ledger.recordRuns(started: idB, succeeded: []).isEmpty)
            #expect(try ledger.recordRuns(started: nil, succeeded: [idB]).isEmpty)
            #expect(try ledger.runState(ofShare: idB) == .succeeded)
            #expect(try ledger.recordFinished(shareID: idB).isEmpty)
            #expect(try ledger.state(ofShare: idB) == .processed)
            #expect(try ledger.attempts(ofShare: idB) == 1)
            #expect(try ledger.timeline(ofShare: idB).suffix(2).map(\.event) == ["processed", "deleted"])
            #expect(try ledger.pending() == (0, 0))
        }
    }

    @Test(arguments: LedgerKind.available)
    func retryReleaseRecoverQuarantineRequeueAndPurge(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let id = try Self.publishedShare(in: ledger)

            _ = try ledger.recordClaimed([id])
            let notBefore = LedgerClock.now() + 60_000
            #expect(try ledger.recordRetry(
                shareID: id, code: .processorFailed, durationMilliseconds: 3, notBefore: notBefore).isEmpty)
            #expect(try ledger.deferredShares(now: LedgerClock.now()) == [id: notBefore])
            #expect(try ledger.attempts(ofShare: id) == 1)

            #expect(try ledger.recordClaimed([id]).histories.mapValues(\.attempts) == [id: 1])
            #expect(try ledger.recordReleased(shareID: id).isEmpty)
            #expect(try ledger.attempts(ofShare: id) == 1)

            // A dead claim whose processor had not started is charged nothing; one whose processor was running is
            // charged a death, not an attempt; a run that ends clears the deaths before it.
            _ = try ledger.recordClaimed([id])
            #expect(try ledger.runState(ofShare: id) == .notStarted)
            #expect(try ledger.recordRecovered(shareID: id).isEmpty)
            #expect(try ledger.attempts(ofShare: id) == 1)
            #expect(try ledger.recordRecovered(shareID: id)
                == [PreconditionViolation(shareID: id, expected: [.claimed], found: .published)])
            #expect(try ledger.recordRuns(started: id, succeeded: [])
                == [PreconditionViolation(shareID: id, expected: [.claimed], found: .published)])
            for deaths in 1...2 {
                #expect(try ledger.recordClaimed([id]).histories == [id: .init(attempts: 1, deaths: deaths - 1)])
                #expect(try ledger.recordRuns(started: id, succeeded: []).isEmpty)
                #expect(try ledger.runState(ofShare: id) == .started)
                #expect(try ledger.recordCrashed(shareID: id).isEmpty)
                #expect(try ledger.runState(ofShare: id) == .notStarted)
            }
            #expect(try ledger.recordClaimed([id]).histories == [id: .init(attempts: 1, deaths: 2)])
            #expect(try ledger.recordRuns(started: id, succeeded: []).isEmpty)
            #expect(try ledger.recordRetry(shareID: id, code: .io, durationMilliseconds: 1, notBefore: 0).isEmpty)
            #expect(try ledger.runState(ofShare: id) == .notStarted)
            #expect(try ledger.recordClaimed([id]).histories == [id: .init(attempts: 2, deaths: 0)])
            #expect(try ledger.recordReleased(shareID: id).isEmpty)
            #expect(try ledger.timeline(ofShare: id).filter { $0.event == "crashed" }.map(\.code)
                == ["ERR_PROCESSOR_FAILED", "ERR_PROCESSOR_FAILED"])

            _ = try ledger.recordClaimed([id])
            #expect(try ledger.recordQuarantined(shareID: id, code: .timeout, durationMilliseconds: 9).isEmpty)
            #expect(try ledger.state(ofShare: id) == .quarantined)
            #expect(try ledger.attempts(ofShare: id) == 3)
            let status = try ledger.status(now: LedgerClock.now())
            #expect(status.quarantine == 1)
            #expect(status.recentFailures == [.processorFailed: 1, .timeout: 1, .io: 1])
            let listed = try ledger.listShares()
            #expect(listed.map(\.shareId) == [id])
            #expect(listed.first?.stage == .quarantine)
            #expect(listed.first?.lastCode == .processorFailed)
            #expect(listed.first?.bytes == 5)

            #expect(try ledger.recordRequeued(shareID: id).isEmpty)
            #expect(try ledger.attempts(ofShare: id) == 0)
            #expect(try ledger.recordPurged(shareID: id)
                == [PreconditionViolation(shareID: id, expected: [.quarantined], found: .published)])
            _ = try ledger.recordClaimed([id])
            #expect(
                try ledger.recordQuarantined(shareID: id, code: .processorFailed, durationMilliseconds: nil).isEmpty)
            #expect(try ledger.attempts(ofShare: id) == 0)
            #expect(try ledger.recordPurged(shareID: id).isEmpty)
            #expect(try ledger.state(ofShare: id) == .purged)
        }
    }

    @Test(arguments: LedgerKind.available)
    func rollbackUnpublishRepairAndPrune(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let refused = Self.record()
            try ledger.recordRolledBack(refused.manifest, code: .typeMismatch)
            #expect(try ledger.state(ofShare: refused.manifest.shareId) == .rejected)

            let staged = Self.record()
            let kept = Self.record()
            let id = staged.manifest.shareId
            try ledger.recordStaged([staged, kept])
            #expect(try ledger.recordUnpublished([id], code: .io).isEmpty)
            #expect(try ledger.state(ofShare: id) == .rejected)
            #expect(try ledger.stagedSources().map(\.shareID) == [kept.manifest.shareId])
            #expect(try ledger.recordUnpublished([id], code: .io)
                == [PreconditionViolation(shareID: id, expected: [.staged], found: .rejected)])
            try ledger.markAllSourcesDone(spool: UUID().uuidString)
            #expect(try ledger.stagedSources().isEmpty)

            try ledger.repair(shareID: kept.manifest.shareId, to: .quarantined)
            #expect(try ledger.state(ofShare: kept.manifest.shareId) == .quarantined)
            #expect(try ledger.status(now: LedgerClock.now()).rejected == 2)

            #expect(try ledger.prune(before: LedgerClock.now() + 1) > 0)
            #expect(try ledger.state(ofShare: id) == nil)
            #expect(try ledger.state(ofShare: refused.manifest.shareId) == nil)
            #expect(try ledger.state(ofShare: kept.manifest.shareId) == .quarantined)
        }
    }

    /// The sweep's race, made deterministic: a row listed `published` is claimed and processed (its directory
    /// removed) before the reconciliation reaches it. The repair, guarded by the listed state, leaves it processed
    /// and writes no event.
    @Test(arguments: LedgerKind.available)
    func aRepairLeavesARowThatMovedOnSinceItWasListed(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let id = try Self.publishedShare(in: ledger)
            _ = try ledger.recordClaimed([id])
            #expect(try ledger.recordProcessed([(id, 1)]).isEmpty)
            let events = try ledger.timeline(ofShare: id).count
            #expect(try ledger.repair(shareID: id, from: [.published], to: .purged)
                == [PreconditionViolation(shareID: id, expected: [.published], found: .processed)])
            #expect(try ledger.state(ofShare: id) == .processed)
            #expect(try ledger.timeline(ofShare: id).count == events)
            // A row still as listed follows its directory.
            let other = Self.record()
            try ledger.recordStaged([other])
            #expect(try ledger.repair(shareID: other.manifest.shareId, from: [.staged], to: .rejected).isEmpty)
            #expect(try ledger.state(ofShare: other.manifest.shareId) == .rejected)
        }
    }

    @Test(arguments: LedgerKind.available)
    func aSpoolRunsOnEitherLedger(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state", ledger: try kind.make(in: dir), logger: nil)
            let ids = try await publishTextShares(spool, ["one\n", "two\n", "three\n"])
            let processor = ClosureProcessor { share in
                if share.shareId == ids[1] { throw ShareError(.processorFailed, "no") }
            }
            let summary = try await Consumer(
                spool: spool, processor: processor, configuration: fastConfiguration { $0.maxAttempts = 2 }
            ).drain()
            #expect(summary.processed == 2)
            #expect(summary.quarantined == 1)
            #expect(try spool.shareIDs(in: .quarantine) == [ids[1]])
            #expect(try spool.shareIDs(in: .incoming).isEmpty)
            #expect(try spool.ledger.attempts(ofShare: ids[1]) == 2)
            #expect(try spool.status().processed == 2)
        }
    }
}
