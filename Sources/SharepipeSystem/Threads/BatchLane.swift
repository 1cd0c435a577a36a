import Foundation
import Synchronization

/// One lane of group commit (STYLE 15: one batching type, used by each of the executor's lanes). Items handed over
/// queue up; the lane's own thread takes whatever is queued as one batch, performs it, and comes round again until
/// the queue is empty, so each barrier or commit is paid once per batch and a lone item is a batch of one at once.
/// With fewer than `enough` queued, a short wait lets the batch fill first, when company is likely (`Company`):
/// guessed from a steady flow, or known from the items announced as on their way (`expect`).
package final class BatchLane<Item: Sendable>: Sendable {
    /// A batch that starts within this long (ns) of the last one's end is in a steady flow.
    static var busyWindow: UInt64 { 5_000_000 }
    /// The longest a batch waits for company, unless the lane is made with another bound.
    static var gatherMicroseconds: UInt32 { 4_000 }

    /// When a lane waits for company before it takes a batch.
    package enum Company: Sendable {
        /// In a steady flow (the last batch ended less than `busyWindow` ago), always: nobody waits for these items
        /// (completions).
        case steadyFlow
        /// In a steady flow, when the last batch had more than one item or one came while it ran: a client waits
        /// for its item's batch, and a lone client's next item would wait for nothing.
        case steadyFlowOfWaiters
        /// While items announced with `expect` are on their way, until the last of them is submitted: every source
        /// of the lane announces its items (publishes: each upload and each inbox entry as its work is queued).
        case announced
    }

    private struct State {
        var items: [Item] = []
        var running = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Items announced by `expect` and not yet submitted or given up.
        var expected = 0
        /// The lane is gathering (asleep on `wake`, or about to be).
        var gathering = false
    }

    /// Whether a change of the queue or of `expected` ends the gather under way (else the gatherer is left asleep):
    /// `keepsGathering`'s rule, its deadline aside (the gatherer's own timeout sees to that).
    private func endsGather(_ state: State) -> Bool {
        state.gathering && !Self.keepsGathering(
            company, queued: state.items.count, expected: state.expected, enough: enough, now: 0, deadline: 1)
    }

    private let state = Mutex(State())
    /// Where a gathering lane sleeps, signalled by a change that may end its gather. A semaphore, not a condition
    /// variable: its timeout is on the monotonic clock (a condition's deadline is wall-clock time, which a clock
    /// step moves), and a signal sent before the gatherer sleeps is kept, not lost.
    private let wake = DispatchSemaphore(value: 0)
    private let thread: Lane
    private let enough: Int
    private let company: Company
    private let longestGather: UInt64
    private let take: @Sendable (inout [Item]) -> [Item]
    private let beforeBatch: @Sendable () -> Void
    private let afterTake: @Sendable () -> Void

    /// A lane on a thread named `name`, waiting for `company` as that case says. `take` removes the next batch from
    /// the front of the queue; `beforeBatch` runs each time round before the lane looks at the queue, `afterTake`
    /// each time it has taken from it. A gather lasts at most `longestGatherMicroseconds`.
    package init(
        name: String, enough: Int, company: Company, longestGatherMicroseconds: UInt32 = gatherMicroseconds,
        take: @escaping @Sendable (inout [Item]) -> [Item],
        beforeBatch: @escaping @Sendable () -> Void = {}, afterTake: @escaping @Sendable () -> Void = {}
    ) {
        thread = Lane(name: name)
        self.enough = enough
        self.company = company
        longestGather = UInt64(longestGatherMicroseconds) * 1_000
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

    /// Announces an item on its way: the lane counts it as expected until it is submitted with this arrival, or
    /// the arrival is released unsubmitted (its work failed or was given up).
    package func expect() -> LaneArrival {
        state.withLock { $0.expected += 1 }
        return LaneArrival { [weak self] in
            guard let self else { return }
            if self.state.withLock({ state in
                state.expected -= 1
                return self.endsGather(state)
            }) {
                self.wake.signal()
            }
        }
    }

    /// Queues `item` (ending its `arrival`, if announced); a lane that is not running starts on its thread and
    /// performs each batch with `perform`.
    package func submit(_ item: Item, arrival: LaneArrival? = nil, perform: @escaping @Sendable ([Item]) -> Void) {
        let (start, ends) = state.withLock { state in
            state.items.append(item)
            if let arrival, arrival.settle() { state.expected -= 1 }
            defer { state.running = true }
            return (!state.running, endsGather(state))
        }
        if ends { wake.signal() }
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

    /// Whether the lane waits for company before taking its next batch: never with `enough` queued; for
    /// announced company, when an item is expected; else only in a steady flow (the last batch ended less than
    /// `busyWindow` ago), and for waiters only when the last batch had more than one item or one is queued.
    package static func waitsForCompany(
        _ company: Company, lastBatchCount: Int, queued: Int, expected: Int, enough: Int, sinceLastBatch: UInt64
    ) -> Bool {
        guard queued < enough else { return false }
        switch company {
        case .announced: return expected > 0
        case .steadyFlow: return sinceLastBatch < busyWindow
        case .steadyFlowOfWaiters: return sinceLastBatch < busyWindow && (lastBatchCount > 1 || queued > 0)
        }
    }

    /// Whether a gathering lane goes on waiting: not past its deadline, not once `enough` are queued; for
    /// announced company, not once nothing is expected (the last one came, or was given up).
    package static func keepsGathering(
        _ company: Company, queued: Int, expected: Int, enough: Int, now: UInt64, deadline: UInt64
    ) -> Bool {
        guard now < deadline, queued < enough else { return false }
        return company != .announced || expected > 0
    }

    /// Waits for company as `waitsForCompany` and `keepsGathering` decide; items expected are company for certain.
    private func gather(lastBatchEnded: UInt64, lastBatchCount: Int) {
        let (queued, expected) = state.withLock { ($0.items.count, $0.expected) }
        let now = System.monotonicNanoseconds()
        let waits = Self.waitsForCompany(
            company, lastBatchCount: lastBatchCount, queued: queued, expected: expected, enough: enough,
            sinceLastBatch: now - lastBatchEnded)
        guard waits else { return }
        let deadline = now + longestGather
        defer { state.withLock { $0.gathering = false } }
        while true {
            // Marked gathering and checked in one step: a change after the check signals, and the signal is kept
            // until the wait below takes it. A signal left over from an earlier gather only costs a second look.
            let (queued, expected) = state.withLock { state in
                state.gathering = true
                return (state.items.count, state.expected)
            }
            let now = System.monotonicNanoseconds()
            guard Self.keepsGathering(
                company, queued: queued, expected: expected, enough: enough, now: now, deadline: deadline)
            else { return }
            _ = wake.wait(timeout: .now() + .nanoseconds(Int(deadline - now)))
        }
    }

    private func drain(_ perform: @Sendable ([Item]) -> Void) {
        var lastBatchEnded: UInt64 = 0
        var lastBatchCount = 0
        while true {
            beforeBatch()
            gather(lastBatchEnded: lastBatchEnded, lastBatchCount: lastBatchCount)
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

/// An item announced to a `BatchLane` as on its way (`BatchLane.expect`). Submitted with its item, it ends there;
/// released without that, it ends then, so an arrival whose work failed never holds a lane waiting.
package final class LaneArrival: Sendable {
    private let ended = Atomic<Bool>(false)
    private let giveUp: @Sendable () -> Void

    init(giveUp: @escaping @Sendable () -> Void) {
        self.giveUp = giveUp
    }

    /// Ends the arrival; true only the first time.
    func settle() -> Bool {
        !ended.exchange(true, ordering: .acquiringAndReleasing)
    }

    deinit {
        if settle() { giveUp() }
    }
}
