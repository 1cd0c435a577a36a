import Foundation
import SharepipeSystem

/// Runs `/bin/sh -c COMMAND` once per copied attachment; exit status 0 means processed.
///
/// The command's environment is exactly `SHAREPIPE_SHARE_ID`, `SHAREPIPE_FILE` (absolute path of the copy),
/// `SHAREPIPE_TYPE`, `SHAREPIPE_MIME`, `SHAREPIPE_SUGGESTED_NAME` (empty when unknown), `SHAREPIPE_DUPLICATE_OF` (the
/// original's share id, set only for an attachment flagged as a duplicate) and `PATH` (the daemon's, or
/// `/usr/local/bin:/usr/bin:/bin`) — nothing else of the daemon's environment leaks in, not even `HOME`; a command
/// that needs more sets it itself. It runs in its own process group with default signal dispositions and stdin
/// from /dev/null; its stdout and stderr go to the daemon's stderr and are never parsed. After `timeout`, or when
/// the task is cancelled, the whole group gets SIGTERM and, `killGrace` later, SIGKILL.
package struct ExecProcessor: Processor {
    /// The shell command (`--exec`).
    package let command: String
    /// The longest one run may take (`--exec-timeout`).
    package let timeout: Duration
    /// Between SIGTERM and SIGKILL.
    package let killGrace: Duration
    private let path: String

    /// A processor running `command` per attachment.
    package init(
        command: String, timeout: Duration = .seconds(300), killGrace: Duration = .seconds(2),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.command = command
        self.timeout = timeout
        self.killGrace = killGrace
        path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    }

    /// Runs the command for each copy in turn; the first failure fails the share.
    package func process(_ share: ClaimedShare) async throws {
        for attachment in share.attachments {
            var environment = [
                "SHAREPIPE_SHARE_ID": share.shareId, "SHAREPIPE_FILE": attachment.path,
                "SHAREPIPE_TYPE": attachment.typeIdentifier, "SHAREPIPE_MIME": attachment.mimeType ?? "",
                "SHAREPIPE_SUGGESTED_NAME": attachment.suggestedName ?? "", "PATH": path,
            ]
            if let origin = attachment.duplicateOf { environment["SHAREPIPE_DUPLICATE_OF"] = origin.shareId }
            let child = try ChildProcess.spawnShell(command, environment: environment, output: System.standardError)
            switch try await wait(for: child) {
            case .exited(0):
                continue
            case .exited(let status):
                throw ShareError(
                    .processorFailed, "the command exited with status \(status) for attachment \(attachment.index)")
            case .signalled(let signal):
                throw ShareError(
                    .processorFailed, "the command was killed by signal \(signal) for attachment \(attachment.index)")
            }
        }
    }

    /// Polls the child with WNOHANG between short sleeps, so no thread blocks in waitpid.
    private func wait(for child: ChildProcess) async throws -> ChildProcess.Termination {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var pause = Duration.milliseconds(1)
        while true {
            if let termination = try child.poll() { return termination }
            if Task.isCancelled {
                try await stop(child)
                throw CancellationError()
            }
            if clock.now >= deadline {
                try await stop(child)
                throw ShareError(.processorFailed, "the command ran longer than \(timeout) and was killed")
            }
            try? await Task.sleep(for: min(pause, deadline - clock.now))
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    /// SIGTERM to the group, SIGKILL after the grace period, then the child reaped. Runs in a task of its own:
    /// the caller may be cancelled, and a cancelled task's sleeps return at once.
    private func stop(_ child: ChildProcess) async throws {
        let grace = killGrace
        try await Task { try await Self.terminate(child, grace: grace) }.value
    }

    private static func terminate(_ child: ChildProcess, grace: Duration) async throws {
        child.signalGroup(Signal.terminate)
        let clock = ContinuousClock()
        let end = clock.now + grace
        while clock.now < end {
            if try child.poll() != nil {
                // The shell is gone; what it started may still be running in its group.
                child.signalGroup(Signal.kill)
                return
            }
            try await clock.sleep(until: min(end, clock.now + .milliseconds(10)))
        }
        child.signalGroup(Signal.kill)
        while try child.poll() == nil {
            try await clock.sleep(until: clock.now + .milliseconds(5))
        }
    }
}
