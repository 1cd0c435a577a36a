import Foundation
import Glibc
import Testing

/// What the FUSE tests need from the machine: `/dev/fuse`, `fusermount3`, and per test the file system's own tools
/// (`gcc` and `pkg-config fuse3` to build powercutfs, `bindfs`, `sshfs` with `sshd` and `ssh-keygen`). Outside CI a
/// test whose tools are missing is skipped with the list printed; with `CI=true` it runs and fails (`.ci/run`
/// installs them).
enum FuseEnvironment {
    /// The FUSE runs mount file systems and take minutes: they run only with SHAREPIPE_TEST_FUSE=1 (a run of their
    /// own, `SHAREPIPE_TEST_FUSE=1 swift test --filter 'PowerCutTests|FuseTests'`), where missing tools fail them.
    static let requested = ProcessInfo.processInfo.environment["SHAREPIPE_TEST_FUSE"] == "1"
    static let required = requested

    /// The tools of `needed` (commands, or absolute paths) that this machine lacks, `/dev/fuse` included.
    static func missing(_ needed: [String]) -> [String] {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let directories = path + ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        return (["/dev/fuse", "fusermount3"] + needed).filter { tool in
            if tool.hasPrefix("/") { return !FileManager.default.fileExists(atPath: tool) }
            return !directories.contains { FileManager.default.isExecutableFile(atPath: $0 + "/" + tool) }
        }
    }

    /// Whether a test needing `tools` runs; prints why when it is skipped.
    static func enabled(_ tools: [String]) -> Bool {
        guard requested else { return false }
        let lacking = missing(tools)
        if !lacking.isEmpty && !required {
            print("FUSE test skipped: missing \(lacking.joined(separator: ", ")) "
                + "(apt-get install fuse3 libfuse3-dev gcc pkg-config bindfs sshfs openssh-server; .ci/run does)")
        }
        return lacking.isEmpty || required
    }

    static let powerCutTools = ["gcc", "pkg-config", "/usr/include/fuse3/fuse.h"]
    static let bindfsTools = ["bindfs"]
    static let sshfsTools = ["sshfs", "/usr/sbin/sshd", "ssh-keygen"]
}

/// A child process started with `posix_spawnp` and reaped with `waitpid`, for the tools and file-system servers of
/// these tests (Foundation's `Process` left some of these children unreaped under load, and its wait then hung).
final class SpawnedProcess: @unchecked Sendable {
    let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `arguments` (looked up in PATH) with stdin from /dev/null and stdout and stderr appended to `output`.
    init(_ arguments: [String], output: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let result = posix_spawnp(&child, arguments[0], &actions, nil, &argv, environ)
        guard result == 0 else { throw SupportError("cannot start \(arguments[0]): errno \(result)") }
        pid = child
    }

    /// Whether the process still runs (reaping it when it has ended).
    var isRunning: Bool {
        lock.withLock {
            guard exitStatus == nil else { return false }
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            } else if reaped < 0 {
                exitStatus = -1
            }
            return exitStatus == nil
        }
    }

    /// Waits for the end (polling every 5 ms, `timeout` at most, then SIGKILL); the exit status (128 + signal when
    /// killed by one; -1 when it could not be read).
    @discardableResult
    func wait(timeout: Duration = .seconds(60)) -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline { kill(pid, SIGKILL) }
            usleep(5_000)
        }
        return lock.withLock { exitStatus ?? -1 }
    }

    func signal(_ number: Int32) { kill(pid, number) }

    /// The exit status once the process has ended (-1: it was reaped elsewhere), nil while it runs.
    var endStatus: Int32? { isRunning ? nil : lock.withLock { exitStatus } }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            wait()
        }
    }
}

/// Runs a command to its end (a minute at most) and returns its status and output; throws when it cannot start.
@discardableResult
func runTool(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> (status: Int32, output: String) {
    let log = NSTemporaryDirectory() + "sharepipe-tool-" + UUID().uuidString
    defer { try? FileManager.default.removeItem(atPath: log) }
    let status = try SpawnedProcess(arguments, output: log).wait(timeout: timeout)
    return (status, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
}

/// The powercutfs binary, built once per test run from `Tests/PowerCutFS/powercutfs.c` into `.build/powercutfs/`.
let powerCutFSBinary: Result<String, SupportError> = {
    let directory = packageRoot + "/.build/powercutfs"
    let binary = directory + "/powercutfs-\(getpid())"
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let source = packageRoot + "/Tests/PowerCutFS/powercutfs.c"
    do {
        let built = try runTool([
            "sh", "-c", "gcc -O2 -Wall -Wextra -Werror -o \"$0\" \"$1\" $(pkg-config fuse3 --cflags --libs)", binary,
            source,
        ])
        guard built.status == 0 else { return .failure(SupportError("building powercutfs failed: \(built.output)")) }
        return .success(binary)
    } catch {
        return .failure(SupportError("building powercutfs failed: \(error)"))
    }
}()

/// A FUSE file system served by a process of ours, mounted at `mountpoint` until `unmount` (or a power cut).
final class FuseMount: @unchecked Sendable {
    let mountpoint: String
    /// The command that serves the file system in the foreground.
    private let command: [String]
    private var process: SpawnedProcess?
    private var log: String { mountpoint + ".log" }

    init(_ command: [String], at mountpoint: String) {
        self.command = command
        self.mountpoint = mountpoint
    }

    /// powercutfs over `backing`.
    static func powerCut(backing: String, at mountpoint: String) throws -> FuseMount {
        FuseMount([try powerCutFSBinary.get(), backing, mountpoint], at: mountpoint)
    }

    /// bindfs (a passthrough) over `backing`.
    static func bindfs(backing: String, at mountpoint: String) -> FuseMount {
        FuseMount(["bindfs", "-f", "--no-allow-other", backing, mountpoint], at: mountpoint)
    }

    /// Whether the mountpoint is in this process's mount table.
    var isMounted: Bool {
        let table = readProcFile("/proc/self/mountinfo") ?? ""
        return table.split(separator: "\n").contains { $0.split(separator: " ").dropFirst(4).first == Substring(mountpoint) }
    }

    /// Starts the server and returns once the file system is mounted (30 s a try, three tries: a server that died
    /// or never mounted is killed, its mount detached, and started again; each try's end is in the error). Once in
    /// CI a server's mount took over 10 s, completed after the server was killed, and left a dead mount that the
    /// next tries could not mount over; `settle` detaches such a late mount.
    func mount() throws {
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        var tries: [String] = []
        for _ in 0..<3 {
            // The log is appended to by every mount at this mountpoint; a try's error quotes only its own lines.
            let logBefore = serverLog.utf8.count
            let process = try SpawnedProcess(command, output: log)
            self.process = process
            let deadline = ContinuousClock.now + .seconds(30)
            // An exit status of -1: the child was reaped elsewhere in this process; only the mount table tells.
            while !isMounted, ContinuousClock.now < deadline, (process.endStatus ?? -1) == -1 {
                usleep(10_000)
            }
            if isMounted { return }
            // Where a server that never mounted waits in the kernel (its wchan), for the next time this happens.
            let waiting = (try? String(contentsOfFile: "/proc/\(process.pid)/wchan", encoding: .utf8)) ?? "?"
            tries.append(process.endStatus.map { "exited with status \($0)" } ?? "not mounted after 30 s (in \(waiting))")
            tries.append("log: \(String(decoding: serverLog.utf8.dropFirst(logBefore), as: UTF8.self))")
            process.signal(SIGKILL)
            process.wait()
            self.process = nil
            try settle()
        }
        throw SupportError("\(command[0]) did not mount \(mountpoint): \(tries.joined(separator: "; "))")
    }

    /// What the server wrote.
    var serverLog: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// The power cut: the server dies at once (SIGKILL), with everything it held in memory, and the dead mount is
    /// detached. `mount()` serves the backing directory again, as it was on disk.
    func powerCut() throws {
        process?.signal(SIGKILL)
        process?.wait()
        process = nil
        try detach()
    }

    /// Unmounts cleanly and waits for the server to end.
    func unmount() {
        guard let process else { return }
        if isMounted { _ = try? runTool(["fusermount3", "-u", mountpoint]) }
        process.wait(timeout: .seconds(10))
        self.process = nil
        try? detach()
    }

    /// Detaches the mount of a server that was killed, including one that completes a moment later: waits (ten
    /// seconds at most) until the mountpoint is a plain directory again, neither mounted nor a dead mount.
    private func settle() throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            try detach()
            usleep(200_000)  // a mount that completes late is in the table by now
            var status = stat()
            if stat(mountpoint, &status) == 0, !isMounted { return }
            guard ContinuousClock.now < deadline else { throw SupportError("\(mountpoint) stays mounted") }
        }
    }

    private func detach() throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while isMounted {
            _ = try runTool(["fusermount3", "-u", "-z", mountpoint])
            guard ContinuousClock.now < deadline else { throw SupportError("cannot unmount \(mountpoint)") }
            if isMounted { usleep(20_000) }
        }
    }

    deinit { unmount() }
}

/// An `sshd` of its own on 127.0.0.1 (a free port, a throw-away host key and user key, root allowed), for sshfs.
final class LocalSSHServer: @unchecked Sendable {
    let directory: String
    let port: Int
    private let process: SpawnedProcess

    init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        for key in ["host_key", "user_key"] {
            let made = try runTool(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", directory + "/" + key])
            guard made.status == 0 else { throw SupportError("ssh-keygen failed: \(made.output)") }
        }
        try FileManager.default.copyItem(atPath: directory + "/user_key.pub", toPath: directory + "/authorized_keys")
        var chosen: Int?
        for _ in 0..<50 {
            let candidate = Int.random(in: 20_000..<60_000)
            if !Self.isListening(candidate) {
                chosen = candidate
                break
            }
        }
        guard let port = chosen else { throw SupportError("no free port for sshd") }
        self.port = port
        let config = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(directory)/host_key
            PidFile \(directory)/sshd.pid
            AuthorizedKeysFile \(directory)/authorized_keys
            PermitRootLogin prohibit-password
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            StrictModes no
            UsePAM no
            Subsystem sftp internal-sftp

            """
        try config.write(toFile: directory + "/sshd_config", atomically: true, encoding: .utf8)
        process = try SpawnedProcess(
            ["/usr/sbin/sshd", "-D", "-e", "-f", directory + "/sshd_config"], output: directory + "/sshd.log")
        let deadline = ContinuousClock.now + .seconds(10)
        while !Self.isListening(port) {
            guard process.isRunning, ContinuousClock.now < deadline else { throw SupportError("sshd did not start") }
            usleep(10_000)
        }
    }

    /// sshfs of `remote` (a path on this host, through sshd) at `mountpoint`.
    func sshfs(_ remote: String, at mountpoint: String) -> FuseMount {
        FuseMount([
            "sshfs", "-f", "-p", "\(port)", "-o",
            "IdentityFile=\(directory)/user_key,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes",
            "root@127.0.0.1:" + remote, mountpoint,
        ], at: mountpoint)
    }

    private static func isListening(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    deinit {
        process.signal(SIGTERM)
        process.wait(timeout: .seconds(10))
    }
}

/// Drops for the file-system tests: files of distinct random contents (a few hundred bytes to 40 KiB), each written
/// beside the inbox and fsynced (`prepare`), then renamed in (`release`), as a careful program drops a file.
struct DropSet {
    /// 128 KiB of random lower-case words and line breaks: plain text to libmagic (random printable bytes now
    /// and then look like some program's source to it, and the drop is rejected as a type mismatch).
    private static let filler: [UInt8] = {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz     \n".utf8)
        return (0..<(128 << 10)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
    }()

    /// SHA-256 of every prepared file, one entry per drop.
    private(set) var digests: [String] = []

    /// Writes and fsyncs `count` files in `scratch` (a directory on the inbox's file system); returns their names.
    mutating func prepare(_ count: Int, in scratch: String, tag: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        var names: [String] = []
        for index in 0..<count {
            // A unique first line, then a random stretch of one random block: distinct, cheap to make.
            let start = Int.random(in: 0..<(Self.filler.count - 40_000))
            let bytes = Array("drop \(tag)-\(index) \(UUID().uuidString)\n".utf8)
                + Self.filler[start..<(start + Int.random(in: 200...40_000))]
            let name = "\(tag)-\(index).txt"
            let fd = open(scratch + "/" + name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw SupportError("cannot create a drop: errno \(errno)") }
            defer { close(fd) }
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == bytes.count, fsync(fd) == 0 else { throw SupportError("cannot write a drop") }
            names.append(name)
        }
        let made = sha256Digests(of: names.map { scratch + "/" + $0 })
        guard made.count == names.count else { throw SupportError("sha256sum failed on the drops") }
        digests += made
        return names
    }

    /// Renames prepared files from `scratch` into `inbox`, calling `after` with each index once it is in.
    func release(_ names: [String], from scratch: String, into inbox: String, after: (Int) -> Void = { _ in }) throws {
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        for (index, name) in names.enumerated() {
            guard rename(scratch + "/" + name, inbox + "/" + name) == 0 else {
                throw SupportError("cannot drop: errno \(errno)")
            }
            after(index)
        }
    }
}

/// SHA-256 of each file, in order, with one `sha256sum` run per 200 files (the check shares no code with sharepipe).
func sha256Digests(of paths: [String]) -> [String] {
    var result: [String] = []
    for start in stride(from: 0, to: paths.count, by: 200) {
        let chunk = Array(paths[start..<min(start + 200, paths.count)])
        guard let run = try? runTool(["sha256sum", "--"] + chunk), run.status == 0 else { return result }
        result += run.output.split(separator: "\n").map { String($0.prefix(64)) }
    }
    return result
}

/// Every regular file under `directory`, recursively.
func regularFiles(under directory: String) -> [String] {
    guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
    return walker.compactMap { $0 as? String }.map { directory + "/" + $0 }.filter { path in
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
    }.sorted()
}

/// The names in a directory, sorted; none when it does not exist.
func entryNames(_ path: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
}
