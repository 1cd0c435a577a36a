import Dispatch
import SharepipeSystem
import Synchronization

/// Writes a body's file as it is received and computes its SHA-256 on the way. The first `inlineBytes` are written
/// and hashed on the connection's thread (a small upload never leaves it); past them each received piece is only
/// copied into a `chunkBytes` buffer, and a thread of its own writes the full buffers to the file and hashes them.
/// Writing a large body into the page cache costs the connection's thread more than receiving it (ext4 prepares
/// every page of every write), and hashing costs as much again, so the connection's thread receives while the other
/// writes and hashes the bytes it received before, each from memory: the bytes are read from the socket once and
/// never read back from the file. At most `maxQueued` buffers exist per file (the connection's thread waits for
/// one when the writer is that far behind), allocated only for a large file. Each written range's writeback is
/// started as it grows, as a copy's is, so the barrier finds little left to write.
///
/// It borrows the descriptor's number: its owner waits for `finish()` (or `waitUntilIdle()`) before closing it.
/// Its calls come one at a time (the receiver's discipline).
final class ReceiveWriter: @unchecked Sendable {
    /// Bytes written and hashed on the connection's thread.
    static let inlineBytes: Int64 = 1 << 20
    /// One buffer handed to the writing thread.
    static let chunkBytes = 256 << 10
    static let maxQueued = 2

    private let descriptor: Int32
    private let digest = MessageDigest(.sha256)
    /// The writing thread's queue, made when the first buffer is handed over (a small file needs none).
    private var queue: DispatchQueue?
    private let slots = DispatchSemaphore(value: ReceiveWriter.maxQueued)
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

    /// A writer of the file open as `descriptor`, written from offset 0.
    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
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

    /// Returns once the writing thread no longer uses the descriptor.
    func waitUntilIdle() {
        queue?.sync {}
    }

    /// Writes what waits in a buffer and returns once the writing thread is idle (a request cut off: what arrived
    /// is kept); a failure is left for `bytesInFile` to show.
    func flush() {
        if filled > 0 { try? handOver() }
        waitUntilIdle()
    }

    private func takeBuffer() -> UnsafeMutableRawBufferPointer {
        spare.withLock { $0.popLast() }?.buffer ?? .allocate(byteCount: Self.chunkBytes, alignment: 4096)
    }

    /// Starts the writeback of what is written up to `end` once at least `threshold` bytes of it are waiting.
    private func startWriteback(upTo end: Int64, once threshold: Int64) {
        guard end - writebackFrom >= threshold else { return }
        System.startWriteback(descriptor: descriptor, offset: writebackFrom, length: Int(end - writebackFrom))
        writebackFrom = end
    }

    /// A buffer on its way to the writing thread (which owns it until it puts it back in `spare`), or kept there.
    private struct Chunk: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer
    }

    private func handOver() throws(ShareError) {
        guard let buffer = filling else { return }
        let count = filled
        let offset = given - Int64(count)
        filling = nil
        filled = 0
        slots.wait()
        if let error = failure.withLock({ $0 }) {
            slots.signal()
            spare.withLock { $0.append(Chunk(buffer: buffer)) }
            throw error
        }
        let queue = self.queue ?? DispatchQueue(label: "sharepipe.http.write")
        self.queue = queue
        let chunk = Chunk(buffer: buffer)
        queue.async { [self] in
            let buffer = chunk.buffer
            defer {
                spare.withLock { $0.append(chunk) }
                slots.signal()
            }
            guard failure.withLock({ $0 == nil }) else { return }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
            do {
                try System.write(descriptor: descriptor, bytes, at: offset)
            } catch {
                failure.withLock { $0 = error as? ShareError ?? ShareError(.io, "\(error)") }
                return
            }
            digest.update(bytes)
            inFile.store(offset + Int64(count), ordering: .releasing)
            startWriteback(upTo: offset + Int64(count), once: Int64(CopyEngine.chunkSize))
        }
    }
}
