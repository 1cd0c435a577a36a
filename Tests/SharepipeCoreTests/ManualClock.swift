import Synchronization
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// A clock that moves only when the test says so (`advance(by:)`): settle windows, backoffs and poll intervals are
/// checked by moving time, not by waiting for it. Its wall time starts at the real time it was made, so that the
/// ledger's own timestamps and this clock's not-before times stay comparable.
///
/// Tasks sleeping on it resume when time reaches their deadline; threads blocked in `waitReadable` are woken on every
/// advance and look at their deadline again. `sleepers` and `blockedThreads` tell a test that the code under test has
/// gone idle on the clock.
final class ManualClock: SharepipeClock {
    private struct Sleeper {
        var deadline: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: UInt64 = 0
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        var blocked: [Int: WakeSignal] = [:]
    }

    private let state = Mutex(State())
    private let wallBase = LedgerClock.now()

    func monotonicNanoseconds() -> UInt64 {
        state.withLock { $0.now }
    }

    func wallMilliseconds() -> Int64 {
        wallBase + Int64(monotonicNanoseconds() / 1_000_000)
    }

    /// Moves time forward, resuming the sleepers whose deadline it reaches and waking the blocked threads.
    func advance(by duration: Duration) {
        let (due, blocked) = state.withLock { state in
            state.now += duration.wholeNanoseconds
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            defer { state.blocked = [:] }
            return (due.values.map(\.continuation), Array(state.blocked.values))
        }
        for continuation in due { continuation.resume() }
        for wake in blocked { wake.signal() }
    }

    /// Moves time to the earliest deadline of a sleeping task; false when nobody sleeps.
    @discardableResult
    func advanceToNextDeadline() -> Bool {
        let step = state.withLock { state in
            state.sleepers.values.map(\.deadline).min().map { $0 - state.now }
        }
        guard let step else { return false }
        advance(by: .nanoseconds(step))
        return true
    }

    /// How many tasks sleep on this clock.
    var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// How many threads wait in `waitReadable` for a deadline that this clock has not reached; every advance wakes
    /// them, so a count above zero means a thread went back to waiting after the last advance.
    var blockedThreads: Int { state.withLock { $0.blocked.count } }

    func sleep(for duration: Duration) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = state.withLock { state in
                    // Checked under the lock: a cancellation handler that ran first finds no sleeper to resume.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    let deadline = state.now + duration.wholeNanoseconds
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    func waitReadable(_ descriptors: [Int32], until deadline: UInt64?) throws -> [Bool] {
        while true {
            let wake = try WakeSignal()
            let id = state.withLock { state -> Int? in
                if let deadline, state.now >= deadline { return nil }
                state.nextID += 1
                state.blocked[state.nextID] = wake
                return state.nextID
            }
            guard let id else { return try System.waitReadable(descriptors, timeout: 0) }
            let ready = try System.waitReadable(descriptors + [wake.pollDescriptor], timeout: nil)
            state.withLock { _ = $0.blocked.removeValue(forKey: id) }
            if ready.dropLast().contains(true) { return Array(ready.dropLast()) }
        }
    }

    /// Runs `body` while time jumps to the earliest sleeper's deadline whenever at least `idle` tasks sleep on this
    /// clock: the code under test sees every deadline it set reached exactly, and never a moment it was busy in.
    func driving<T: Sendable>(whenSleeping idle: Int, _ body: () async throws -> T) async throws -> T {
        let driver = Task {
            while !Task.isCancelled {
                if sleepers >= idle { advanceToNextDeadline() }
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        defer { driver.cancel() }
        return try await body()
    }
}

extension Duration {
    /// The duration in whole nanoseconds (0 for a negative one).
    fileprivate var wholeNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
