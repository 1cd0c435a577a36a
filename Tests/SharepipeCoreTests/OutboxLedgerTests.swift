import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeLedger
@testable import SharepipeSystem

/// The outbox (issue 33) on both ledgers: rows written exactly when the transition they report applies, taken one
/// share event at a time in order, leased, put off, kept as failed past the maximum age, retried.
@Suite(.timeLimit(.minutes(5))) struct OutboxLedgerTests {
    static let urls = ["http://127.0.0.1:9/a", "http://127.0.0.1:9/b"]

    static func ledger(_ kind: LedgerKind, in dir: String) throws -> LedgerStore {
        let ledger = try kind.make(in: dir)
        ledger.outboxTargets.withLock { $0 = OutboxTargets(urls: urls) }
        return ledger
    }

    @Test(arguments: LedgerKind.available)
    func rowsAreWrittenWithTheTransitionTheyReportAndOnlyThen(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try Self.ledger(kind, in: dir)
            let record = LedgerConformanceTests.record()
            let id = record.manifest.shareId
            try ledger.recordStaged([record])
            #expect(try ledger.notificationCounts().pending == 0, "staging reports nothing")
            #expect(try ledger.recordPublished([id], sourcesDone: []).isEmpty)
            #expect(try ledger.notificationCounts().pending == 2, "one row per receiver")
            // A publish that does not apply (already published) writes nothing.
            _ = try ledger.recordPublished([id], sourcesDone: [])
            #expect(try ledger.notificationCounts().pending == 2)
            _ = try ledger.recordClaimed([id])
            #expect(try ledger.recordProcessed([(id, 3)]).isEmpty)
            #expect(try ledger.recordProcessed([(id, 3)]).count == 1)
            let rows = try ledger.notifications(states: [.pending], limit: 10)
            #expect(rows.map(\.type) == ["share.published", "share.published", "share.processed", "share.processed"])
            #expect(Set(rows.map(\.id)).count == 2, "one event id per event, shared by its receivers")
            // A repair into the state the row is in reports nothing; into another state, that state.
            try ledger.repair(shareID: id, to: .processed)
            #expect(try ledger.notificationCounts().pending == 4)
            let rejected = LedgerConformanceTests.record(inode: 9)
            try ledger.recordRolledBack(rejected.manifest, code: .unsupportedType)
            let types = try ledger.notifications(states: [.pending], limit: 10).map(\.type)
            #expect(types.filter { $0 == "share.rejected" }.count == 2)
        }
    }

    /// v12 dropped the `(id, url)` and `(state, created_at)` indexes, which every event's row was written into. The
    /// rows of a ledger made before keep their states and are counted, listed, retried and delivered as before; on
    /// SQLite the counts `status` and the metrics read go through a partial index, never the whole table.
    @Test(arguments: LedgerKind.available)
    func rowsFromBeforeTheOutboxIndexesChangedAreCountedListedRetriedAndDelivered(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let database = try kind.database(in: dir)
            let old = try kind.driver(database)
            let latest = LedgerStore.migrations(old.dialect).count
            try LedgerStore.migrate(old, to: latest - 1)
            let url = Self.urls[0]
            for (event, state) in [("e-pending", "pending"), ("e-failed", "failed"), ("e-delivered", "delivered")] {
                try old.run(
                    """
                    INSERT INTO outbox (id, url, share_id, type, created_at, since, state, next_at)
                    VALUES (?, ?, ?, 'share.published', 1, 1, ?, 1)
                    """, [.text(event), .text(url), .text("share-" + event), .text(state)])
            }
            let ledger = try kind.store(database)
            ledger.outboxTargets.withLock { $0 = OutboxTargets(urls: Self.urls) }
            #expect(try LedgerStore.schemaVersion(ledger.driver) == latest)
            #expect(try ledger.notificationCounts() == (pending: 1, failed: 1))
            let open = try ledger.notifications(states: [.pending, .failed], limit: 10)
            #expect(open.map(\.id) == ["e-pending", "e-failed"])
            #expect(try ledger.notifications(states: [.failed], limit: 10).map(\.id) == ["e-failed"])
            #expect(try ledger.retryNotifications(ids: ["e-failed", "e-delivered"]) == 1)
            #expect(try ledger.notificationCounts() == (pending: 2, failed: 0))
            let taken = try ledger.takeDueNotifications(urls: [url], limit: 10, lease: .seconds(60))
            #expect(taken.map(\.id) == ["e-pending", "e-failed"])
            #expect(taken.allSatisfy { $0.body != nil }, "each body rendered and kept, found by its row's seq")
            try ledger.markNotificationsDelivered(taken.map { ($0.seq, 200) })
            #expect(try ledger.notificationCounts() == (pending: 0, failed: 0))
            #expect(try ledger.notifications(states: [.delivered], limit: 10).count == 3)
            if kind == .sqlite {
                for state in ["pending", "failed"] {
                    let plan = try ledger.driver.run(
                        "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM outbox WHERE state = '\(state)'")
                    let detail = plan.rows.compactMap { $0.last?.text }.joined(separator: "; ")
                    #expect(detail.contains("INDEX"), "counting \(state) rows: \(detail)")
                }
            }
        }
    }

    /// The share's title and tags (issue 31), kept with the outbox at staging, are in its published and processed
    /// payloads; its text and userInfo are in neither.
    @Test(arguments: LedgerKind.available)
    func aSharesTitleAndTagsAreInEachOfItsPayloadsAndItsTextInNone(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try Self.ledger(kind, in: dir)
            var record = LedgerConformanceTests.record()
            record.manifest.details = try ShareDetails(
                title: "Harbour", text: "secret text", userInfo: ["k": .string("secret info")], tags: ["a", "b"])
            let id = record.manifest.shareId
            try ledger.recordStaged([record])
            _ = try ledger.recordPublished([id], sourcesDone: [])
            _ = try ledger.recordClaimed([id])
            _ = try ledger.recordProcessed([(id, 3)])
            let url = [Self.urls[0]]
            let published = try ledger.takeDueNotifications(urls: url, limit: 10, lease: .seconds(60))
            try ledger.markNotificationsDelivered(published.map { ($0.seq, 200) })
            let processed = try ledger.takeDueNotifications(urls: url, limit: 10, lease: .seconds(60))
            #expect((published + processed).map(\.type) == ["share.published", "share.processed"])
            for row in published + processed {
                let body = try #require(row.body)
                #expect(!body.contains("secret"))
                let payload = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
                let share = try #require(payload["share"] as? [String: Any])
                #expect(share["title"] as? String == "Harbour" && share["tags"] as? [String] == ["a", "b"])
            }
        }
    }

    @Test(arguments: LedgerKind.available)
    func aShareEventWaitsForTheEarlierOneAndFailsPastTheMaximumAge(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try Self.ledger(kind, in: dir)
            let record = LedgerConformanceTests.record()
            let id = record.manifest.shareId
            try ledger.recordStaged([record])
            _ = try ledger.recordPublished([id], sourcesDone: [])
            _ = try ledger.recordClaimed([id])
            _ = try ledger.recordProcessed([(id, 3)])
            let url = [Self.urls[0]]
            let first = try ledger.takeDueNotifications(urls: url, limit: 10, lease: .seconds(60))
            #expect(first.map(\.type) == ["share.published"], "the processed event waits for the published one")
            let body = try #require(first.first?.body)
            let payload = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
            #expect(payload["id"] as? String == first.first?.id)
            let share = try #require(payload["share"] as? [String: Any])
            #expect(share["shareId"] as? String == id && share["status"] as? String == "published")
            let attachments = try #require(share["attachments"] as? [[String: Any]])
            #expect(attachments.first?["sha256"] as? String == "ab")
            // Leased: nobody else takes it.
            #expect(try ledger.takeDueNotifications(urls: url, limit: 10, lease: .seconds(60)).isEmpty)
            // A failure within the window puts it off; past the window keeps it as failed.
            try ledger.markNotificationFailed(
                seq: first[0].seq, status: 500, error: "HTTP 500", delay: .milliseconds(0), maxAge: .seconds(3600))
            let again = try ledger.takeDueNotifications(urls: url, limit: 10, lease: .seconds(60))
            #expect(again.map(\.id) == first.map(\.id))
            #expect(again.first?.body == body, "the body is rendered once")
            try ledger.markNotificationFailed(
                seq: again[0].seq, status: 0, error: "refused", delay: .milliseconds(0), maxAge: .milliseconds(0))
            #expect(try ledger.notifications(states: [.failed], limit: 10).map(\.attempts) == [2])
            // A failed row no longer holds the share's later event back.
            let next = try ledger.takeDueNotifications(urls: url, limit: 10, lease: .seconds(60))
            #expect(next.map(\.type) == ["share.processed"])
            try ledger.markNotificationsDelivered([(next[0].seq, 204)])
            #expect(try ledger.notifications(states: [.delivered], limit: 10).map(\.lastStatus) == [204])
            #expect(try ledger.retryNotifications(ids: [first[0].id]) == 1)
            #expect(try ledger.takeDueNotifications(urls: url, limit: 10, lease: .seconds(60)).map(\.id)
                == [first[0].id])
        }
    }
}
