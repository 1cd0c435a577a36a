import Foundation
import SharepipeSystem

/// A named thread that calls `beat` every `interval` seconds until stopped; it waits on a condition, so `stop`
/// ends it at once.
final class LeaseHeartbeat: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false  // Guarded by `condition`.

    init(interval: Double, beat: @escaping @Sendable () -> Void) {
        Lane.detached("sp-heartbeat") { [self] in
            while condition.withLock({ () -> Bool in
                let deadline = Date(timeIntervalSinceNow: interval)
                while !stopped && condition.wait(until: deadline) {}
                return !stopped
            }) { beat() }
        }
    }

    func stop() {
        condition.withLock { stopped = true }
        condition.signal()
    }
}
