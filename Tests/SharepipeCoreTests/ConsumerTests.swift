import Foundation
import Glibc
import Synchronization
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// A processor made of a closure.
struct ClosureProcessor: Processor {
    let body: @Sendable (ClaimedShare) async throws -> Void

    func process(_ share: ClaimedShare) async throws {
        try await body(share)
    }
}

/// Counts calls per share id, with their times on `clock` (wall milliseconds).
final class CallLog: Sendable {
    private let calls = Mutex<[String: [Int64]]>([:])
    private let clock: any SharepipeClock

    init(clock: any SharepipeClock = SystemClock()) {
        self.clock = clock
    }

    /// Records a call and returns how many there were for this share, this one included.
    @discardableResult
    func record(_ shareID: String) -> Int {
        let now = clock.wallMilliseconds()
        return calls.withLock { calls in
            calls[shareID, default: []].append(now)
            return calls[shareID]!.count
        }
    }

    var counts: [String: Int] { calls.withLock { $0.mapValues(\.count) } }
    func times(_ shareID: String) -> [Int64] { calls.withLock { $0[shareID] ?? [] } }
}

/// Publishes one share per text through the real loader; returns the share ids.
func publishTextShares(_ spool: Spool, _ texts: [String], suggestedName: String = "note.txt") async throws -> [String] {
    let loader = ShareLoader(spool: spool)
    var ids: [String] = []
    for text in texts {
        let receipt = await loader.load([
            DataItemProvider(data: Data(text.utf8), types: ["public.plain-text"], suggestedName: suggestedName)
        ])
        try #require(receipt.status == .complete)
        ids.append(receipt.shareId)
    }
    return ids
}

/// The kernel's name of the calling thread.
func currentThreadName() -> String {
    let comm = (try? System.readFile("/proc/thread-self/comm")) ?? []
    return String(decoding: comm, as: UTF8.self).trimmingCharacters(in: .newlines)
}

/// Claims a share that must be claimable. A claim this process dropped a moment ago may still hold its lock for an
/// instant (a child another thread is spawning has a copy of the descriptor until its exec; see
/// `Spool.recover(retryingLockedFor:)`), so a refused claim is tried again for a second before it counts as lost.
func mustClaim(_ spool: Spool, _ shareID: String) throws -> ShareClaim {
    let deadline = ContinuousClock.now + .seconds(1)
    while true {
        if let claim = try spool.claim(shareID) { return claim }
        guard ContinuousClock.now < deadline else { throw ShareError(.io, "the claim was lost") }
        usleep(5_000)
    }
}

func fastConfiguration(_ configure: (inout ConsumerConfiguration) -> Void = { _ in }) -> ConsumerConfiguration {
    var configuration = ConsumerConfiguration()
    configuration.retryDelay = .milliseconds(20)
    configuration.pollInterval = .milliseconds(20)
    configure(&configuration)
    return configuration
}

func entries(_ spool: Spool, _ stage: Spool.Stage) throws -> [String] {
    try System.listDirectory(spool.path(stage)).sorted()
}

extension LedgerStore {
    /// Events of one kind recorded for a share, with their codes.
    func events(_ event: LedgerEvent, shareID: String) throws -> [String?] {
        let sql = "SELECT code FROM events WHERE share_id = ? AND event = ? ORDER BY seq"
        return try driver.run(sql, [.text(shareID), .text(event.rawValue)]).rows.map { $0[0].text }
    }
}

@Suite(.timeLimit(.minutes(5))) struct ConsumerTests {
    @Test func eightConcurrentClaimersEachWinADifferentShare() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, (0..<200).map { "share \($0)\n" })
            let winners = CallLog()
            await withTaskGroup(of: Void.self) { group in
                for claimer in 0..<8 {
                    group.addTask {
                        // Each claimer walks the list from a different place, so they collide all the time.
                        for offset in 0..<ids.count {
                            let shareID = ids[(offset + claimer * 25) % ids.count]
                            if let claim = try? spool.claim(shareID) {
                                winners.record(claim.shareID)
                            }
                        }
                    }
                }
            }
            #expect(winners.counts.count == 200)
            #expect(winners.counts.values.allSatisfy { $0 == 1 })
            #expect(Set(winners.counts.keys) == Set(ids))
            #expect(try entries(spool, .incoming).isEmpty)
            #expect(try entries(spool, .processing) == ids.sorted())
        }
    }

    @Test func twoConsumersWithEightWorkersProcessEveryShareExactlyOnce() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, (0..<200).map { "share \($0)\n" })
            let log = CallLog()
            let processor = ClosureProcessor { share in
                #expect(share.attachments.count == 1)
                #expect(FileManager.default.fileExists(atPath: share.attachments[0].path))
                log.record(share.shareId)
            }
            // A second spool over the same directory has its own ledger connection, as a second process would.
            let other = try Spool(root: dir + "/state")
            let configuration = fastConfiguration { $0.workers = 4 }
            async let first = Consumer(spool: spool, processor: processor, configuration: configuration).drain()
            async let second = Consumer(spool: other, processor: processor, configuration: configuration).drain()
            let summaries = try await [first, second]
            #expect(summaries.map(\.processed).reduce(0, +) == 200)
            #expect(log.counts.count == 200)
            #expect(log.counts.values.allSatisfy { $0 == 1 })
            #expect(Set(log.counts.keys) == Set(ids))
            #expect(try entries(spool, .incoming).isEmpty)
            #expect(try entries(spool, .processing).isEmpty)
            for shareID in ids {
                #expect(try spool.ledger.state(ofShare: shareID) == .processed)
                #expect(try spool.ledger.attempts(ofShare: shareID) == 1)
            }
        }
    }

    @Test func failingTwiceThenSucceedingIsProcessedOnceWithThreeAttempts() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try #require(try await publishTextShares(spool, ["flaky\n"]).first)
            let clock = ManualClock()
            let log = CallLog(clock: clock)
            let processor = ClosureProcessor { share in
                #expect(share.attempt == log.record(share.shareId))
                if share.attempt < 3 { throw ShareError(.io, "not yet") }
            }
            let configuration = fastConfiguration {
                $0.retryDelay = .milliseconds(100)
                $0.workers = 1
                $0.clock = clock
            }
            // Idle means the one worker and the shutdown watch both sleep on the clock; time then jumps to the
            // worker's next deadline (a poll, or the not-before time), so the attempts land exactly on it.
            let summary = try await clock.driving(whenSleeping: 2) {
                try await Consumer(spool: spool, processor: processor, configuration: configuration).drain()
            }
            #expect(summary == { var s = ConsumeSummary(); s.processed = 1; s.retried = 2; return s }())
            #expect(log.counts[shareID] == 3)
            let times = log.times(shareID)
            #expect(times.count == 3)
            #expect(times[1] - times[0] == 100)
            #expect(times[2] - times[1] == 200)
            #expect(try spool.ledger.attempts(ofShare: shareID) == 3)
            #expect(try spool.ledger.state(ofShare: shareID) == .processed)
            #expect(try spool.store.events(.failed, shareID: shareID) == ["ERR_IO", "ERR_IO"])
            #expect(try spool.store.events(.processed, shareID: shareID).count == 1)
            #expect(try entries(spool, .incoming).isEmpty)
            #expect(try entries(spool, .processing).isEmpty)
        }
    }

    @Test func failingAlwaysIsQuarantinedWithCopiesIntactThenRequeued() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let content = "keep me exactly\n"
            let shareID = try #require(try await publishTextShares(spool, [content]).first)
            let manifest = try spool.manifest(.incoming, shareID)
            let failing = ClosureProcessor { _ in throw ShareError(.processorFailed, "the command exited with 7") }
            let summary = try await Consumer(spool: spool, processor: failing, configuration: fastConfiguration())
                .drain()
            #expect(summary.quarantined == 1 && summary.retried == 2 && summary.processed == 0)
            #expect(try entries(spool, .quarantine) == [shareID])
            let directory = spool.path(.quarantine, shareID)
            let file = try #require(manifest.attachments[0].file)
            #expect(try System.listDirectory(directory).sorted() == [file, "manifest.json", "reason.json"].sorted())
            #expect(try System.readFile(directory + "/" + file) == Array(content.utf8))
            let reason = try spool.quarantineReason(shareID)
            #expect(reason.code == .processorFailed)
            #expect(reason.attempts == 3)
            #expect(reason.message == "ERR_PROCESSOR_FAILED: the command exited with 7")
            #expect(reason.firstAttemptAt <= reason.lastAttemptAt)
            let json = try JSONSerialization.jsonObject(with: Data(try System.readFile(directory + "/reason.json")))
            #expect(Set((json as? [String: Any])?.keys ?? [:].keys)
                == ["code", "message", "attempts", "firstAttemptAt", "lastAttemptAt"])
            #expect(try spool.ledger.state(ofShare: shareID) == .quarantined)
            #expect(try spool.store.events(.quarantined, shareID: shareID) == ["ERR_PROCESSOR_FAILED"])

            try spool.requeue(shareID)
            #expect(try entries(spool, .incoming) == [shareID])
            #expect(try System.lstatIfPresent(spool.path(.incoming, shareID) + "/reason.json") == nil)
            #expect(try spool.ledger.attempts(ofShare: shareID) == 0)
            let log = CallLog()
            let succeeding = ClosureProcessor { share in log.record(share.shareId) }
            let second = try await Consumer(spool: spool, processor: succeeding, configuration: fastConfiguration())
                .drain()
            #expect(second.processed == 1)
            #expect(try spool.ledger.state(ofShare: shareID) == .processed)
            #expect(throws: ShareError.self) { try spool.requeue(shareID) }
        }
    }

    @Test func purgeDeletesQuarantinedShares() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, ["a\n", "b\n"])
            let failing = ClosureProcessor { _ in throw ShareError(.processorFailed, "no") }
            _ = try await Consumer(
                spool: spool, processor: failing, configuration: fastConfiguration { $0.maxAttempts = 1 }
            ).drain()
            #expect(try entries(spool, .quarantine) == ids.sorted())
            #expect(try spool.purgeQuarantine().sorted() == ids.sorted())
            #expect(try entries(spool, .quarantine).isEmpty)
            #expect(try spool.ledger.state(ofShare: ids[0]) == .purged)
        }
    }

    @Test func gracefulShutdownReleasesUnfinishedSharesWithoutCountingAnAttempt() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, ["one\n", "two\n", "three\n"])
            let log = CallLog()
            let hanging = ClosureProcessor { share in
                log.record(share.shareId)
                // The scenario: a processor that hangs until it is cancelled.
                try await Task.sleep(for: .seconds(60))
            }
            let consumer = Consumer(
                spool: spool, processor: hanging,
                configuration: fastConfiguration { $0.shutdownDeadline = .milliseconds(100) })
            let running = Task { try await consumer.run() }
            #expect(try await eventually { log.counts.count == 2 })
            running.cancel()
            try await running.value
            #expect(try entries(spool, .incoming) == ids.sorted())
            #expect(try entries(spool, .processing).isEmpty)
            for shareID in ids {
                #expect(try spool.ledger.attempts(ofShare: shareID) == 0)
                #expect(try spool.ledger.state(ofShare: shareID) == .published)
            }
        }
    }

    @Test func shutdownLetsInFlightWorkFinishWithinTheDeadline() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try #require(try await publishTextShares(spool, ["slow\n"]).first)
            let log = CallLog()
            let slow = ClosureProcessor { share in
                log.record(share.shareId)
                // The scenario: a processor that takes a while and ignores cancellation, as one that cannot stop
                // half-way would.
                try await Task { try await Task.sleep(for: .milliseconds(300)) }.value
            }
            let consumer = Consumer(spool: spool, processor: slow, configuration: fastConfiguration())
            let running = Task { try await consumer.run() }
            #expect(try await eventually { log.counts.count == 1 })
            running.cancel()
            try await running.value
            #expect(try spool.ledger.state(ofShare: shareID) == .processed)
            #expect(try entries(spool, .incoming).isEmpty)
            #expect(try entries(spool, .processing).isEmpty)
        }
    }

    @Test func wakeStartsAnIdleConsumerAtOnce() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let log = CallLog()
            // Time stands still: the 30 s poll never comes, so only the wake can start the worker.
            let clock = ManualClock()
            let consumer = Consumer(
                spool: spool, processor: ClosureProcessor { log.record($0.shareId) },
                configuration: fastConfiguration {
                    $0.pollInterval = .seconds(30)
                    $0.workers = 1
                    $0.clock = clock
                })
            let running = Task { try await consumer.run() }
            // Idle: the worker, the shutdown watch and the hourly retention all sleep on the clock.
            #expect(try await eventually { clock.sleepers == 3 })
            let shareID = try #require(try await publishTextShares(spool, ["wake up\n"]).first)
            consumer.wake()
            #expect(try await eventually { try spool.ledger.state(ofShare: shareID) == .processed })
            running.cancel()
            try await running.value
        }
    }

    @Test func workersRunOnThreadsOfTheirOwnNotOnTheCooperativePool() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            _ = try await publishTextShares(spool, ["a\n", "b\n", "c\n"])
            let names = CallLog()
            let processor = ClosureProcessor { _ in
                names.record(currentThreadName())
                // The scenario: a processor that suspends, so that its resumption's thread is checked too.
                try await Task.sleep(for: .milliseconds(5))
                names.record(currentThreadName())
            }
            _ = try await Consumer(spool: spool, processor: processor, configuration: fastConfiguration()).drain()
            #expect(names.counts.keys.allSatisfy { $0.hasPrefix("sp-consumer-") }, "\(names.counts)")
            #expect(names.counts.values.reduce(0, +) == 6)
        }
    }

    @Test func drainEndsWhenTheOnlyShareLeftCannotBeClaimed() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try #require(try await publishTextShares(spool, ["stuck\n"]).first)
            // A broken spool: the same share in incoming and in processing. The claim rename refuses to replace.
            try System.makeDirectory(spool.path(.processing, shareID))
            try writeFile(spool.path(.processing, shareID) + "/other", "other")
            let log = CallLog()
            let summary = try await Consumer(
                spool: spool, processor: ClosureProcessor { log.record($0.shareId) }, configuration: fastConfiguration()
            ).drain()
            #expect(summary == ConsumeSummary())
            #expect(log.counts.isEmpty)
            #expect(try entries(spool, .incoming) == [shareID])
        }
    }

    @Test func ledgerHoldsNoByteOfAnyAttachmentNorItsName() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let canary = "CANARY-4f9c2e-content-must-never-reach-the-ledger"
            let name = "secret-name-8d1b.txt"
            let ids = try await publishTextShares(
                spool, (0..<3).map { "\(canary) \($0)\n" + String(repeating: canary, count: 50) }, suggestedName: name)
            let processor = ClosureProcessor { share in
                if share.shareId == ids[0] { throw ShareError(.processorFailed, "refused") }
            }
            _ = try await Consumer(spool: spool, processor: processor, configuration: fastConfiguration()).drain()
            var ledgerBytes = Data()
            for suffix in ["", "-wal", "-shm"] {
                let url = URL(fileURLWithPath: spool.root + "/ledger.sqlite" + suffix)
                ledgerBytes += (try? Data(contentsOf: url)) ?? Data()
            }
            #expect(ledgerBytes.count > 0)
            #expect(ledgerBytes.range(of: Data(canary.utf8)) == nil)
            #expect(ledgerBytes.range(of: Data(canary.prefix(12).utf8)) == nil)
            #expect(ledgerBytes.range(of: Data("secret-name".utf8)) == nil)
        }
    }
}
