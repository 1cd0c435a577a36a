import Dispatch
import SharepipeSystem
import Synchronization

/// The SHA-256 of a file being received, computed while it is received. The first `inlineBytes` are hashed from
/// the connection's buffer as they are written (a small upload never leaves the connection's thread); past them,
/// each written range is hashed on a thread of its own, read back from the page cache, so that receiving and
/// writing the next bytes overlaps with hashing (on one thread the hash costs as much as the receive and the write
/// together). At most `maxQueued` ranges wait, so the writer stays at most 16 MiB ahead (in the page cache: enough
/// for a hashing thread that the scheduler let wait a moment, 4 MiB measured slower) and memory stays flat:
/// one `bufferSize` buffer, allocated only for a large file. It borrows the descriptor's number: its owner waits for
/// `finalize()` (or `waitUntilIdle()`) before closing it. Its calls come one at a time (the receiver's discipline).
final class ReceiveHasher: @unchecked Sendable {
    /// Bytes hashed on the connection's thread before ranges go to the hashing thread.
    static let inlineBytes: Int64 = 1 << 20
    /// The size of a range handed to the hashing thread.
    static let rangeBytes: Int64 = 1 << 20
    static let maxQueued = 16
    static let bufferSize = 128 << 10

    private let descriptor: Int32
    private let digest = MessageDigest(.sha256)
    /// The hashing thread's queue, made when the first range is handed over (a small file needs none).
    private var queue: DispatchQueue?
    private let slots = DispatchSemaphore(value: ReceiveHasher.maxQueued)
    private let failure = Mutex<ShareError?>(nil)
    /// Bytes written so far, and how many of them are hashed or queued (used by the writer alone).
    private var written: Int64 = 0
    private var handedOver: Int64 = 0
    /// Used by the hashing thread alone.
    private var buffer: UnsafeMutableRawBufferPointer?

    /// A hasher of the file open (readable) as `descriptor`, written from offset 0.
    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        buffer?.deallocate()
    }

    /// `bytes` were just written at the end of the file.
    func written(_ bytes: UnsafeRawBufferPointer) throws(ShareError) {
        let start = written
        written += Int64(bytes.count)
        if start < Self.inlineBytes {
            let inline = Int(min(Int64(bytes.count), Self.inlineBytes - start))
            digest.update(UnsafeRawBufferPointer(rebasing: bytes[..<inline]))
            handedOver += Int64(inline)
        }
        if written - handedOver >= Self.rangeBytes { try handOver() }
    }

    /// Every byte is written: the digest, in lowercase hex.
    func finalize() throws(ShareError) -> String {
        if written > handedOver { try handOver() }
        waitUntilIdle()
        if let error = failure.withLock({ $0 }) { throw error }
        return hex(digest.finalize())
    }

    /// Returns once the hashing thread no longer reads the descriptor.
    func waitUntilIdle() {
        queue?.sync {}
    }

    private func handOver() throws(ShareError) {
        let offset = handedOver
        let count = Int(written - handedOver)
        handedOver = written
        slots.wait()
        if let error = failure.withLock({ $0 }) {
            slots.signal()
            throw error
        }
        let queue = self.queue ?? DispatchQueue(label: "sharepipe.http.hash")
        self.queue = queue
        queue.async { [self] in
            defer { slots.signal() }
            guard failure.withLock({ $0 == nil }) else { return }
            let buffer = self.buffer ?? .allocate(byteCount: Self.bufferSize, alignment: 4096)
            self.buffer = buffer
            var done = 0
            while done < count {
                let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[..<min(buffer.count, count - done)])
                do {
                    let read = try System.read(descriptor: descriptor, into: slice, at: offset + Int64(done))
                    guard read > 0 else { throw ShareError(.io, "the received file shrank while it was hashed") }
                    digest.update(UnsafeRawBufferPointer(rebasing: slice[..<read]))
                    done += read
                } catch {
                    failure.withLock { $0 = error as? ShareError ?? ShareError(.io, "\(error)") }
                    return
                }
            }
        }
    }
}
