import Foundation
import Synchronization

/// One lane of group commit (STYLE 15: one batching type, used by each of the executor's lanes). Items handed over
/// queue up; the lane's own thread takes whatever is queued as one batch, performs it, and comes round again until
/// the queue is empty, so each barrier or commit is paid once per batch and a lone item is a batch of one at once.
/// In a steady flow (the last batch ended a moment ago) and with fewer than `enough` queued, a short wait lets the
/// batch fill first; on a lane that answers waiters, only when company is likely.
package final class BatchLane<Item: Sendable>: Sendable {
    /// A batch that starts within this long (ns) of the last one's end waits `gatherMicroseconds` for company.
    static var busyWindow: UInt64 { 5_000_000 }
    static var gatherMicroseconds: UInt32 { 4_000 }

    private struct State {
        var items: [Item] = []
        var running = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let thread: Lane
    private let enough: Int
    private let answersWaiters: Bool
    private let take: @Sendable (inout [Item]) -> [Item]
    private let beforeBatch: @Sendable () -> Void
    private let afterTake: @Sendable () -> Void

    /// A lane on a thread named `name`. `take` removes the next batch from the front of the queue; `beforeBatch`
    /// runs each time round before the lane looks at the queue, `afterTake` each time it has taken from it. A lane
    /// that `answersWaiters` (a client waits for its batch) waits for company only after a batch of more than one or
    /// with an item already queued.
    package init(
        name: String, enough: Int, answersWaiters: Bool = false, take: @escaping @Sendable (inout [Item]) -> [Item],
        beforeBatch: @escaping @Sendable () -> Void = {}, afterTake: @escaping @Sendable () -> Void = {}
    ) {
        thread = Lane(name: name)
        self.enough = enough
        self.answersWaiters = answersWaiters
        self.take = take
        self.beforeBatch = beforeBatch
        self.afterTake = afterTake
        thread.start()
    }

    deinit {
        thread.stop()
    }

    /// A `take` that removes up to `limit` items from the front of the queue.
    package static func first(_ limit: Int) -> @Sendable (inout [Item]) -> [Item] {
        { queue in
            let taken = Array(queue.prefix(limit))
            queue.removeFirst(taken.count)
            return taken
        }
    }

    /// Items waiting for the next batch.
    package var queued: Int { state.withLock { $0.items.count } }

    /// Whether nothing is queued or being performed.
    package var isIdle: Bool { state.withLock { !$0.running && $0.items.isEmpty } }

    /// Queues `item`; a lane that is not running starts on its thread and performs each batch with `perform`.
    package func submit(_ item: Item, perform: @escaping @Sendable ([Item]) -> Void) {
        let start = state.withLock { state in
            state.items.append(item)
            defer { state.running = true }
            return !state.running
        }
        if start { Task(executorPreference: thread) { self.drain(perform) } }
    }

    /// Returns once nothing is queued or being performed.
    package func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                if state.running || !state.items.isEmpty {
                    state.idleWaiters.append(continuation)
                    return false
                }
                return true
            }
            if idle { continuation.resume() }
        }
    }

    /// Whether the lane waits `gatherMicroseconds` before taking its next batch: only in a steady flow (the last
    /// batch ended less than `busyWindow` ago) and with fewer than `enough` queued. A lane whose items someone waits
    /// for waits only when company is likely, that is when the last batch had some or an item came while it ran: a
    /// lone client's next item would wait for nothing.
    package static func waitsForCompany(
        answersWaiters: Bool, lastBatchCount: Int, queued: Int, enough: Int, sinceLastBatch: UInt64
    ) -> Bool {
        guard sinceLastBatch < busyWindow, queued < enough else { return false }
        return !answersWaiters || lastBatchCount > 1 || queued > 0
    }

    private func drain(_ perform: @Sendable ([Item]) -> Void) {
        var lastBatchEnded: UInt64 = 0
        var lastBatchCount = 0
        while true {
            beforeBatch()
            let gather = Self.waitsForCompany(
                answersWaiters: answersWaiters, lastBatchCount: lastBatchCount, queued: queued, enough: enough,
                sinceLastBatch: System.monotonicNanoseconds() - lastBatchEnded)
            if gather { System.pause(microseconds: Self.gatherMicroseconds) }
            let (batch, waiters): ([Item], [CheckedContinuation<Void, Never>]) = state.withLock { state in
                let taken = take(&state.items)
                guard taken.isEmpty else { return (taken, []) }
                state.running = false
                defer { state.idleWaiters = [] }
                return ([], state.idleWaiters)
            }
            afterTake()
            if batch.isEmpty {
                for waiter in waiters { waiter.resume() }
                return
            }
            perform(batch)
            lastBatchEnded = System.monotonicNanoseconds()
            lastBatchCount = batch.count
        }
    }
}
