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
