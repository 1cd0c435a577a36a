import Foundation
import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// A body's file written as it is received: the first MiB from the connection's buffers, the rest from buffers a
/// thread of its own writes and hashes. Whatever the sizes the body arrives in, the file holds its bytes and the
/// digest is theirs. The limit is the suite-wide one: the cases take under a second, but in the full suite they wait
/// for a cooperative thread while the end-to-end tests hold both of this machine's.
@Suite(.timeLimit(.minutes(5)))
struct ReceiveWriterTests {
    /// `size` bytes of a cheap xorshift stream (one `getrandom` per byte kept both cooperative threads busy for tens
    /// of seconds in the full suite).
    static func bytes(_ size: Int) -> [UInt8] {
        var state = UInt64(size) &+ 0x9E37_79B9_7F4A_7C15
        return (0..<size).map { _ -> UInt8 in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state >> 32)
        }
    }

    @Test(arguments: [0, 1, 4096, 1 << 20, (1 << 20) + 1, 5 << 20 + 12345])
    func theFileAndTheDigestAreTheBodysWhateverThePieces(size: Int) async throws {
        try await withTemporaryDirectory { dir in
            var generator = SystemRandomNumberGenerator()
            let bytes = Self.bytes(size)
            let file = try FileDescriptor.create(dir + "/body")
            let writer = ReceiveWriter(descriptor: file.rawValue)
            var given = 0
            while given < size {
                // Pieces of uneven sizes, as a socket delivers them, some crossing the 1 MiB and buffer boundaries.
                let count = min(size - given, Int.random(in: 1...(300 << 10), using: &generator))
                try bytes[given..<given + count].withUnsafeBytes { try writer.append($0) }
                given += count
            }
            #expect(try writer.finish() == SHA256.hash(bytes))
            #expect(writer.bytesInFile == Int64(size))
            #expect(try System.readFile(dir + "/body", limit: 8 << 20) == bytes)
        }
    }

    /// A request cut off in the middle: `flush` writes what waits in a buffer, and the file holds every byte given.
    @Test func aFlushWritesWhatWaitsAndTheFileHoldsEveryByteGiven() async throws {
        try await withTemporaryDirectory { dir in
            let bytes = Self.bytes((3 << 20) + 777)
            let file = try FileDescriptor.create(dir + "/body")
            let writer = ReceiveWriter(descriptor: file.rawValue)
            try bytes.withUnsafeBytes { try writer.append($0) }
            writer.flush()
            #expect(writer.bytesInFile == Int64(bytes.count))
            #expect(try System.readFile(dir + "/body", limit: 8 << 20) == bytes)
        }
    }

    /// Bytes of the file at `path` that are in the page cache (`mincore` over a mapping of it).
    static func residentBytes(_ path: String) throws -> Int {
        let file = try FileDescriptor.openForReading(path)
        let size = Int(try System.lstatIfPresent(path)?.size ?? 0)
        guard size > 0, let mapped = mmap(nil, size, PROT_READ, MAP_SHARED, file.rawValue, 0), mapped != MAP_FAILED
        else { return 0 }
        defer { munmap(mapped, size) }
        var pages = [UInt8](repeating: 0, count: (size + 4095) / 4096)
        guard mincore(mapped, size, &pages) == 0 else { return -1 }
        return pages.filter { $0 & 1 != 0 }.count * 4096
    }

    /// Writes `bytes` through a writer in 200 KiB pieces into `path`; the digest it returns.
    static func write(_ bytes: [UInt8], to path: String) throws -> (sha256: String, stillDirect: Bool) {
        let file = try FileDescriptor.create(path)
        let writer = ReceiveWriter(descriptor: file.rawValue)
        var given = 0
        while given < bytes.count {
            let count = min(bytes.count - given, 200 << 10)
            try bytes[given..<given + count].withUnsafeBytes { try writer.append($0) }
            given += count
        }
        let sha256 = try writer.finish()
        return (sha256, System.isDirectIO(descriptor: file.rawValue))
    }

    /// Where the file system offers direct I/O (ext4, XFS, btrfs on a block device), the full buffers past the first
    /// MiB go to the disk without a copy in the page cache: afterwards only the first MiB and the last, partial
    /// buffer are cached. The file holds the body's bytes, and the descriptor is given back without `O_DIRECT`.
    @Test func pastTheFirstMiBFullBuffersBypassThePageCacheWhereTheFileSystemOffersDirectIO() async throws {
        try await withTemporaryDirectory { dir in
            let probe = try FileDescriptor.create(dir + "/probe")
            guard System.directIOAlignment(descriptor: probe.rawValue) != nil else {
                // This test's directory offers no direct I/O (tmpfs, FUSE, NFS): the tmpfs test covers that case.
                return
            }
            let bytes = Self.bytes((6 << 20) + 12345)
            let written = try Self.write(bytes, to: dir + "/body")
            let resident = try Self.residentBytes(dir + "/body")
            // The first MiB, the last partial buffer (under `deepChunkBytes`) and the page they may share.
            #expect(resident <= Int(ReceiveWriter.inlineBytes) + ReceiveWriter.deepChunkBytes + 4096)
            #expect(resident >= Int(ReceiveWriter.inlineBytes))
            #expect(!written.stillDirect)
            #expect(written.sha256 == SHA256.hash(bytes))
            #expect(try System.readFile(dir + "/body", limit: 8 << 20) == bytes)
        }
    }

    /// On tmpfs (which accepts `O_DIRECT` but, through `statx`, offers no direct I/O on the kernels this runs on), the
    /// body arrives whole and the descriptor is left without `O_DIRECT`, whatever the probe finds.
    @Test func onTmpfsTheBodyIsWrittenWholeAndTheDescriptorLeftAsItWas() async throws {
        let dir = "/dev/shm/sharepipe-receive-\(UUID.random().uuidString)"
        guard (try? System.makeDirectory(dir)) != nil else { return }
        defer { try? System.removeTree(dir) }
        let bytes = Self.bytes((3 << 20) + 4321)
        let written = try Self.write(bytes, to: dir + "/body")
        #expect(!written.stillDirect)
        #expect(written.sha256 == SHA256.hash(bytes))
        #expect(try System.readFile(dir + "/body", limit: 8 << 20) == bytes)
    }

    /// A write that fails fails the body with a `ShareError`, and nothing is counted as in the file.
    @Test func aWriteThatFailsFailsTheBody() async throws {
        try await withTemporaryDirectory { dir in
            _ = try FileDescriptor.create(dir + "/body")
            let readOnly = try FileDescriptor.openForReading(dir + "/body")
            let writer = ReceiveWriter(descriptor: readOnly.rawValue)
            #expect(throws: ShareError.self) {
                try [UInt8](repeating: 1, count: 4096).withUnsafeBytes { try writer.append($0) }
            }
            #expect(writer.bytesInFile == 0)
        }
    }
}
