import CMagic
import Dispatch
import Synchronization

/// libmagic, loaded once per handle and never shared between threads at the same time: a sniff borrows a handle
/// from a small pool (so each running thread has its own) and gives it back.
package final class Magic: Sendable {
    /// The process-wide sniffer over the system's magic database.
    package static let shared = Magic()

    private struct Handle: @unchecked Sendable {
        let cookie: OpaquePointer
        /// The flags the handle was last set to.
        var flags: Int32
    }

    /// What libmagic is asked to test.
    package enum Scope: Sendable {
        /// Every test of the database: signatures, then the text encodings and the regular expressions over text.
        case full
        /// libmagic's built-in tests only (`MAGIC_NO_CHECK_SOFT`): the text encoding, JSON, CSV, tar, CDF, ELF,
        /// without the database's soft magic, whose regular expressions over text are libmagic's costliest work.
        case builtin
    }

    private static let fullFlags = MAGIC_MIME_TYPE | MAGIC_NO_CHECK_COMPRESS | MAGIC_ERROR
    private static func flags(_ scope: Scope) -> Int32 {
        scope == .full ? fullFlags : fullFlags | MAGIC_NO_CHECK_SOFT
    }

    private let idle = Mutex<[Handle]>([])
    private let databasePath: String?
    /// Whether `prepare()` has run.
    private let preparing = Atomic<Bool>(false)
    /// Left by `prepare()` once its handle is in the pool (or it failed): a sniff that finds the pool empty waits
    /// for it rather than parse the database a second time.
    private let prepared = DispatchGroup()

    init(databasePath: String? = nil) {
        self.databasePath = databasePath
    }

    deinit {
        idle.withLock { handles in
            for handle in handles { magic_close(handle.cookie) }
        }
    }

    /// The MIME type of a buffer (`image/jpeg`, `text/plain` …), from its first bytes.
    func mimeType(of bytes: UnsafeRawBufferPointer, scope: Scope = .full) throws -> String {
        var handle = try borrow()
        defer { idle.withLock { $0.append(handle) } }
        let flags = Self.flags(scope)
        if handle.flags != flags {
            guard magic_setflags(handle.cookie, flags) == 0 else {
                throw ShareError(.io, "libmagic refused its flags: \(lastError(handle))")
            }
            handle.flags = flags
        }
        guard let result = magic_buffer(handle.cookie, bytes.baseAddress, bytes.count) else {
            throw ShareError(.io, "libmagic could not sniff the buffer: \(lastError(handle))")
        }
        return String(cString: result)
    }

    package func mimeType(of bytes: [UInt8], scope: Scope = .full) throws -> String {
        try bytes.withUnsafeBytes { (raw) throws in try mimeType(of: raw, scope: scope) }
    }

    /// Loads the first handle on another thread, once per process, so that a sniff after a large copy finds the
    /// database ready: parsing it takes ~2 ms, which a one-share process (`sharepipe share`) otherwise waits for
    /// after its last byte. A failure here is left for the sniff itself to report.
    package func prepare() {
        guard !preparing.exchange(true, ordering: .acquiring) else { return }
        prepared.enter()
        DispatchQueue.global(qos: .utility).async { [self] in
            defer { prepared.leave() }
            guard let handle = try? load() else { return }
            idle.withLock { $0.append(handle) }
        }
    }

    /// Loads a handle to check that the database works; used by `doctor`.
    package func check() throws {
        let handle = try borrow()
        idle.withLock { $0.append(handle) }
    }

    private func borrow() throws -> Handle {
        if let handle = idle.withLock({ $0.popLast() }) { return handle }
        if preparing.load(ordering: .acquiring) {
            prepared.wait()
            if let handle = idle.withLock({ $0.popLast() }) { return handle }
        }
        return try load()
    }

    /// A new handle with the database loaded.
    private func load() throws -> Handle {
        guard let cookie = magic_open(Self.fullFlags) else {
            throw ShareError(.io, "magic_open failed")
        }
        guard magic_load(cookie, databasePath) == 0 else {
            let message = magic_error(cookie).map { String(cString: $0) } ?? "unknown error"
            magic_close(cookie)
            throw ShareError(.io, "libmagic database did not load: \(message)")
        }
        return Handle(cookie: cookie, flags: Self.fullFlags)
    }

    private func lastError(_ handle: Handle) -> String {
        magic_error(handle.cookie).map { String(cString: $0) } ?? "unknown error"
    }
}
