#if os(Linux)
import Foundation
import Synchronization

/// The environment variable naming the directory that holds one container per app group.
let appGroupContainersEnvironmentVariable = "SHAREPIPE_APP_GROUP_CONTAINERS"

extension FileManager {
    /// The shared container of an app group: `$SHAREPIPE_APP_GROUP_CONTAINERS/<group id>/`, created (with its
    /// parents) on first use. `nil` when the variable is unset or empty, when the identifier is not a single path
    /// component (empty, `.`, `..`, or containing `/` or NUL), or when the directory cannot be created.
    public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
        guard !groupIdentifier.isEmpty, groupIdentifier != ".", groupIdentifier != "..",
            !groupIdentifier.contains("/"), !groupIdentifier.contains("\0")
        else { return nil }
        let root: URL
        if let redirected = AppGroupContainers.redirections.withLock({ $0[groupIdentifier] }) {
            root = redirected
        } else {
            guard let value = AppGroupContainers.variable(), !value.isEmpty else { return nil }
            root = URL(fileURLWithPath: value, isDirectory: true)
        }
        let container = root.appendingPathComponent(groupIdentifier, isDirectory: true)
        do {
            try createDirectory(at: container, withIntermediateDirectories: true)
        } catch {
            return nil
        }
        return container
    }
}

/// Per-group redirections of the containers' root, for the extension harness: a run of a team's code gets a fresh
/// root for its group without touching the process environment that other tests read.
package enum AppGroupContainers {
    /// Group identifier → the directory that stands in for `$SHAREPIPE_APP_GROUP_CONTAINERS` for that group.
    package static let redirections = Mutex<[String: URL]>([:])

    /// A value that stands in for the variable's (`.some(nil)`: unset), for tests of the variable itself: changing the
    /// process environment with `setenv` while other threads start processes (which copy the environment) crashed a
    /// test run.
    package static let variableStandIn = Mutex<String??>(nil)

    /// `$SHAREPIPE_APP_GROUP_CONTAINERS`, or its stand-in.
    static func variable() -> String? {
        if let standIn = variableStandIn.withLock({ $0 }) { return standIn }
        return ProcessInfo.processInfo.environment[appGroupContainersEnvironmentVariable]
    }
}
#endif
