import Foundation
@testable import SharepipeSystem

/// What one run of the `sharepipe` binary produced.
struct ProcessResult: Sendable {
    /// The exit status; for a process killed by a signal, 128 plus the signal number, as a shell reports it.
    var status: Int32
    /// Everything written to stdout.
    var stdoutData: Data
    /// Everything written to stderr.
    var stderrData: Data
    /// From the launch to the exit.
    var elapsed: Duration = .zero

    /// stdout as UTF-8 text.
    var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    /// stderr as UTF-8 text.
    var stderr: String { String(decoding: stderrData, as: UTF8.self) }

    /// stdout parsed as JSON (an object, array, string, number, bool or NSNull).
    var json: Any {
        get throws { try JSONSerialization.jsonObject(with: stdoutData, options: [.fragmentsAllowed]) }
    }

    /// stdout parsed as a JSON object; throws when it is anything else.
    var jsonObject: [String: Any] {
        get throws {
            guard let object = try json as? [String: Any] else { throw SupportError("stdout is not a JSON object") }
            return object
        }
    }

    /// stdout decoded into a `Decodable` type.
    func decoded<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(type, from: stdoutData)
    }
}

/// A test-support failure with a message that says what went wrong.
struct SupportError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Runs `sharepipe` with `arguments` and waits for it (a minute at most, then it is killed).
///
/// - Parameters:
///   - environment: variables to set on top of the test's own environment.
///   - currentDirectory: the working directory; the test's own when nil.
///   - stdin: what the process reads on stdin; `/dev/null` when nil.
func runSharepipe(
    _ arguments: [String], environment: [String: String] = [:], currentDirectory: String? = nil,
    stdin: Data? = nil, timeout: Duration = .seconds(60)
) async throws -> ProcessResult {
    await commandSlots.acquire()
    do {
        let process = try SharepipeProcess(
            arguments, environment: environment, currentDirectory: currentDirectory, stdin: stdin)
        let result = try await process.waitForExit(timeout: timeout)
        await commandSlots.release()
        return result
    } catch {
        await commandSlots.release()
        throw error
    }
}

/// Runs of `runSharepipe` at once. Their waits hold no thread of the pool, so without a bound every test's commands
/// would run together; six on two cores keeps the load near what the timing-minded tests were written for (a test
/// that times a command reads `ProcessResult.elapsed`, which leaves out the wait for a slot).
private let commandSlots = Slots(6)

/// A counting semaphore whose waiters are suspended tasks, not blocked threads.
private actor Slots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ count: Int) { free = count }

    func acquire() async {
        if free > 0 {
            free -= 1
        } else {
            await withCheckedContinuation { waiting.append($0) }
        }
    }

    func release() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}

/// `runSharepipe` for code that runs on a thread of its own (never on the cooperative pool, which it would block).
func runSharepipeBlocking(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> ProcessResult {
    try SharepipeProcess(arguments).blockingWait(timeout: timeout)
}

/// Serialises `Process.run()` across the test process.
private let launchLock = NSLock()

/// Starts a process. Foundation's `Process.run` is not safe to call from several threads at once (it crashed in
/// memcpy under the parallel test run), so launches are serialised; the processes still run side by side.
func launchSerially(_ process: Process) throws {
    try launchLock.withLock { try process.run() }
}

/// A `sharepipe` process started in the background, for tests that signal it or watch it work (`daemon`).
/// Output goes to temporary files, so a chatty process never blocks on a full pipe.
final class SharepipeProcess: @unchecked Sendable {
    private let process = Process()
    private let outputDirectory: String
    private let exited = DispatchSemaphore(value: 0)
    /// When the process was started, for `ProcessResult.elapsed`.
    private let launched = ContinuousClock.now

    /// Starts the binary; see `runSharepipe` for the parameters.
    init(
        _ arguments: [String], environment: [String: String] = [:], currentDirectory: String? = nil,
        stdin: Data? = nil, launcher: [String] = []
    ) throws {
        outputDirectory = NSTemporaryDirectory() + "sharepipe-run-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
        for (name, contents) in [("stdout", Data()), ("stderr", Data()), ("stdin", stdin ?? Data())] {
            try contents.write(to: URL(fileURLWithPath: outputDirectory + "/" + name))
        }
        // A launcher (a program that sets something up and then execs the binary with the rest) runs first.
        let command = launcher + [try sharepipeBinaryPath()] + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        let input = stdin == nil ? nil : FileHandle(forReadingAtPath: outputDirectory + "/stdin")
        let output = FileHandle(forWritingAtPath: outputDirectory + "/stdout")
        let errors = FileHandle(forWritingAtPath: outputDirectory + "/stderr")
        process.standardInput = input ?? FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        // The child has its own copies once it runs; the test process keeps none, or a long test run would pile up
        // descriptors (past 1,024 Foundation's Process.run crashes).
        defer {
            for handle in [input, output, errors] { try? handle?.close() }
        }
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        do {
            try launchSerially(process)
        } catch {
            try? FileManager.default.removeItem(atPath: outputDirectory)
            throw error
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: outputDirectory)
    }

    /// The process id.
    var pid: Int32 { process.processIdentifier }

    /// Whether the process is still running.
    var isRunning: Bool { process.isRunning }

    /// Sends a signal (`SIGTERM`, `SIGINT`, `SIGHUP`, `SIGKILL` …).
    func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// What the process has written to stdout so far.
    var stdoutSoFar: String {
        String(decoding: FileManager.default.contents(atPath: outputDirectory + "/stdout") ?? Data(), as: UTF8.self)
    }

    /// When the process last wrote to stdout (see `modificationTime`).
    func stdoutLastWritten() throws -> Date { try modificationTime(outputDirectory + "/stdout") }

    /// What the process has written to stderr so far.
    var stderrSoFar: String {
        String(decoding: FileManager.default.contents(atPath: outputDirectory + "/stderr") ?? Data(), as: UTF8.self)
    }

    /// Waits for the process to end; after `timeout` it is killed and the wait throws. The wait holds a thread of
    /// its own, never one of the cooperative pool: tests run in parallel on a pool as wide as the machine has cores
    /// (two in CI), and waits that held it once starved two unrelated tests past their two-minute limit.
    func waitForExit(timeout: Duration = .seconds(60)) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try self.blockingWait(timeout: timeout) })
            }
        }
    }

    fileprivate func blockingWait(timeout: Duration) throws -> ProcessResult {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) * 1e-18
        if exited.wait(timeout: .now() + seconds) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
            exited.signal()
            throw SupportError("sharepipe did not exit within \(timeout); stderr: \(stderrSoFar)")
        }
        // Let a later call see the exit too.
        exited.signal()
        let status = process.terminationReason == .uncaughtSignal
            ? 128 + process.terminationStatus : process.terminationStatus
        return ProcessResult(
            status: status,
            stdoutData: FileManager.default.contents(atPath: outputDirectory + "/stdout") ?? Data(),
            stderrData: FileManager.default.contents(atPath: outputDirectory + "/stderr") ?? Data(),
            elapsed: ContinuousClock.now - launched)
    }
}

/// Waits for an event: until `condition` holds, looking every `interval`, for at most `timeout` (a deadline to fail
/// by, generous since the machine may be loaded, not a time the event is expected to take). Returns whether it holds.
/// The one waiting helper of this test target.
func eventually(
    _ timeout: Duration, every interval: Duration = .milliseconds(20), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}

/// The path of the built `sharepipe` binary: `$SHAREPIPE_BINARY` when set, else the one next to the test bundle
/// (`.build/<configuration>/sharepipe`).
func sharepipeBinaryPath() throws -> String {
    if let path = ProcessInfo.processInfo.environment["SHAREPIPE_BINARY"], !path.isEmpty { return path }
    var directories: [URL] = []
    if let executable = Bundle.main.executableURL { directories.append(executable.deletingLastPathComponent()) }
    directories.append(Bundle.main.bundleURL.deletingLastPathComponent())
    directories.append(Bundle.main.bundleURL)
    for bundle in Bundle.allBundles { directories.append(bundle.bundleURL.deletingLastPathComponent()) }
    let selfExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    directories.append(selfExecutable.deletingLastPathComponent())
    for directory in directories {
        var candidate = directory
        // Walk up a little: a test bundle may sit inside `<name>.xctest/…`.
        for _ in 0..<4 {
            let path = candidate.appendingPathComponent("sharepipe").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
            candidate.deleteLastPathComponent()
        }
    }
    throw SupportError("cannot find the built sharepipe binary next to the tests; set SHAREPIPE_BINARY")
}

/// The package's root directory (the one holding Package.swift).
let packageRoot: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

/// The path of a file under `Fixtures/`.
func fixturePath(_ name: String) -> String {
    packageRoot + "/Fixtures/" + name
}

/// A temporary directory for one test, removed when the test's body returns.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = NSTemporaryDirectory() + "sharepipe-e2e-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// Writes bytes to a file, creating missing parent directories, and returns its path.
@discardableResult
func writeFile(_ path: String, _ bytes: [UInt8]) throws -> String {
    try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

/// Writes UTF-8 text to a file, creating missing parent directories, and returns its path.
@discardableResult
func writeFile(_ path: String, _ text: String) throws -> String {
    try writeFile(path, Array(text.utf8))
}

/// A small but real JPEG header: enough for libmagic to say image/jpeg.
let jpegBytes: [UInt8] = [
    0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01,
    0x00, 0x01, 0x00, 0x00,
] + [UInt8](repeating: 0x20, count: 64) + [0xFF, 0xD9]

/// A PNG signature and IHDR chunk: enough for libmagic to say image/png.
let pngBytes: [UInt8] = [
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, 0xDE,
]

/// When `path` (not followed when a symlink) was last modified, as the file system recorded it.
///
/// Tests that bound a latency use it: the test process's threads may wait seconds for a core on a loaded machine
/// (tests run in parallel on a pool as wide as the machine), so the moment a test looks is later than the moment a
/// file changed; the file system's own time is not.
func modificationTime(_ path: String) throws -> Date {
    var status = stat()
    guard lstat(path, &status) == 0 else { throw SupportError("lstat \(path): errno \(errno)") }
    return Date(timeIntervalSince1970: Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) * 1e-9)
}

/// The names in a directory, sorted (none when it is missing).
func directoryEntries(_ path: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
}

/// A JSON object read from a file.
func jsonFile(_ path: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
    guard let dictionary = object as? [String: Any] else { throw SupportError("\(path) is not a JSON object") }
    return dictionary
}

/// A /proc file read to its end (`System.readFile`); nil when missing or unreadable. Foundation's
/// `String(contentsOfFile:)` returns only the first read of such a file (its reported size is 0), about one page: a
/// mount table longer than that lost its last lines, and the FUSE tests' newest mount with them.
func readProcFile(_ path: String) -> String? {
    (try? System.readFile(path)).map { String(decoding: $0, as: UTF8.self) }
}
