import Dispatch
import Foundation
import Synchronization
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem
import SharepipeTesting

/// Issue 21: the duplicate check. The plan (pure), the ledgers' reservation (both backends: the window's edge, what
/// counts as an original, reservations of shares that died, several connections racing for one content, a batch of
/// reservations in one transaction) and the loader's outcome under each policy.
@Suite(.timeLimit(.minutes(5))) struct DuplicateTests {
    static func hash(_ seed: Int) -> String {
        SHA256.hash(Array("content \(seed)".utf8))
    }

    static func reservation(
        _ shareID: String = UUID().uuidString, at createdAt: Int64, _ hashes: [String],
        policy: DuplicatePolicy = .reject, allOrNothing: Bool = false, window: Int64 = 86_400_000,
        now: Int64? = nil
    ) -> ContentReservation {
        let now = now ?? createdAt
        return ContentReservation(
            shareID: shareID, createdAt: createdAt,
            claims: hashes.enumerated().map { ContentClaim(index: $0, sha256: $1, fileID: UUID().uuidString) },
            policy: policy, allOrNothing: allOrNothing, windowStart: now - window,
            reservationsSince: now - ShareLoader.reservationLifetime.milliseconds)
    }

    /// A staged record of a share with one copy per hash, created at `createdAt` (ms).
    static func staged(_ hashes: [String], at createdAt: Int64) -> StagedRecord {
        let created = Date(timeIntervalSince1970: Double(createdAt) / 1000).rfc3339
        let attachments = hashes.enumerated().map { index, hash in
            AttachmentRecord(
                index: index, status: .copied, fileId: UUID().uuidString, file: "x.txt",
                typeIdentifier: "public.plain-text", declaredTypes: ["public.plain-text"], sniffedMimeType: "text/plain",
                bytes: 5, sha256: hash, suggestedName: nil, error: nil)
        }
        let manifest = Manifest(
            shareId: UUID().uuidString, sourceApp: nil, createdAt: created, policy: .keepSuccessful,
            attachments: attachments)
        return StagedRecord(manifest: manifest, sources: [])
    }

    // MARK: Which copy is whose duplicate

    @Test(arguments: LedgerKind.available)
    func theSecondCopyInAShareDuplicatesTheFirst(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let (a, b) = (Self.hash(1), Self.hash(2))
            let flagged = Self.reservation(at: 1_000, [a, b, a], policy: .flag)
            let origins = try ledger.reserveContents(flagged)
            #expect(origins.map { $0?.shareId } == [nil, nil, flagged.shareID])
            #expect(origins[2]?.fileId == flagged.claims[0].fileID)

            let rejecting = Self.reservation(at: 1_000_000, [b, b, b])
            #expect(try ledger.reserveContents(rejecting).map { $0?.fileId }
                == [nil, rejecting.claims[0].fileID, rejecting.claims[0].fileID])
            #expect(try ledger.duplicates(ofShare: rejecting.shareID).map(\.rejected) == [true, true])
        }
    }

    @Test(arguments: LedgerKind.available)
    func anEarlierShareIsTheOriginalOfEveryCopy(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let a = Self.hash(1)
            let now = LedgerClock.now()
            let earlier = Self.staged([a], at: now - 500)
            try ledger.recordStaged([earlier])
            let origins = try ledger.reserveContents(Self.reservation(at: now, [a, a]))
            #expect(origins.map { $0?.shareId } == [earlier.manifest.shareId, earlier.manifest.shareId])
            #expect(origins.first??.createdAt == earlier.manifest.createdAt)
        }
    }

    /// An all-or-nothing share that loses a copy to reject is rolled back: none of its copies may become an original.
    @Test(arguments: LedgerKind.available)
    func anAllOrNothingShareWithARejectedCopyRecordsNoOriginal(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let (a, b) = (Self.hash(1), Self.hash(2))
            let now = LedgerClock.now()
            let earlier = Self.staged([b], at: now - 500)
            try ledger.recordStaged([earlier])
            let strict = Self.reservation(at: now, [a, b], allOrNothing: true)
            #expect(try ledger.reserveContents(strict).map { $0?.shareId } == [nil, earlier.manifest.shareId])
            // a was not kept: the next share holding it is its original.
            #expect(try ledger.reserveContents(Self.reservation(at: now + 1, [a])) == [nil])
        }
    }

    @Test func timesRoundTripThroughTheLedgersMilliseconds() {
        for milliseconds: Int64 in [0, 1, 951_782_400_000, 1_764_590_400_123, 4_102_444_799_999] {
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            #expect(Date.milliseconds(rfc3339: date.rfc3339) == milliseconds, "\(date.rfc3339)")
        }
        #expect(Date.milliseconds(rfc3339: "2026-12-01T12:00:00Z") == nil)
        #expect(DuplicateDay.name(ofDay: 0) == "1970-01-01")
        #expect(DuplicateDay.name(ofDay: 20_423) == "2025-12-01")
        #expect(DuplicateDay.name(ofDay: 11_016) == "2000-02-29")
    }

    // MARK: The ledgers

    @Test(arguments: LedgerKind.available)
    func theWindowsEdgeIsInclusive(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let a = Self.hash(1)
            let original = Self.staged([a], at: 1_000_000)
            try ledger.recordStaged([original])
            let window: Int64 = 2_000
            // At exactly the window's length after the original: still a duplicate (rejected, so itself no
            // original for what follows).
            let atEdge = try ledger.reserveContents(Self.reservation(at: 1_002_000, [a], window: window))
            #expect(atEdge.first??.shareId == original.manifest.shareId)
            #expect(atEdge.first??.createdAt == original.manifest.createdAt)
            // One millisecond later, both are outside the window: an original again.
            let past = try ledger.reserveContents(
                Self.reservation(at: 1_002_001, [a], policy: .flag, window: window, now: 1_003_001))
            #expect(past == [nil])
        }
    }

    @Test(arguments: LedgerKind.available)
    func quarantinedAndRolledBackSharesAreNoOriginals(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let (a, b) = (Self.hash(1), Self.hash(2))
            let now = LedgerClock.now()
            let quarantined = Self.staged([a], at: now - 10)
            try ledger.recordStaged([quarantined])
            let id = quarantined.manifest.shareId
            _ = try ledger.recordPublished([id], sourcesDone: [])
            _ = try ledger.recordClaimed([id])
            _ = try ledger.recordQuarantined(shareID: id, code: .processorFailed, durationMilliseconds: 1)
            #expect(try ledger.reserveContents(Self.reservation(at: now, [a], policy: .flag)) == [nil])

            // Reserved, then rolled back by its policy: the reservation no longer counts.
            let rolledBack = Self.reservation(at: now, [b])
            #expect(try ledger.reserveContents(rolledBack) == [nil])
            var manifest = Self.staged([b], at: now).manifest
            manifest.shareId = rolledBack.shareID
            try ledger.recordRolledBack(manifest, code: .duplicate)
            #expect(try ledger.reserveContents(Self.reservation(at: now + 1, [b])) == [nil])
            #expect(try ledger.reserveContents(Self.reservation(at: now + 2, [b])).first??.shareId != nil)
        }
    }

    /// A loader that reserved and died before staging: recovery releases the reservation, and without recovery it
    /// stops counting after `reservationLifetime`.
    @Test(arguments: LedgerKind.available)
    func aReservationOfAShareThatWasNeverStagedDoesNotBlockItsContent(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let (a, b) = (Self.hash(1), Self.hash(2))
            let now = LedgerClock.now()
            let dead = Self.reservation(at: now, [a, b])
            #expect(try ledger.reserveContents(dead) == [nil, nil])
            #expect(try ledger.reserveContents(Self.reservation(at: now, [a])).first??.shareId == dead.shareID)

            try ledger.releaseContents(ofShares: [dead.shareID])
            #expect(try ledger.reserveContents(Self.reservation(at: now, [a])) == [nil])

            let lifetime = ShareLoader.reservationLifetime.milliseconds
            let later = now + lifetime + 1
            // b's reservation was released too; a's second reservation is still young at `now` but not at `later`.
            #expect(try ledger.reserveContents(Self.reservation(at: later, [a], now: later)) == [nil])
        }
    }

    @Test(arguments: LedgerKind.available)
    func acceptedCopiesAreRecordedAtStagingAndShownWithTheirDuplicates(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let a = Self.hash(1)
            let now = LedgerClock.now()
            let accepted = Self.staged([a], at: now - 5)
            try ledger.recordStaged([accepted])
            let flagged = Self.reservation(at: now, [a, a], policy: .flag)
            let origins = try ledger.reserveContents(flagged)
            #expect(origins.map { $0?.shareId } == [accepted.manifest.shareId, accepted.manifest.shareId])
            let rejected = Self.reservation(at: now, [a])
            #expect(try ledger.reserveContents(rejected).first??.fileId == accepted.manifest.attachments[0].fileId)

            #expect(try ledger.duplicates(ofShare: flagged.shareID).map(\.index) == [0, 1])
            #expect(try ledger.duplicates(ofShare: rejected.shareID).map(\.rejected) == [true])
            let day = DuplicateDay.name(ofDay: now / 86_400_000)
            #expect(try ledger.duplicateDays(since: now - 86_400_000)
                == [DuplicateDay(day: day, flagged: 2, rejected: 1)])
            // Retention forgets contents with the events.
            _ = try ledger.prune(before: now + 1)
            #expect(try ledger.reserveContents(Self.reservation(at: now + 2, [a])) == [nil])
        }
    }

    /// One batch, one transaction, applied in its order: a later reservation finds an earlier one's rows (the first
    /// of two shares with one content is the original), and an all-or-nothing share's copies, dropped because it
    /// lost one, are no original for the reservations after it.
    @Test(arguments: LedgerKind.available)
    func aBatchOfReservationsIsAppliedInItsOrder(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let (a, b, c) = (Self.hash(1), Self.hash(2), Self.hash(3))
            let now = LedgerClock.now()
            let first = Self.reservation(at: now, [a, b])
            let second = Self.reservation(at: now, [a])
            let strict = Self.reservation(at: now, [c, b], allOrNothing: true)
            let fourth = Self.reservation(at: now, [c], policy: .flag)
            let empty = Self.reservation(at: now, [])
            let origins = try ledger.reserveContents([first, second, empty, strict, fourth])
            #expect(origins.map { $0.map { $0?.fileId } } == [
                [nil, nil], [first.claims[0].fileID], [], [nil, first.claims[1].fileID], [nil],
            ])
            #expect(try ledger.duplicates(ofShare: second.shareID).map(\.rejected) == [true])
            #expect(try ledger.reserveContents([empty]) == [[]])
        }
    }

    /// Eight connections to one ledger reserve one content at once, 20 times over: each time exactly one gets no
    /// origin, whatever the interleaving.
    @Test(arguments: LedgerKind.available)
    func connectionsRacingForOneContentMakeOneOriginal(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let database = try kind.database(in: dir)
            let ledgers = try (0..<8).map { _ in try kind.store(database) }
            for round in 0..<20 {
                let hash = Self.hash(1_000 + round)
                let originals = Atomic<Int>(0)
                let failures = Mutex<[String]>([])
                let now = LedgerClock.now()
                DispatchQueue.concurrentPerform(iterations: ledgers.count) { index in
                    do {
                        let origins = try ledgers[index].reserveContents(Self.reservation(at: now, [hash]))
                        if origins == [nil] { originals.add(1, ordering: .relaxed) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                #expect(failures.withLock { $0 }.isEmpty)
                #expect(originals.load(ordering: .relaxed) == 1, "round \(round)")
            }
        }
    }

    /// Eight connections reserve batches holding the same three contents in different orders, 10 times over: no
    /// batch waits for another's key lock while holding one it needs (PostgreSQL would end one with a deadlock), and
    /// each content gets exactly one original.
    @Test(arguments: LedgerKind.available)
    func batchesHoldingOneContentInAnyOrderMakeOneOriginalEach(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let database = try kind.database(in: dir)
            let ledgers = try (0..<8).map { _ in try kind.store(database) }
            for round in 0..<10 {
                let hashes = (0..<3).map { Self.hash(2_000 + round * 3 + $0) }
                let originals = Mutex<[String: Int]>([:])
                let failures = Mutex<[String]>([])
                let now = LedgerClock.now()
                DispatchQueue.concurrentPerform(iterations: ledgers.count) { index in
                    let order = (0..<3).map { hashes[(index + $0) % 3] }
                    let batch = (index % 2 == 0 ? order : order.reversed()).map { Self.reservation(at: now, [$0]) }
                    do {
                        let origins = try ledgers[index].reserveContents(batch)
                        for (reservation, answer) in zip(batch, origins) where answer == [nil] {
                            originals.withLock { $0[reservation.claims[0].sha256, default: 0] += 1 }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                #expect(failures.withLock { $0 }.isEmpty)
                #expect(originals.withLock { $0 } == Dictionary(uniqueKeysWithValues: hashes.map { ($0, 1) }),
                    "round \(round)")
            }
        }
    }

    // MARK: The loader

    func loader(
        _ root: String, _ policy: DuplicatePolicy, sharePolicy: SharePolicy = .keepSuccessful,
        faults: LifecycleFaults? = nil
    ) throws -> ShareLoader {
        var configuration = LoaderConfiguration()
        configuration.duplicates = policy
        configuration.policy = sharePolicy
        return ShareLoader(spool: try Spool(root: root + "/state", faults: faults), configuration: configuration)
    }

    func note(_ dir: String, _ name: String, _ text: String) throws -> FileItemProvider {
        FileItemProvider(path: try writeFile(dir + "/" + name, text))
    }

    @Test func flagNamesTheOriginalInTheReceiptTheManifestAndTheExecEnvironment() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir, .flag)
            let first = await loader.load([try note(dir, "a.txt", "same\n")])
            let second = await loader.load([try note(dir, "b.txt", "same\n"), try note(dir, "c.txt", "other\n")])
            #expect(first.attachments[0].duplicateOf == nil)
            #expect(second.status == .complete)
            let origin = try #require(second.attachments[0].duplicateOf)
            #expect(origin.shareId == first.shareId)
            #expect(origin.fileId == first.attachments[0].fileId)
            #expect(second.attachments[1].duplicateOf == nil)
            let manifest = try loader.spool.manifest(.incoming, second.shareId)
            #expect(manifest.attachments[0].duplicateOf == origin)
            #expect(try loader.spool.manifest(.incoming, first.shareId).createdAt == origin.createdAt)

            let record = dir + "/env"
            let processor = ExecProcessor(command: "printf '%s|' \"${SHAREPIPE_DUPLICATE_OF-unset}\" >> '\(record)'")
            let share = try ClaimedShare(
                manifest: manifest, directory: loader.spool.path(.incoming, second.shareId), attempt: 1)
            try await processor.process(share)
            #expect(try String(contentsOfFile: record, encoding: .utf8) == "\(first.shareId)|unset|")
        }
    }

    @Test func rejectRefusesTheCopyNamingTheOriginalAndThePolicyDecidesTheRest() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir, .reject)
            let first = await loader.load([try note(dir, "a.txt", "same\n")])
            let second = await loader.load([try note(dir, "b.txt", "same\n"), try note(dir, "c.txt", "other\n")])
            #expect(second.status == .partial)
            #expect(second.codes == ["ERR_DUPLICATE", nil])
            #expect(second.attachments[0].duplicateOf?.shareId == first.shareId)
            #expect(second.attachments[0].error?.message.contains(first.shareId) == true)
            #expect(second.attachments[0].fileId == nil)
            let files = try System.listDirectory(loader.spool.path(.incoming, second.shareId)).sorted()
            #expect(files.count == 2)

            let strict = try self.loader(dir, .reject, sharePolicy: .allOrNothing)
            let rolledBack = await strict.load([try note(dir, "d.txt", "fresh\n"), try note(dir, "e.txt", "same\n")])
            #expect(rolledBack.status == .rejected)
            #expect(rolledBack.codes == [nil, "ERR_DUPLICATE"])
            // Its fresh copy was never ingested, so it is nobody's original.
            let again = await strict.load([try note(dir, "f.txt", "fresh\n")])
            #expect(again.status == .complete)
        }
    }

    @Test func twoCopiesInOneShareUnderRejectKeepTheFirst() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir, .reject)
            let receipt = await loader.load([try note(dir, "a.txt", "twice\n"), try note(dir, "b.txt", "twice\n")])
            #expect(receipt.status == .partial)
            #expect(receipt.codes == [nil, "ERR_DUPLICATE"])
            #expect(receipt.attachments[1].duplicateOf?.shareId == receipt.shareId)
            #expect(receipt.attachments[1].duplicateOf?.fileId == receipt.attachments[0].fileId)
        }
    }

    /// Many loads at once under reject, five shares per content: whatever batches their reservations form, each
    /// content has exactly one original and every other share is refused naming it.
    @Test func concurrentLoadsUnderRejectKeepOneOriginalPerContent() async throws {
        try await withTemporaryDirectory { dir in
            let loader = try loader(dir, .reject)
            let providers = try (0..<40).map { index in try note(dir, "n\(index).txt", "content \(index % 8)\n") }
            let receipts = await withTaskGroup(of: (Int, ShareReceipt).self) { group in
                for (index, provider) in providers.enumerated() {
                    group.addTask { (index, await loader.load([provider])) }
                }
                return await group.reduce(into: [Int: ShareReceipt]()) { $0[$1.0] = $1.1 }
            }
            for content in 0..<8 {
                let shares = stride(from: content, to: 40, by: 8).compactMap { receipts[$0] }
                let originals = shares.filter { $0.status == .complete }
                #expect(originals.count == 1, "content \(content)")
                let duplicates = shares.filter { $0.status == .rejected }
                #expect(duplicates.count == 4, "content \(content)")
                #expect(duplicates.allSatisfy { $0.codes == ["ERR_DUPLICATE"] })
                #expect(duplicates.allSatisfy { $0.attachments[0].duplicateOf?.shareId == originals.first?.shareId })
            }
            #expect(try loader.spool.shareIDs(in: .incoming).count == 8)
        }
    }

    /// A reserve batch whose transaction fails fails every share in it with that error; nothing is staged or
    /// reserved, and the next loads go through.
    @Test func aFailedReserveBatchFailsEachOfItsShares() async throws {
        try await withTemporaryDirectory { dir in
            let faults = LifecycleFaults()
            let loader = try loader(dir, .reject, faults: faults)
            let providers = try (0..<6).map { index in try note(dir, "n\(index).txt", "content \(index % 3)\n") }
            faults.failure.withLock { $0 = "reserve.record-reserved" }
            let failed = await withTaskGroup(of: ShareReceipt.self) { group in
                for provider in providers { group.addTask { await loader.load([provider]) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(failed.count == 6)
            #expect(failed.allSatisfy { $0.status == .failed && $0.error?.code == .io })
            #expect(try entries(loader.spool, .staging).isEmpty)
            #expect(try loader.spool.shareIDs(in: .incoming).isEmpty)

            faults.failure.withLock { $0 = nil }
            let retried = await loader.load([providers[0]])
            #expect(retried.status == .complete)
        }
    }

    @Test func acceptIngestsEveryCopyAndStillRecordsItsContent() async throws {
        try await withTemporaryDirectory { dir in
            let accepting = try loader(dir, .accept)
            let first = await accepting.load([try note(dir, "a.txt", "same\n")])
            let second = await accepting.load([try note(dir, "b.txt", "same\n")])
            #expect(second.status == .complete)
            #expect(second.attachments[0].duplicateOf == nil)
            // A daemon switched to reject later finds what was accepted before.
            let rejecting = try loader(dir, .reject)
            let third = await rejecting.load([try note(dir, "c.txt", "same\n")])
            #expect(third.status == .rejected)
            #expect(third.attachments[0].duplicateOf?.shareId == first.shareId)
        }
    }
}

extension LedgerStore {
    /// One reservation as a batch of one.
    func reserveContents(_ reservation: ContentReservation) throws -> [DuplicateOrigin?] {
        try reserveContents([reservation])[0]
    }
}
