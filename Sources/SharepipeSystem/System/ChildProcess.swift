import CSharepipeShims
import Glibc

/// A `/bin/sh -c` child in its own process group, reaped without blocking.
package struct ChildProcess: Sendable {
    /// The child's pid, which is also its process group id.
    let pid: pid_t

    /// How a child ended.
    package enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Starts `/bin/sh -c command` with exactly `environment`, stdin from /dev/null and stdout and stderr on
    /// `output` (inherited when negative), in a new process group with default signal dispositions.
    package static func spawnShell(_ command: String, environment: [String: String],
    output: Int32) throws -> ChildProcess {
        let entries = environment.map { "\($0.key)=\($0.value)" }.sorted()
        var pointers: [UnsafeMutablePointer<CChar>?] = entries.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        var pid: pid_t = 0
        let result = pointers.withUnsafeBufferPointer { envp in
            sharepipe_spawn_shell(command, envp.baseAddress, output, &pid)
        }
        guard result == 0 else { throw System.error("posix_spawn", errno: result) }
        return ChildProcess(pid: pid)
    }

    /// Reaps the child if it has ended; nil while it runs.
    package func poll() throws -> Termination? {
        var status: Int32 = 0
        let reaped = try System.call("waitpid") { waitpid(pid, &status, WNOHANG) }
        guard reaped == pid else { return nil }
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }

    /// Sends `signal` to every process of the child's group; a group that is already gone is fine.
    package func signalGroup(_ signal: Int32) {
        _ = kill(-pid, signal)
    }
}
