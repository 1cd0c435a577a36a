import Foundation
import Glibc

/// A `sharepipe daemon --listen` in its own directory, driven by real HTTP clients.
struct HTTPSandbox {
    let root: String

    var inbox: String { root + "/inbox" }
    var state: String { root + "/state" }
    var output: String { root + "/processed" }

    /// Starts the daemon (store processor into `output`) listening on `listen` (an ephemeral loopback port by
    /// default) and waits until every listener is up; returns it with the first listener's address.
    func start(
        _ extra: [String] = [], listen: [String] = ["127.0.0.1:0"], environment: [String: String] = [:],
        command: [String]? = nil
    ) async throws -> HTTPDaemon {
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        let arguments = ["daemon", "--inbox", inbox, "--state", state, "--output", output]
            + listen.flatMap { ["--listen", $0] } + extra
        let process = try SharepipeProcess(arguments, environment: environment)
        let expected = max(1, listen.count)
        var addresses: [String] = []
        let up = try await eventually(.seconds(60)) {
            let log = process.stderrSoFar
            addresses = log.split(separator: "\n").filter { $0.contains("event=http.listening") }.compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix("listener=") }.map { String($0.dropFirst(9)) }
            }
            return addresses.count >= expected && log.contains("event=daemon.ready")
        }
        guard up else { throw SupportError("the daemon did not listen: \(process.stderrSoFar)") }
        return HTTPDaemon(process: process, addresses: addresses)
    }

    /// What is left in `staging`: shares being loaded, and received bodies (a running server's receive directory,
    /// `http-UUID`, counts only when it holds a body's file: the emptied `spare-N` it keeps for the next bodies
    /// hold no content).
    var stagingEntries: [String] {
        httpDirectoryNames(state + "/staging").filter { name in
            !name.hasPrefix("http-") || !receivedFiles(inReceiveDirectory: name).isEmpty
        }
    }

    /// The body files in the receive directory `name` of `staging`, without its emptied spares.
    func receivedFiles(inReceiveDirectory name: String) -> [String] {
        httpDirectoryNames(state + "/staging/" + name).filter { !$0.hasPrefix("spare-") }
    }

    /// Every regular file stored in the output, by `group/name`.
    var storedFiles: [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for group in httpDirectoryNames(output) {
            for name in httpDirectoryNames(output + "/" + group) {
                if let data = FileManager.default.contents(atPath: output + "/" + group + "/" + name) {
                    files[group + "/" + name] = Array(data)
                }
            }
        }
        return files
    }
}

/// A running daemon and where it listens.
struct HTTPDaemon {
    let process: SharepipeProcess
    /// `127.0.0.1:PORT` (the bound port), `unix:/path` …
    let addresses: [String]

    /// `http://127.0.0.1:PORT` of the first TCP listener.
    var baseURL: String { "http://" + (addresses.first { !$0.hasPrefix("unix:") } ?? "") }

    /// Stops it with SIGTERM and waits.
    func stop() async throws -> ProcessResult {
        process.signal(SIGTERM)
        return try await process.waitForExit(timeout: .seconds(30))
    }
}

/// What a client program did.
struct ToolResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String

    /// stdout as a JSON object.
    var json: [String: Any] {
        get throws {
            guard let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] else {
                throw SupportError("not a JSON object: \(stdout)")
            }
            return object
        }
    }
}

/// A client program (curl, python) running in the background; output goes to files.
final class ToolProcess: @unchecked Sendable {
    private let process = Process()
    private let directory: String

    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        directory = NSTemporaryDirectory() + "sharepipe-tool-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: directory + "/stdout", contents: nil)
        _ = FileManager.default.createFile(atPath: directory + "/stderr", contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = FileHandle(forWritingAtPath: directory + "/stdout")
        let errors = FileHandle(forWritingAtPath: directory + "/stderr")
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        defer {
            try? output?.close()
            try? errors?.close()
        }
        try launchSerially(process)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    var isRunning: Bool { process.isRunning }

    /// What it wrote to stdout so far.
    var stdoutSoFar: String {
        String(decoding: FileManager.default.contents(atPath: directory + "/stdout") ?? Data(), as: UTF8.self)
    }

    /// Sends a signal.
    func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits for the end (killed after `timeout`, and the wait throws).
    func result(timeout: Duration = .seconds(120)) async throws -> ToolResult {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            throw SupportError("\(process.executableURL?.lastPathComponent ?? "tool") did not finish in \(timeout)")
        }
        process.waitUntilExit()
        func read(_ name: String) -> String {
            String(decoding: FileManager.default.contents(atPath: directory + "/" + name) ?? Data(), as: UTF8.self)
        }
        return ToolResult(status: process.terminationStatus, stdout: read("stdout"), stderr: read("stderr"))
    }
}

/// Runs curl and waits. `-s -S` are added; use `--write-out` / `-D` for status and headers.
func curl(_ arguments: [String], timeout: Duration = .seconds(120)) async throws -> ToolResult {
    try await ToolProcess("/usr/bin/curl", ["-sS"] + arguments).result(timeout: timeout)
}

/// An HTTP exchange as curl saw it: the status, the headers (names lowercased) and the body.
struct CurlResponse {
    var status: Int
    var headers: [String: String]
    var body: String

    var json: [String: Any] {
        get throws {
            guard let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else {
                throw SupportError("not a JSON object: \(body)")
            }
            return object
        }
    }
}

/// One request with curl, returning the last response's status, headers and body.
/// `refusedWhileSending`: the server is expected to refuse the request before or while it reads the body. HTTP lets it
/// answer and close while the client still sends, and curl then sometimes reports the broken pipe (exit 55) instead
/// of the answer; such a request is sent again (at most three times), since a refusal ingests nothing.
func curlResponse(
    _ arguments: [String], timeout: Duration = .seconds(120), refusedWhileSending: Bool = false
) async throws -> CurlResponse {
    let headersFile = NSTemporaryDirectory() + "sharepipe-headers-" + UUID().uuidString
    defer { try? FileManager.default.removeItem(atPath: headersFile) }
    var result = try await curl(["-D", headersFile] + arguments, timeout: timeout)
    var tries = 1
    while refusedWhileSending, result.status == 55, tries < 3 {
        tries += 1
        result = try await curl(["-D", headersFile] + arguments, timeout: timeout)
    }
    guard result.status == 0 else { throw SupportError("curl failed (\(result.status)): \(result.stderr)") }
    let raw = String(decoding: FileManager.default.contents(atPath: headersFile) ?? Data(), as: UTF8.self)
    // With 100 Continue there are two header blocks; the last is the answer.
    let block = raw.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }.last ?? ""
    let lines = block.components(separatedBy: "\r\n")
    let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return CurlResponse(status: status, headers: headers, body: result.stdout)
}

/// A Python virtual environment with the test clients (`requests`, `tuspy`, `aiohttp`): `$SHAREPIPE_TEST_VENV` when
/// CI made one, else made once under `.build/`.
func pythonWithClients() async throws -> String {
    if let given = ProcessInfo.processInfo.environment["SHAREPIPE_TEST_VENV"], !given.isEmpty {
        return given + "/bin/python"
    }
    let venv = packageRoot + "/.build/http-test-venv"
    let python = venv + "/bin/python"
    let ready = venv + "/.ready"
    if FileManager.default.fileExists(atPath: ready) { return python }
    let made = try await ToolProcess("/usr/bin/python3", ["-m", "venv", venv]).result(timeout: .seconds(120))
    guard made.status == 0 else { throw SupportError("python3 -m venv failed: \(made.stderr)") }
    let installed = try await ToolProcess(python, ["-m", "pip", "install", "-q", "requests", "tuspy", "aiohttp"])
        .result(timeout: .seconds(600))
    guard installed.status == 0 else { throw SupportError("pip install failed: \(installed.stderr)") }
    _ = FileManager.default.createFile(atPath: ready, contents: nil)
    return python
}

/// The names in a directory, sorted; none when it is missing.
func httpDirectoryNames(_ path: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
}

/// The SHA-256 of a file, through sha256sum.
func sha256(ofFile path: String) async throws -> String {
    let result = try await ToolProcess("/usr/bin/sha256sum", [path]).result()
    return String(result.stdout.prefix(64))
}

/// Random bytes.
func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var words = [UInt64](repeating: 0, count: (count + 7) / 8)
    for index in words.indices { words[index] = generator.next() }
    return words.withUnsafeBytes { Array($0.prefix(count)) }
}
