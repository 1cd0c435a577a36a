import Foundation
import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite(.timeLimit(.minutes(5))) struct LedgerTests {
    @Test func statusAndListShowEveryStageBytesAndRecentFailures() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let done = try await publishTextShares(spool, ["fails\n", "works\n"])
            let processor = ClosureProcessor { share in
                if share.shareId == done[0] { throw ShareError(.processorFailed, "no") }
            }
            _ = try await Consumer(
                spool: spool, processor: processor, configuration: fastConfiguration { $0.maxAttempts = 1 }
            ).drain()
            let pending = try await publishTextShares(spool, ["c\n", "dddddd\n"])
            let claim = try mustClaim(spool, pending[1])
            let refused = await ShareLoader(spool: spool).load([
                DataItemProvider(data: Data("plain text\n".utf8), types: ["public.jpeg"])
            ])
            #expect(refused.status == .rejected)

            let status = try spool.status()
            #expect(status.staging == 0)
            #expect(status.incoming == 1)
            #expect(status.processing == 1)
            #expect(status.quarantine == 1)
            #expect(status.processed == 1)
            #expect(status.rejected == 1)
            #expect(status.pendingBytes == 9)
            #expect(status.recentFailures == [.processorFailed: 1, .typeMismatch: 1])
            let oldest = try #require(status.oldestPendingCreatedAt)
            #expect(abs(oldest.timeIntervalSinceNow) < 60)
            #expect(try spool.status(now: Date().addingTimeInterval(2 * 86_400)).recentFailures.isEmpty)

            let rows = try spool.listShares()
            #expect(rows.map(\.shareId) == [done[0], pending[0], pending[1]])
            #expect(rows.map(\.stage) == [.quarantine, .incoming, .processing])
            #expect(rows.map(\.attempts) == [1, 0, 0])
            #expect(rows.map(\.bytes) == [6, 2, 7])
            #expect(rows.map(\.attachments) == [1, 1, 1])
            #expect(rows[0].lastCode == .processorFailed)
            #expect(rows[1].lastCode == nil)
            _ = consume claim
        }
    }

    @Test func retentionPurgesOldQuarantineAndPrunesOldEvents() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, ["old\n", "new\n", "processed long ago\n"])
            let processor = ClosureProcessor { share in
                if share.shareId != ids[2] { throw ShareError(.processorFailed, "no") }
            }
            _ = try await Consumer(
                spool: spool, processor: processor, configuration: fastConfiguration { $0.maxAttempts = 1 }
            ).drain()
            let eightDaysAgo = timespec(tv_sec: time(nil) - 8 * 86_400, tv_nsec: 0)
            var times = [eightDaysAgo, eightDaysAgo]
            #expect(utimensat(AT_FDCWD, spool.path(.quarantine, ids[0]), &times, AT_SYMLINK_NOFOLLOW) == 0)
            let longAgo = LedgerClock.now() - 31 * 86_400_000
            let driver = spool.store.driver
            try driver.run("UPDATE shares SET updated_at = ? WHERE id = ?", [.integer(longAgo), .text(ids[2])])
            try driver.run("UPDATE events SET at = ? WHERE share_id = ?", [.integer(longAgo), .text(ids[2])])
            let aged = try driver.run("SELECT COUNT(*) FROM events WHERE share_id = ?", [.text(ids[2])]).scalar

            let report = try spool.applyRetention()
            #expect(report.purgedShares == 1)
            #expect(report.prunedEvents == Int(aged.integer ?? -1))
            #expect(try entries(spool, .quarantine) == [ids[1]])
            #expect(try spool.ledger.state(ofShare: ids[0]) == .purged)
            #expect(try spool.ledger.state(ofShare: ids[2]) == nil)
            #expect(try spool.store.events(.processed, shareID: ids[2]).isEmpty)
            #expect(try spool.store.events(.quarantined, shareID: ids[1]).count == 1)
        }
    }
}
