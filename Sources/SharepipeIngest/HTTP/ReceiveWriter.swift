import Dispatch
import SharepipeSystem
import Synchronization

/// Writes a body's file as it is received and computes its SHA-256 on the way. The first `inlineBytes` are written
/// and hashed on the connection's thread (a small upload never leaves it); past them each received piece is only
/// copied into a `chunkBytes` buffer, and each full buffer is written to the file by one thread of the writer's and
/// hashed by another, at the same time. Writing a large body costs more than receiving it, and hashing costs as
/// much again (SHA-256 runs at about the disk's speed), so the connection's thread receives while the two others
/// write and hash the bytes it received before, each from memory: the bytes are read from the socket once and
/// never read back from the file. At most `maxQueued` buffers wait for the writer per file (the connection's thread
/// waits when the writer is that far behind), allocated only for a large file. The first `deepFiles` large files in
/// flight at once get `deepChunkBytes` buffers instead: one large upload keeps the disk busy with long writes, while
/// many at once stay within their memory. Each range written through the page cache has its writeback started as
/// it grows, as a copy's is, so the barrier finds little left to write.
///
/// Where the file system offers direct I/O (probed with `statx`, see `System.directIOAlignment`), the full buffers
/// are written with `O_DIRECT`: from the buffer to the disk, with no copy into the page cache. That copy is most of
/// what a large body costs the daemon (its pages are new memory, which in a virtual machine may fault in the host
/// first), the file is synced before it counts anyway, and the bytes are never read back. The last, partial buffer
/// and any write the file system refuses (`EINVAL`) go through the page cache, and the descriptor is left without
/// `O_DIRECT` for its owner.
///
/// It borrows the descriptor's number: its owner waits for `finish()` (or `waitUntilIdle()`) before closing it.
/// Its calls come one at a time (the receiver's discipline).
final class ReceiveWriter: @unchecked Sendable {
    /// Bytes written and hashed on the connection's thread.
    static let inlineBytes: Int64 = 1 << 20
    /// One buffer handed to the writing and hashing threads.
    static let chunkBytes = 256 << 10
    /// Buffers handed over and not yet written and hashed, per file.
    static let maxQueued = 2
    /// The buffers of the first `deepFiles` large files in flight at once (a slow one keeps its place to its end;
    /// the others get `chunkBytes`).
    static let deepChunkBytes = 1 << 20
    static let deepFiles = 1
    /// Files in flight now that were given `deepChunkBytes`.
    private static let deepInFlight = Atomic<Int>(0)

    private let descriptor: Int32
    private let digest = MessageDigest(.sha256)
    /// The writing thread's queue and the hashing thread's, made when the first buffer is handed over (a small file
    /// needs neither).
    private var queue: DispatchQueue?
    private var hashing: DispatchQueue?
    /// The size of this file's buffers and the slots of those that may wait for the writer, decided with the first.
    private var shape: (chunkBytes: Int, slots: DispatchSemaphore)?
    /// Whether this file holds one of the `deepFiles` places (its buffers are `deepChunkBytes` long).
    private var deep: Bool { shape?.chunkBytes == Self.deepChunkBytes }
    private let failure = Mutex<ShareError?>(nil)
    /// Buffers the writing thread is done with.
    private let spare = Mutex<[Chunk]>([])
    /// Bytes given so far (written, or in a buffer); used by the connection's thread alone.
    private var given: Int64 = 0
    /// The buffer being filled, and how much of it is.
    private var filling: UnsafeMutableRawBufferPointer?
    private var filled = 0
    /// Where the written bytes whose writeback was not started yet begin; used by whichever thread writes.
    private var writebackFrom: Int64 = 0
    /// Bytes in the file so far: given, less what waits in buffers or was lost to a failed write.
    private let inFile = Atomic<Int64>(0)
    /// The alignment direct writes need while the descriptor has `O_DIRECT`; decided on the connection's thread
    /// before the first buffer is handed over, then used (and ended) by the writing thread.
    private var directAlignment: Int?

    /// A writer of the file open as `descriptor`, written from offset 0.
    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        if deep { Self.deepInFlight.subtract(1, ordering: .relaxed) }
        filling?.deallocate()
        for chunk in spare.withLock({ $0 }) { chunk.buffer.deallocate() }
    }

    /// Bytes written to the file so far, from its start (all that were given once `finish` or `flush` returned
    /// without a failure).
    var bytesInFile: Int64 { inFile.load(ordering: .acquiring) }

    /// Appends `bytes` to the file.
    func append(_ bytes: UnsafeRawBufferPointer) throws(ShareError) {
        if let error = failure.withLock({ $0 }) { throw error }
        var rest = bytes
        if given < Self.inlineBytes {
            let inline = UnsafeRawBufferPointer(rebasing: rest[..<Int(min(Int64(rest.count), Self.inlineBytes - given))])
            do {
                try System.write(descriptor: descriptor, inline, at: given)
            } catch {
                throw error as? ShareError ?? ShareError(.io, "\(error)")
            }
            digest.update(inline)
            given += Int64(inline.count)
            inFile.store(given, ordering: .releasing)
            startWriteback(upTo: given, once: Int64(CopyEngine.chunkSize))
            rest = UnsafeRawBufferPointer(rebasing: rest[inline.count...])
        }
        while !rest.isEmpty {
            let buffer = filling ?? takeBuffer()
            filling = buffer
            let count = min(rest.count, buffer.count - filled)
            UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<(filled + count)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[..<count]))
            filled += count
            given += Int64(count)
            rest = UnsafeRawBufferPointer(rebasing: rest[count...])
            if filled == buffer.count { try handOver() }
        }
    }

    /// Every byte is given: writes what is left, waits for the writing thread and returns the digest, in
    /// lowercase hex; throws the first failure of a write.
    func finish() throws(ShareError) -> String {
        if filled > 0 { try handOver() }
        waitUntilIdle()
        if let error = failure.withLock({ $0 }) { throw error }
        // A small file's writeback is left to the barrier.
        startWriteback(upTo: given, once: Int64(CopyEngine.chunkSize) / 2)
        return hex(digest.finalize())
    }

    /// Returns once the writing thread no longer uses the descriptor (left without `O_DIRECT`).
    func waitUntilIdle() {
        queue?.sync {}
        hashing?.sync {}
        endDirectWrites()
    }

    /// Writes what waits in a buffer and returns once the writing thread is idle (a request cut off: what arrived
    /// is kept); a failure is left for `bytesInFile` to show.
    func flush() {
        if filled > 0 { try? handOver() }
        waitUntilIdle()
    }

    private func takeBuffer() -> UnsafeMutableRawBufferPointer {
        spare.withLock { $0.popLast() }?.buffer ?? .allocate(byteCount: decideShape().chunkBytes, alignment: 4096)
    }

    /// The writer's buffers: `deepChunkBytes` long while fewer than `deepFiles` other files have as long.
    private func decideShape() -> (chunkBytes: Int, slots: DispatchSemaphore) {
        if let shape { return shape }
        var claimed = false
        var current = Self.deepInFlight.load(ordering: .relaxed)
        while !claimed && current < Self.deepFiles {
            (claimed, current) = Self.deepInFlight.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
        }
        let shape = (
            chunkBytes: claimed ? Self.deepChunkBytes : Self.chunkBytes,
            slots: DispatchSemaphore(value: Self.maxQueued))
        self.shape = shape
        return shape
    }

    /// Turns direct writes on for the buffers to come, where the file system offers them with an alignment that
    /// the buffers (page-aligned, `chunkBytes` long, starting at `inlineBytes`) meet.
    private func startDirectWrites() {
        guard let alignment = System.directIOAlignment(descriptor: descriptor),
              4096 % alignment.memory == 0, Self.chunkBytes % alignment.offset == 0,
              Self.inlineBytes % Int64(alignment.offset) == 0,
              System.setDirectIO(descriptor: descriptor, true)
        else { return }
        directAlignment = alignment.offset
    }

    private func endDirectWrites() {
        guard directAlignment != nil else { return }
        directAlignment = nil
        System.setDirectIO(descriptor: descriptor, false)
    }

    /// Writes a handed-over buffer: directly when it is aligned for that, else (and when the file system refuses
    /// the direct write) through the page cache, from then on.
    private func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        if let alignment = directAlignment {
            if bytes.count % alignment == 0 && offset % Int64(alignment) == 0 {
                do {
                    return try System.write(descriptor: descriptor, bytes, at: offset)
                } catch let error as ShareError where error.errno == Errno.invalidArgument {
                    // Refused as a direct write: the same bytes are written again through the page cache.
                }
            }
            endDirectWrites()
        }
        try System.write(descriptor: descriptor, bytes, at: offset)
        startWriteback(upTo: offset + Int64(bytes.count), once: Int64(CopyEngine.chunkSize))
    }

    /// Starts the writeback of what is written up to `end` once at least `threshold` bytes of it are waiting.
    private func startWriteback(upTo end: Int64, once threshold: Int64) {
        guard end - writebackFrom >= threshold else { return }
        System.startWriteback(descriptor: descriptor, offset: writebackFrom, length: Int(end - writebackFrom))
        writebackFrom = end
    }

    /// A buffer on its way to the writing and hashing threads (which share it until the last of them puts it back
    /// in `spare`), or kept there.
    private struct Chunk: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer
    }

    private func handOver() throws(ShareError) {
        guard let buffer = filling else { return }
        let count = filled
        let offset = given - Int64(count)
        filling = nil
        filled = 0
        let slots = decideShape().slots
        slots.wait()
        if let error = failure.withLock({ $0 }) {
            slots.signal()
            spare.withLock { $0.append(Chunk(buffer: buffer)) }
            throw error
        }
        if queue == nil { startDirectWrites() }
        let queue = self.queue ?? DispatchQueue(label: "sharepipe.http.write")
        let hashing = self.hashing ?? DispatchQueue(label: "sharepipe.http.hash")
        self.queue = queue
        self.hashing = hashing
        // The buffer is written on one thread and hashed on another at once; the last of the two puts it back.
        let chunk = Chunk(buffer: buffer)
        let users = Atomic<Int>(2)
        let done: @Sendable () -> Void = { [self] in
            guard users.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
            spare.withLock { $0.append(chunk) }
            slots.signal()
        }
        hashing.async { [self] in
            digest.update(UnsafeRawBufferPointer(rebasing: chunk.buffer[..<count]))
            done()
        }
        queue.async { [self] in
            defer { done() }
            guard failure.withLock({ $0 == nil }) else { return }
            do {
                try write(UnsafeRawBufferPointer(rebasing: chunk.buffer[..<count]), at: offset)
            } catch {
                failure.withLock { $0 = error as? ShareError ?? ShareError(.io, "\(error)") }
                return
            }
            inFile.store(offset + Int64(count), ordering: .releasing)
        }
    }
}
