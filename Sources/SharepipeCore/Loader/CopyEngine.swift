import Dispatch
import Glibc
import Synchronization

/// Streams one representation into a copy in `staging`, counting, hashing and sniffing as it goes; a file is never
/// held whole in memory.
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

    static let chunkSize = 4 << 20

    /// Copies the file at `source` (opened without following symlinks and without blocking) to `destination`,
    /// which must not exist. On any failure the destination is removed.
    func copyFile(from source: String, to destination: String) throws -> Result {
        let input = try Self.openSource(source)
        let status = try input.status()
        let kind = status.kind
        guard kind == .regular else { throw ShareError(.notRegularFile, "the delivered file is a \(kind)") }
        return try copyFile(from: input, sizeHint: status.size, to: destination)
    }

    /// Copies from an open regular file, from its current offset to its end, to `destination`, which must not
    /// exist. The copy is not fsynced: the publisher's barrier makes it durable. On failure it is removed.
    func copyFile(from input: borrowing FileDescriptor, sizeHint: Int64, to destination: String) throws -> Result {
        let output = try Self.openDestination(destination)
        do {
            return try stream(from: input, to: output, sizeHint: sizeHint)
        } catch {
            try? System.unlink(destination)
            throw error
        }
    }

    /// Writes bytes delivered as data through the same limits, hash and sniff as a file (not fsynced either).
    func copyData(_ bytes: UnsafeRawBufferPointer, to destination: String) throws -> Result {
        let output = try Self.openDestination(destination)
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
            return Result(bytes: written, sha256: hasher.finalize(), head: Array(bytes.prefix(Sniffer.sniffLength)))
        } catch {
            try? System.unlink(destination)
            throw error
        }
    }

    private static func openSource(_ path: String) throws -> FileDescriptor {
        do {
            return try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        } catch let error as ShareError {
            switch error.errno {
            case ENOENT, ENOTDIR: throw ShareError(.missingFile, "the delivered file is gone", errno: error.errno)
            case ELOOP: throw ShareError(.notRegularFile, "the delivered file is a symlink", errno: ELOOP)
            case ENXIO: throw ShareError(.notRegularFile, "the delivered file is a socket or device", errno: ENXIO)
            default: throw error
            }
        }
    }

    private static func openDestination(_ path: String) throws -> FileDescriptor {
        try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
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

    /// copy_file_range moves the bytes in the kernel; each chunk is then hashed from the copy itself (page cache),
    /// so the digest is of exactly the bytes that landed. Falls back to read/write when the kernel cannot.
    private func stream(
        from input: borrowing FileDescriptor, to output: borrowing FileDescriptor, sizeHint: Int64
    ) throws -> Result {
        // Buffers sized to the file as stat saw it (only a hint: the byte count is what the copy finds), so a 4 KiB
        // share does not map and unmap megabytes.
        let bufferSize = Int(min(max(sizeHint + 1, 4096), 1 << 20))
        let hasher = SHA256()
        let pipeline = RangeHasher(descriptor: output.rawValue, bufferSize: bufferSize)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        var useKernelCopy = true
        // Whatever happens, the hashing thread is done with the descriptor before its owner closes it.
        defer { pipeline.waitUntilIdle() }
        while true {
            // Ask for one byte past the limit so a source that grows past it is caught, whatever stat said.
            let room = max(Int64(0), maxFileSize - total) + 1
            let want = Int(min(Int64(Self.chunkSize), room))
            var count = 0
            if useKernelCopy {
                if let copied = try input.copyRange(to: output, length: want) {
                    count = copied
                    if count > 0 {
                        try account(count, total: total)
                        pipeline.hash(from: total, count: count)
                    }
                } else if total > 0 {
                    // The kernel copied some chunks and then refused: finish with plain reads, hashed the same way.
                    useKernelCopy = false
                    pipeline.switchToCaller = true
                    continue
                } else {
                    useKernelCopy = false
                    continue
                }
            } else {
                count = try input.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<min(want, buffer.count)]))
                if count > 0 {
                    try account(count, total: total)
                    let chunk = UnsafeRawBufferPointer(rebasing: buffer[..<count])
                    try output.writeAll(chunk)
                    if pipeline.switchToCaller {
                        pipeline.hash(from: total, count: count)
                    } else {
                        hasher.update(chunk)
                    }
                }
            }
            if count == 0 { break }
            total += Int64(count)
            progress?(total)
        }
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
        let digest = useKernelCopy || pipeline.switchToCaller ? try pipeline.finalize() : hasher.finalize()
        return Result(bytes: total, sha256: digest, head: Array(head[..<filled]))
    }

}

/// Hashes ranges of the copy on its own thread while the kernel copies the next chunk, so hashing and copying
/// overlap. It reads the copy (from the page cache), so the digest is of the bytes that landed. It only borrows the
/// descriptor number: its owner waits for `waitUntilIdle()` before closing it.
private final class RangeHasher: @unchecked Sendable {
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "sharepipe.copy.hash")
    /// At most two chunks wait for hashing, so memory stays flat however fast the copy runs.
    private let slots = DispatchSemaphore(value: 2)
    private let hasher = SHA256()
    private let failure = Mutex<ShareError?>(nil)
    private let buffer: UnsafeMutableRawBufferPointer
    /// Set when the copy fell back to read/write after some kernel-copied chunks.
    var switchToCaller = false

    init(descriptor: Int32, bufferSize: Int) {
        self.descriptor = descriptor
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 4096)
    }

    deinit {
        buffer.deallocate()
    }

    func hash(from offset: Int64, count: Int) {
        slots.wait()
        queue.async { [self] in
            defer { slots.signal() }
            guard failure.withLock({ $0 == nil }) else { return }
            var done = 0
            while done < count {
                let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[..<min(buffer.count, count - done)])
                do {
                    let read = try System.call("pread") {
                        Glibc.pread(descriptor, slice.baseAddress, slice.count, off_t(offset + Int64(done)))
                    }
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