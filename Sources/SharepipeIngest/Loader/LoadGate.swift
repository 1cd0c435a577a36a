import Synchronization

/// Decides, once, how a provider load ends: the callback's copy, a timeout, or a cancellation.
///
/// The first of them wins. A callback that arrives after a timeout, or a second callback, finds the gate closed
/// and does nothing — no file is opened, nothing is written.
final class LoadGate<Outcome: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Outcome, Never>?)
        case running(CheckedContinuation<Outcome, Never>?)
        case finished
        /// Expired before anyone waited: the waiter gets this outcome at once.
        case expiredEarly(Outcome)
    }

    private let state = Mutex<State>(.waiting(nil))

    /// Suspends until `finish` or `expire` is called; `start` runs once the continuation is in place.
    func wait(start: () -> Void) async -> Outcome {
        await withCheckedContinuation { continuation in
            let early: Outcome? = state.withLock { state in
                if case .expiredEarly(let outcome) = state {
                    state = .finished
                    return outcome
                }
                state = .waiting(continuation)
                return nil
            }
            if let early {
                continuation.resume(returning: early)
            } else {
                start()
            }
        }
    }

    /// A callback arrived: true when it may do its work, false when the load already ended.
    func begin() -> Bool {
        state.withLock { state in
            guard case .waiting(let continuation) = state else { return false }
            state = .running(continuation)
            return true
        }
    }

    /// The callback's work is done.
    func finish(_ outcome: Outcome) {
        let continuation: CheckedContinuation<Outcome, Never>? = state.withLock { state in
            guard case .running(let continuation) = state else { return nil }
            state = .finished
            return continuation
        }
        continuation?.resume(returning: outcome)
    }

    /// Ends a load whose callback has not started (timeout, cancellation); false when it had.
    @discardableResult
    func expire(_ outcome: Outcome) -> Bool {
        let continuation: CheckedContinuation<Outcome, Never>?? = state.withLock { state in
            guard case .waiting(let continuation) = state else { return nil }
            state = continuation == nil ? .expiredEarly(outcome) : .finished
            return .some(continuation)
        }
        guard let continuation else { return false }
        continuation?.resume(returning: outcome)
        return true
    }
}
