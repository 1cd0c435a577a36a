import Foundation
import Synchronization
import Testing
@testable import SharepipeSystem

/// `BatchLane`'s rule for waiting a moment so that a batch fills (group commit) before it is taken, and a lane
/// waiting for the items announced to it.
struct BatchLaneTests {
    private func waits(
        _ company: BatchLane<Int>.Company, after lastBatchCount: Int, queued: Int, expected: Int = 0,
        enough: Int = 64, sinceLastBatch: UInt64 = 1_000_000
    ) -> Bool {
        BatchLane<Int>.waitsForCompany(
            company, lastBatchCount: lastBatchCount, queued: queued, expected: expected, enough: enough,
            sinceLastBatch: sinceLastBatch)
    }

    @Test func aLoneClientsNextItemWaitsForNoOne() {
        // One upload at a time: its batch was alone and nothing came while it ran.
        #expect(!waits(.steadyFlowOfWaiters, after: 1, queued: 0))
        // Nothing announced: nothing to wait for, however busy the flow.
        #expect(!waits(.announced, after: 8, queued: 3, expected: 0))
    }

    @Test func companyIsAwaitedWhenTheLastBatchHadSomeOrAnItemCameMeanwhile() {
        #expect(waits(.steadyFlowOfWaiters, after: 5, queued: 0))
        #expect(waits(.steadyFlowOfWaiters, after: 1, queued: 1))
        // A lane nobody waits for (completions) always gathers in a steady flow.
        #expect(waits(.steadyFlow, after: 1, queued: 0))
        // Announced items are waited for, in a steady flow or not.
        #expect(waits(.announced, after: 0, queued: 1, expected: 2, sinceLastBatch: .max))
    }

    @Test func noWaitOutsideASteadyFlowOrWithEnoughQueued() {
        #expect(!waits(.steadyFlow, after: 5, queued: 0, sinceLastBatch: BatchLane<Int>.busyWindow))
        #expect(!waits(.steadyFlowOfWaiters, after: 5, queued: 64, enough: 64))
        #expect(!waits(.announced, after: 5, queued: 64, expected: 3, enough: 64))
    }

    @Test func aGatherEndsAtItsDeadlineWithEnoughOrWhenTheLastAnnouncedItemCame() {
        func keeps(_ company: BatchLane<Int>.Company, queued: Int = 1, expected: Int, now: UInt64 = 10) -> Bool {
            BatchLane<Int>.keepsGathering(
                company, queued: queued, expected: expected, enough: 8, now: now, deadline: 20)
        }
        #expect(keeps(.announced, expected: 1))
        #expect(!keeps(.announced, expected: 0))
        #expect(keeps(.steadyFlow, expected: 0))
        #expect(!keeps(.steadyFlow, expected: 0, now: 20))
        #expect(!keeps(.announced, queued: 8, expected: 3))
    }

    /// A lane waiting for announced items, with a gather bound far beyond the tests' pauses (only the arrivals end
    /// a gather), and the batches it performed, in order.
    private final class AnnouncedLane: Sendable {
        let lane = BatchLane<Int>(
            name: "test-lane", enough: 64, company: .announced, longestGatherMicroseconds: 60_000_000,
            take: BatchLane.first(64))
        let taken = Mutex<[[Int]]>([])

        func submit(_ item: Int, arrival: LaneArrival? = nil) {
            lane.submit(item, arrival: arrival) { batch in self.taken.withLock { $0.append(batch) } }
        }

        func batches(count: Int) async -> [[Int]] {
            while taken.withLock({ $0.count }) < count { try? await Task.sleep(for: .milliseconds(5)) }
            return taken.withLock { $0 }
        }
    }

    @Test(.timeLimit(.minutes(1))) func announcedItemsJoinTheBatchTheFirstOneStarts() async throws {
        let lane = AnnouncedLane()
        let first = lane.lane.expect(), second = lane.lane.expect(), third = lane.lane.expect()
        lane.submit(1, arrival: first)
        try await Task.sleep(for: .milliseconds(50))
        lane.submit(2, arrival: second)
        try await Task.sleep(for: .milliseconds(50))
        #expect(lane.taken.withLock { $0.isEmpty })
        lane.submit(3, arrival: third)
        #expect(await lane.batches(count: 1) == [[1, 2, 3]])
    }

    @Test(.timeLimit(.minutes(1))) func anArrivalGivenUpHoldsNoBatch() async throws {
        let lane = AnnouncedLane()
        var abandoned: LaneArrival? = lane.lane.expect()
        lane.submit(1, arrival: lane.lane.expect())
        try await Task.sleep(for: .milliseconds(50))
        #expect(lane.taken.withLock { $0.isEmpty })
        // Its work failed before it reached the lane: released, it is expected no more.
        abandoned = nil
        #expect(await lane.batches(count: 1) == [[1]])
        _ = abandoned
        // An item nobody announced is taken at once.
        lane.submit(2)
        #expect(await lane.batches(count: 2) == [[1], [2]])
    }
}
