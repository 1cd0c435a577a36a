import Foundation
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// A temporary directory for one test, removed when the test's body returns. At most `DirectoryPermits.count` tests
/// hold one at a time (a test's nested directories share its permit): a spool in a directory holds about 16
/// descriptors, Swift Testing runs every parameterized case at once, and 85 open spools took the test process past
/// 1,024 descriptors, where Foundation's `Process.run` (the end-to-end tests' launches) crashes in memcpy.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    func make() async throws -> T {
        let path = FileManager.default.temporaryDirectory.path + "/sharepipe-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await body(path)
    }
    if DirectoryPermits.held { return try await make() }
    await DirectoryPermits.shared.acquire()
    do {
        let result = try await DirectoryPermits.$held.withValue(true) { try await make() }
        await DirectoryPermits.shared.release()
        return result
    } catch {
        await DirectoryPermits.shared.release()
        throw error
    }
}

/// The permits of `withTemporaryDirectory`.
actor DirectoryPermits {
    static let count = 24
    static let shared = DirectoryPermits()
    /// Whether the current task holds a permit.
    @TaskLocal static var held = false

    private var available = DirectoryPermits.count
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if available > 0 {
            available -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            available += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// Waits for an event: until `condition` holds, looking every `interval`, for at most `timeout` (a deadline to fail
/// by, not a time the event is expected to take: generous, since the whole suite shares one cooperative pool with
/// the end-to-end tests' blocking waits). Returns whether it holds. The one waiting helper of this test target.
func eventually(
    _ timeout: Duration = .seconds(120), every interval: Duration = .milliseconds(10), _ condition: () throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try condition()
}

/// Writes bytes to a file and returns its path.
@discardableResult
func writeFile(_ path: String, _ bytes: [UInt8]) throws -> String {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

@discardableResult
func writeFile(_ path: String, _ text: String) throws -> String {
    try writeFile(path, Array(text.utf8))
}

/// A small but real JPEG header: enough for libmagic to say image/jpeg.
let jpegBytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01,
    0x00, 0x01, 0x00, 0x00] + [UInt8](repeating: 0x20, count: 64) + [0xFF, 0xD9]

/// A PNG signature and IHDR chunk: enough for libmagic to say image/png.
let pngBytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, 0xDE]

extension Spool {
    /// The ledger store, for tests that look at its rows.
    var store: LedgerStore { ledger }

    /// Claims one share; nil when another claimer won it or it is gone.
    func claim(_ shareID: String) throws -> ShareClaim? {
        try claim([shareID]).first
    }
}
