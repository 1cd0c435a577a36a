import Dispatch
import SharepipeLedger
import SharepipeSpool
import SharepipeSystem
import Synchronization

/// Streams one representation into a copy in `staging`, counting, hashing and sniffing as it goes; a file is never
/// held whole in memory.
///
/// A file is copied in chunks by the kernel (`copy_file_range`, falling back to read/write), and each chunk is
/// hashed on a thread of its own from the copy's pages while the next chunk is copied; the writeback of each chunk
/// to the disk is started as soon as it is copied. A large attachment therefore costs about the slowest of copy,
/// hash and disk write, plus an `fsync` that finds almost nothing left to write. Memory per copy is a 128 KiB
/// hashing buffer, plus a 128 KiB copy buffer when the kernel cannot copy, whatever the file size.
struct CopyEngine: Sendable {
    /// What a finished copy is.
    struct Result: Sendable {
        var bytes: Int64
        var sha256: String
        /// The first bytes of the copy, for libmagic.
        var head: [UInt8]
    }

    /// State shared by the copies of one share.
    final class ShareState: Sendable {
        /// Bytes copied so far by every attachment of the share.
        let bytes = Atomic<Int64>(0)
        /// Set when the share is cancelled; copies stop at their next chunk.
        let cancelled = Atomic<Bool>(false)
        /// Set when a copy found the state directory's file system full: the share could not be attempted, which
        /// is not the attachment's fault, so the share fails as a whole and its sources are tried again later.
        let outOfSpace = Atomic<Bool>(false)
    }

    /// Where a copy is written: `path`, whose last component is `name`, in `staging/S`. The file is made when the
    /// copy opens it, never earlier (a load that fails first leaves nothing): an emptied spare of a recycled
    /// directory renamed to `name` when `spares` has one (cut to the copy's length once it is written), else a new
    /// file.
    struct Destination: Sendable {
        var path: String
        var name: String
        var spares: StagingSpares?

        init(path: String, name: String, spares: StagingSpares?) {
            self.path = path
            self.name = name
            self.spares = spares
        }

        /// A new file at `path`.
        init(path: String) {
            self.init(path: path, name: "", spares: nil)
        }
    }

    let maxFileSize: Int64
    let maxShareSize: Int64
    let share: ShareState
    let progress: (@Sendable (Int64) -> Void)?

    init(maxFileSize: Int64, maxShareSize: Int64, share: ShareState, progress: (@Sendable (Int64) -> Void)?) {
        self.maxFileSize = maxFileSize
        self.maxShareSize = maxShareSize
        self.share = share
        self.progress = progress
    }

    /// The most one kernel copy call moves before the copy checks limits and cancellation, hands the range to the
    /// hasher and starts its writeback.
    static let chunkSize = 8 << 20
    /// The largest read/write buffer, and the hasher's: small enough to stay in the CPU's cache between the read
    /// and the hash (and cp's own size). 1 MiB buffers were measured too: no faster, and a share of 20 × 100 MiB
    /// then peaked 2–7 MiB higher, the freed buffers staying in malloc's per-thread arenas.
    static let bufferSize = 128 << 10
    /// Copies of at least this many bytes announce their expected size on the copy while they run (an extended
    /// attribute, removed when the copy is complete), so `sharepipe status` can show how far they are.
    static let announcedSize: Int64 = 1 << 20
    /// The extended attribute holding a running copy's expected size.
    static let expectedSizeAttribute = "user.sharepipe.expected-bytes"

    /// Copies the file at `source` (opened without following symlinks and without blocking) to `destination`, a new
    /// file or an empty spare. On any failure the destination is removed.
    func copyFile(from source: String, to destination: Destination) throws -> Result {
        let input = try Self.openSource(source)
        let status = try input.status()
        let kind = status.kind
        guard kind == .regular else { throw ShareError(.notRegularFile, "the delivered file is a \(kind)") }
        return try copyFile(from: input, sizeHint: status.size, to: destination)
    }

    /// Copies from an open regular file, from its current offset to its end, to `destination`, a new file or an
    /// empty spare. `sizeHint` is the size `fstat` saw; the copy does not trust it: it reads to the end of the file
    /// whatever the size, so the byte count, the hash and the limits describe exactly the bytes copied even when
    /// the source grows or shrinks meanwhile. The copy is not fsynced (its writeback is started as it goes): the publisher's
    /// barrier makes it durable. On any failure the destination is removed.
    func copyFile(from input: borrowing FileDescriptor, sizeHint: Int64, to destination: Destination) throws -> Result {
        var spareLength: Int64 = 0
        let output = try Self.openDestination(destination, spareLength: &spareLength)
        let inFlight = CopiesInFlight.shared.begin(total: sizeHint)
        defer { CopiesInFlight.shared.end(inFlight) }
        do {
            let announced = sizeHint >= Self.announcedSize
            // Announcing is for display only: a file system without user extended attributes is not an error.
            if announced { try? output.setAttribute(Self.expectedSizeAttribute, sizeHint) }
            let result = try stream(from: input, to: output, sizeHint: sizeHint, inFlight: inFlight)
            try StagingSpares.cut(output, to: result.bytes, spareLength: spareLength)
            if announced { try? output.removeAttribute(Self.expectedSizeAttribute) }
            return result
        } catch {
            try? System.unlink(destination.path)
            throw error
        }
    }

    /// Writes bytes delivered as data through the same limits, hash and sniff as a file (not fsynced either).
    func copyData(_ bytes: UnsafeRawBufferPointer, to destination: Destination) throws -> Result {
        var spareLength: Int64 = 0
        let output = try Self.openDestination(destination, spareLength: &spareLength)
        do {
            let hasher = SHA256()
            var written: Int64 = 0
            while written < bytes.count {
                let end = min(bytes.count, Int(written) + Self.chunkSize)
                let chunk = UnsafeRawBufferPointer(rebasing: bytes[Int(written)..<end])
                try account(chunk.count, total: written)
                try output.writeAll(chunk)
                hasher.update(chunk)
                written += Int64(chunk.count)
                progress?(written)
            }
            try StagingSpares.cut(output, to: written, spareLength: spareLength)
            return Result(bytes: written, sha256: hasher.finalize(), head: Array(bytes.prefix(Sniffer.sniffLength)))
        } catch {
            try? System.unlink(destination.path)
            throw error
        }
    }

    private static func openSource(_ path: String) throws -> FileDescriptor {
        do {
            return try FileDescriptor.openForReading(path)
        } catch let error as ShareError {
            switch error.errno {
            case Errno.noEntry, Errno.notDirectory:
                throw ShareError(.missingFile, "the delivered file is gone", errno: error.errno)
            case Errno.symlinkLoop:
                throw ShareError(.notRegularFile, "the delivered file is a symlink", errno: Errno.symlinkLoop)
            case Errno.noDevice:
                throw ShareError(.notRegularFile, "the delivered file is a socket or device", errno: Errno.noDevice)
            default: throw error
            }
        }
    }

    /// The destination opened for writing at its start; `spareLength` is the length of the spare it is (0 for a
    /// new file).
    private static func openDestination(_ destination: Destination, spareLength: inout Int64) throws -> FileDescriptor {
        // Readable too: the hasher and the sniffer read the copy back from the page cache.
        if let length = destination.spares?.use(as: destination.name) {
            spareLength = length
            return try FileDescriptor.openExisting(destination.path)
        }
        return try FileDescriptor.create(destination.path, readable: true)
    }

    /// Checks the limits and cancellation before `count` more bytes are written after `total`.
    private func account(_ count: Int, total: Int64) throws {
        if share.cancelled.load(ordering: .relaxed) { throw ShareError(.cancelled, "the share was cancelled") }
        if total + Int64(count) > maxFileSize {
            throw ShareError(.tooLarge, "attachment is over the \(maxFileSize)-byte limit")
        }
        let shareTotal = share.bytes.add(Int64(count), ordering: .relaxed).newValue
        if shareTotal > maxShareSize {
            throw ShareError(.shareTooLarge, "share is over the \(maxShareSize)-byte limit")
        }
    }

    /// Copies chunk after chunk; each chunk is hashed by the `RangeHasher` while the next one is copied, and its
    /// writeback starts at once. The digest is of the copy's own bytes, so it describes exactly what landed.
    private func stream(
        from input: borrowing FileDescriptor, to output: borrowing FileDescriptor, sizeHint: Int64, inFlight: Int
    ) throws -> Result {
        // Buffers sized to the file as stat saw it (only a hint: the byte count is what the copy finds), so a 4 KiB
        // share does not map and unmap megabytes.
        let bufferSize = Int(min(max(sizeHint + 1, 4096), Int64(Self.bufferSize)))
        if sizeHint < Int64(Self.bufferSize) {
            return try streamSmall(from: input, to: output, bufferSize: bufferSize, inFlight: inFlight)
        }
        let hasher = RangeHasher(descriptor: output.rawValue, bufferSize: bufferSize)
        // Whatever happens, the hashing thread is done with the descriptor before its owner closes it.
        defer { hasher.waitUntilIdle() }
        var buffer: UnsafeMutableRawBufferPointer?
        defer { buffer?.deallocate() }
        var total: Int64 = 0
        // Where the bytes not yet handed to the hasher (nor their writeback started) begin.
        var handedOver: Int64 = 0
        var useKernelCopy = true
        while true {
            // Ask for one byte past the limit so a source that grows past it is caught, whatever stat said.
            let room = max(Int64(0), maxFileSize - total) + 1
            let want = Int(min(Int64(Self.chunkSize), room))
            var count = 0
            if useKernelCopy, let copied = try input.copyRange(to: output, length: want) {
                count = copied
            } else {
                // The kernel cannot copy between these files (or stopped part way): plain reads and writes from
                // where it stopped, hashed the same way.
                useKernelCopy = false
                let readBuffer = buffer ?? .allocate(byteCount: bufferSize, alignment: 4096)
                buffer = readBuffer
                count = try input.read(into: .init(rebasing: readBuffer[..<min(want, bufferSize)]))
                if count > 0 {
                    try account(count, total: total)
                    try output.writeAll(UnsafeRawBufferPointer(rebasing: readBuffer[..<count]))
                }
            }
            if count == 0 { break }
            if useKernelCopy { try account(count, total: total) }
            total += Int64(count)
            // Each full chunk goes to the hasher and has its writeback started at once, so the hash and the disk
            // work while the next chunk is copied. A file smaller than a chunk leaves its writeback to the fsync.
            if total - handedOver >= Int64(Self.chunkSize) {
                try hasher.hash(from: handedOver, count: Int(total - handedOver))
                output.startWriteback(offset: handedOver, length: Int(total - handedOver))
                handedOver = total
            }
            CopiesInFlight.shared.update(inFlight, done: total)
            progress?(total)
        }
        if total > handedOver { try hasher.hash(from: handedOver, count: Int(total - handedOver)) }
        let digest = try hasher.finalize()
        return Result(bytes: total, sha256: digest, head: try Self.head(of: output, bytes: total))
    }

    /// A small file (most shares): read into one buffer, written, and hashed and kept for the sniffer from that
    /// buffer on the calling thread — no hashing thread, no reading the copy back. It still reads to the end of the
    /// file, whatever its size has become.
    private func streamSmall(
        from input: borrowing FileDescriptor, to output: borrowing FileDescriptor, bufferSize: Int, inFlight: Int
    ) throws -> Result {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        let hasher = SHA256()
        var head: [UInt8] = []
        var total: Int64 = 0
        while true {
            let room = max(Int64(0), maxFileSize - total) + 1
            let count = try input.read(into: .init(rebasing: buffer[..<Int(min(Int64(bufferSize), room))]))
            if count == 0 { break }
            try account(count, total: total)
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[..<count])
            try output.writeAll(chunk)
            hasher.update(chunk)
            if head.count < Sniffer.sniffLength { head += chunk.prefix(Sniffer.sniffLength - head.count) }
            total += Int64(count)
            CopiesInFlight.shared.update(inFlight, done: total)
            progress?(total)
        }
        return Result(bytes: total, sha256: hasher.finalize(), head: head)
    }

    /// The first bytes of the copy, for the sniffer.
    private static func head(of output: borrowing FileDescriptor, bytes total: Int64) throws -> [UInt8] {
        let headLength = Int(min(Int64(Sniffer.sniffLength), total))
        var head = [UInt8](repeating: 0, count: headLength)
        var filled = 0
        while filled < headLength {
            let read = try head.withUnsafeMutableBytes { raw in
                try output.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]), at: Int64(filled))
            }
            if read == 0 { break }
            filled += read
        }
        return Array(head[..<filled])
    }
}

/// Hashes ranges of the copy on its own thread while the next chunk is copied, so hashing and copying overlap. It
/// reads the copy (from the page cache) a buffer at a time, so the digest is of the bytes that landed. At most two
/// ranges wait, so the copy never runs more than two chunks ahead and memory stays flat. It only borrows the
/// descriptor number: its owner waits for `waitUntilIdle()` before closing it.
///
/// Reading into a buffer was measured against mapping the copy a window at a time: with four copies running, the
/// mappings' mmap/munmap calls cost more system time than the memory copy they save.
private final class RangeHasher: @unchecked Sendable {
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "sharepipe.copy.hash")
    private let slots = DispatchSemaphore(value: 2)
    private let hasher = SHA256()
    private let failure = Mutex<ShareError?>(nil)
    /// Used by the hashing thread alone.
    private let buffer: UnsafeMutableRawBufferPointer

    init(descriptor: Int32, bufferSize: Int) {
        self.descriptor = descriptor
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
    }

    deinit {
        buffer.deallocate()
    }

    /// Queues the range for hashing, waiting while two ranges are already queued; throws the hashing thread's
    /// failure, if it had one, so the copy stops early.
    func hash(from offset: Int64, count: Int) throws {
        slots.wait()
        if let error = failure.withLock({ $0 }) {
            slots.signal()
            throw error
        }
        queue.async { [self] in
            defer { slots.signal() }
            guard failure.withLock({ $0 == nil }) else { return }
            var done = 0
            while done < count {
                let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[..<min(buffer.count, count - done)])
                do {
                    let read = try System.read(descriptor: descriptor, into: slice, at: offset + Int64(done))
                    guard read > 0 else { throw ShareError(.io, "the copy shrank while it was hashed") }
                    hasher.update(UnsafeRawBufferPointer(rebasing: slice[..<read]))
                    done += read
                } catch {
                    failure.withLock { $0 = error as? ShareError ?? ShareError(.io, "\(error)") }
                    return
                }
            }
        }
    }

    func waitUntilIdle() {
        queue.sync {}
    }

    func finalize() throws -> String {
        waitUntilIdle()
        if let error = failure.withLock({ $0 }) { throw error }
        return hasher.finalize()
    }
}
