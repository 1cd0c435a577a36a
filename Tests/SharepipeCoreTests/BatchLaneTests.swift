import Testing
@testable import SharepipeSystem

/// `BatchLane`'s rule for waiting a moment so that a batch fills (group commit) before it is taken.
struct BatchLaneTests {
    private func waits(
        answersWaiters: Bool, after lastBatchCount: Int, queued: Int, enough: Int = 64,
        sinceLastBatch: UInt64 = 1_000_000
    ) -> Bool {
        BatchLane<Int>.waitsForCompany(
            answersWaiters: answersWaiters, lastBatchCount: lastBatchCount, queued: queued, enough: enough,
            sinceLastBatch: sinceLastBatch)
    }

    @Test func aLoneClientsNextItemWaitsForNoOne() {
        // One upload at a time: its batch was alone and nothing came while it ran.
        #expect(!waits(answersWaiters: true, after: 1, queued: 0))
    }

    @Test func companyIsAwaitedWhenTheLastBatchHadSomeOrAnItemCameMeanwhile() {
        #expect(waits(answersWaiters: true, after: 5, queued: 0))
        #expect(waits(answersWaiters: true, after: 1, queued: 1))
        // A lane nobody waits for (completions) always gathers in a steady flow.
        #expect(waits(answersWaiters: false, after: 1, queued: 0))
    }

    @Test func noWaitOutsideASteadyFlowOrWithEnoughQueued() {
        #expect(!waits(answersWaiters: false, after: 5, queued: 0, sinceLastBatch: BatchLane<Int>.busyWindow))
        #expect(!waits(answersWaiters: true, after: 5, queued: 64, enough: 64))
    }
}
