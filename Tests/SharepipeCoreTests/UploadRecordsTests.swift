import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// The ledger's rows of resumable uploads (issue 19) on both ledgers: they follow the files in `STATE/uploads/`,
/// and every daemon on one ledger counts every upload in flight.
@Suite(.timeLimit(.minutes(2)))
struct UploadRecordsTests {
    private func upload(_ id: String, offset: Int64 = 0, expiresAt: Int64 = LedgerClock.now() + 60_000) -> TusUpload {
        TusUpload(
            id: id, length: 100, offset: offset, metadata: ["filename": "a.txt"], createdAt: LedgerClock.now(),
            expiresAt: expiresAt, owner: "scanner")
    }

    @Test(arguments: LedgerKind.available)
    func rowsFollowTheRecordsAndCountOverEveryHolder(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try kind.make(in: dir)
            let now = LedgerClock.now()
            let (a, b, c) = (UUID().uuidString, UUID().uuidString, UUID().uuidString)
            try ledger.recordUploads([upload(a), upload(b)], holder: "host-a:/state")
            try ledger.recordUploads([upload(c), upload(UUID().uuidString, expiresAt: now - 1)], holder: "host-b:/state")
            #expect(try ledger.uploadsInFlight(now: now) == 3)

            // A later record replaces the row: a finished upload is no longer in flight.
            var finished = upload(a, offset: 100)
            finished.shareId = UUID().uuidString
            try ledger.recordUploads([finished], holder: "host-a:/state")
            #expect(try ledger.uploadsInFlight(now: now) == 2)

            // A holder's rows of uploads whose files are gone go; other holders' rows stay.
            try ledger.forgetUploads(holder: "host-a:/state", except: [a])
            #expect(try ledger.uploadsInFlight(now: now) == 1)
            try ledger.forgetUpload(c)
            #expect(try ledger.uploadsInFlight(now: now) == 0)
        }
    }

    @Test func theStoreRepairsRowsTheLedgerMissedAndForgetsRemovedUploads() async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try LedgerKind.sqlite.make(in: dir)
            let plain = try TusStore(stateDirectory: dir + "/plain")
            let created = upload(UUID().uuidString)
            // Made while the ledger did not follow (an older sharepipe, or a ledger that failed): no row.
            try plain.create(created)
            #expect(try ledger.uploadsInFlight(now: LedgerClock.now()) == 0)
            let store = try TusStore(stateDirectory: dir + "/plain", ledger: ledger)
            try store.reconcile()
            #expect(try ledger.uploadsInFlight(now: LedgerClock.now()) == 1)

            let second = upload(UUID().uuidString)
            try store.create(second)
            #expect(try ledger.uploadsInFlight(now: LedgerClock.now()) == 2)
            try store.remove(second.id)
            #expect(try ledger.uploadsInFlight(now: LedgerClock.now()) == 1)
            // Removed behind the ledger's back: the next reconcile drops the row.
            try plain.remove(created.id)
            try store.reconcile()
            #expect(try ledger.uploadsInFlight(now: LedgerClock.now()) == 0)
        }
    }
}
