import CMagic
import Synchronization

/// libmagic, loaded once per handle and never shared between threads at the same time: a sniff borrows a handle
/// from a small pool (so each running thread has its own) and gives it back.
final class Magic: Sendable {
    /// The process-wide sniffer over the system's magic database.
    static let shared = Magic()

    private struct Handle: @unchecked Sendable {
        let cookie: OpaquePointer
    }

    private let idle = Mutex<[Handle]>([])
    private let databasePath: String?

    init(databasePath: String? = nil) {
        self.databasePath = databasePath
    }

    deinit {
        idle.withLock { handles in
            for handle in handles { magic_close(handle.cookie) }
        }
    }

    /// The MIME type of a buffer (`image/jpeg`, `text/plain` …), from its first bytes.
    func mimeType(of bytes: UnsafeRawBufferPointer) throws -> String {
        let handle = try borrow()
        defer { idle.withLock { $0.append(handle) } }
        guard let result = magic_buffer(handle.cookie, bytes.baseAddress, bytes.count) else {
            throw ShareError(.io, "libmagic could not sniff the buffer: \(lastError(handle))")
        }
        return String(cString: result)
    }

    func mimeType(of bytes: [UInt8]) throws -> String {
        try bytes.withUnsafeBytes { (raw) throws in try mimeType(of: raw) }
    }

    /// Loads a handle to check that the database works; used by `doctor`.
    func check() throws {
        let handle = try borrow()
        idle.withLock { $0.append(handle) }
    }

    private func borrow() throws -> Handle {
        if let handle = idle.withLock({ $0.popLast() }) { return handle }
        guard let cookie = magic_open(MAGIC_MIME_TYPE | MAGIC_NO_CHECK_COMPRESS | MAGIC_ERROR) else {
            throw ShareError(.io, "magic_open failed")
        }
        guard magic_load(cookie, databasePath) == 0 else {
            let message = magic_error(cookie).map { String(cString: $0) } ?? "unknown error"
            magic_close(cookie)
            throw ShareError(.io, "libmagic database did not load: \(message)")
        }
        return Handle(cookie: cookie)
    }

    private func lastError(_ handle: Handle) -> String {
        magic_error(handle.cookie).map { String(cString: $0) } ?? "unknown error"
    }
}
