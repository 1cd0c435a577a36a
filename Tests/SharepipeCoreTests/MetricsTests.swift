import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite(.timeLimit(.minutes(5))) struct MetricsTests {
    @Test func statusLineShowsCopiesInFlightAndTheOldestPendingShare() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let metrics = Metrics(copies: CopiesInFlight())
            try metrics.refresh(from: spool.ledger)
            let idle = metrics.statusLine(copies: .init(), now: Date())
            #expect(idle == "ingested 0, processed 0, pending 0, rejected 0, failed 0")

            let source = try writeFile(dir + "/note.txt", "pending")
            let receipt = await ShareLoader(spool: spool).load([FileItemProvider(path: source, types: nil)])
            #expect(receipt.status == .complete)
            try metrics.refresh(from: spool.ledger)
            let copies = CopiesInFlight.Summary(count: 2, bytesDone: 512 << 20, bytesTotal: 3 << 30)
            let busy = metrics.statusLine(copies: copies, now: Date().addingTimeInterval(3 * 3600 + 60))
            #expect(busy.hasSuffix(", copying 2 (512.0 MiB / 3072.0 MiB), oldest pending 3h"))
            let text = metrics.prometheusText(copies: copies, now: Date())
            #expect(text.contains("\nsharepipe_copies_in_flight 2\n"))
            #expect(text.contains("\nsharepipe_copy_bytes_done 536870912\n"))
            #expect(text.contains("\nsharepipe_copy_bytes_total 3221225472\n"))
            #expect(text.contains("\nsharepipe_oldest_pending_age_seconds "))
        }
    }

    @Test func copiesInFlightCountsEveryRunningCopy() {
        let copies = CopiesInFlight()
        let first = copies.begin(total: 100)
        let second = copies.begin(total: 50)
        copies.update(first, done: 40)
        // A source that grew past its size: the total follows the bytes copied.
        copies.update(second, done: 70)
        #expect(copies.summary == .init(count: 2, bytesDone: 110, bytesTotal: 170))
        copies.end(first)
        #expect(copies.summary == .init(count: 1, bytesDone: 70, bytesTotal: 70))
        copies.end(second)
        #expect(copies.summary == .init())
    }
}
