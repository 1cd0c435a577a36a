import Foundation
import SharepipeCore

extension LifecycleFaults {
    /// `SHAREPIPE_CRASH_AFTER=<transition>.<action>` kills the process right after that action: the end-to-end crash
    /// and power-cut tests stop at every crash point this way. Unset: no faults. The engine reads no environment.
    static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> LifecycleFaults? {
        environment["SHAREPIPE_CRASH_AFTER"].map { LifecycleFaults(crashAfter: $0) }
    }
}
