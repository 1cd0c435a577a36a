import Foundation
import Synchronization

/// Faults injected into the lifecycle executor, given to the spool when it is opened (STYLE 14): none in
/// production. The crash runs name a crash point to die at (`sharepipe` maps `SHAREPIPE_CRASH_AFTER` to it); the
/// failure-path tests fail one action instead of performing it, and hold publish batches back and count them.
package final class LifecycleFaults: Sendable {
    /// The process is killed right after this crash point (`<transition>.<action>`).
    package let crashAfter: String?
    /// An action (by crash-point name) to fail instead of performing it.
    package let failure = Mutex<String?>(nil)
    /// Publish batches run so far (each one durability barrier).
    package let batchesPublished = Atomic<Int>(0)
    private let holding = NSCondition()
    nonisolated(unsafe) private var held = false  // Guarded by `holding`.

    /// Faults that kill the process after `crashAfter` (nil: never); the others are set while the spool runs.
    package init(crashAfter: String? = nil) {
        self.crashAfter = crashAfter
    }

    /// Holds (or lets go of) the next publish batch: submissions queue up meanwhile (tests of batching).
    package func hold(_ hold: Bool) {
        holding.lock()
        held = hold
        holding.broadcast()
        holding.unlock()
    }

    /// Returns once publish batches are not held.
    func waitWhileHeld() {
        holding.lock()
        while held { holding.wait() }
        holding.unlock()
    }
}
