import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// The SHA-256 computed while a body is received: from the connection's buffers for the first MiB, then from the
/// pages just written on a thread of its own. Whatever the sizes the body arrives in, it is the file's digest.
/// The limit is the suite-wide one: the cases take under a second, but in the full suite they wait for a cooperative
/// thread while the end-to-end tests hold both of this machine's (a 1-minute limit timed out twice that way).
@Suite(.timeLimit(.minutes(5)))
struct ReceiveHasherTests {
    @Test(arguments: [0, 1, 4096, 1 << 20, (1 << 20) + 1, 5 << 20 + 12345])
    func theDigestIsTheWholeFilesWhateverThePieces(size: Int) async throws {
        try await withTemporaryDirectory { dir in
            var generator = SystemRandomNumberGenerator()
            // A cheap xorshift stream: one `getrandom` per byte kept both cooperative threads busy for tens of
            // seconds while the whole suite ran, and the other cases of this test timed out waiting for a thread.
            var state = UInt64(size) &+ 0x9E37_79B9_7F4A_7C15
            let bytes = (0..<size).map { _ -> UInt8 in
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                return UInt8(truncatingIfNeeded: state >> 32)
            }
            let file = try FileDescriptor.open(
                dir + "/body", flags: O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
            let hasher = ReceiveHasher(descriptor: file.rawValue)
            var written = 0
            while written < size {
                // Pieces of uneven sizes, as a socket delivers them, some crossing the 1 MiB boundary.
                let count = min(size - written, Int.random(in: 1...(300 << 10), using: &generator))
                try bytes[written..<written + count].withUnsafeBytes { piece in
                    try file.writeAll(piece)
                    try hasher.written(piece)
                }
                written += count
            }
            #expect(try hasher.finalize() == SHA256.hash(bytes))
        }
    }

    @Test func aFileThatShrankWhileItWasHashedFails() async throws {
        try await withTemporaryDirectory { dir in
            let file = try FileDescriptor.open(
                dir + "/body", flags: O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
            let hasher = ReceiveHasher(descriptor: file.rawValue)
            let bytes = [UInt8](repeating: 7, count: 3 << 20)
            try bytes.withUnsafeBytes { try file.writeAll($0) }
            try System.truncate(descriptor: file.rawValue, length: 1 << 20)
            #expect(throws: ShareError.self) {
                try bytes.withUnsafeBytes { try hasher.written($0) }
                _ = try hasher.finalize()
            }
        }
    }
}
