import SharepipeSystem
import Synchronization

/// Wakes idle workers: `ring()` resumes every waiter at once, or the next one to wait when nobody waits.
/// Timeouts are measured on `clock`.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())
    private let clock: any SharepipeClock

    init(clock: any SharepipeClock = SystemClock()) {
        self.clock = clock
    }

    func ring() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if state.waiters.isEmpty {
                state.rung = true
                return []
            }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when rung, after `timeout`, or when the task is cancelled.
    func wait(upTo timeout: Duration) async {
        let rung = state.withLock { state in
            defer { state.rung = false }
            return state.rung
        }
        if rung || timeout <= .zero { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [clock] in try? await clock.sleep(for: timeout) }
            group.addTask { await self.waitForRing() }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForRing() async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    // Checked under the lock: a cancellation handler that ran first finds no waiter to resume.
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
