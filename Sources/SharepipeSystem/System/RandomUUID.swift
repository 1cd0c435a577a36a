import CSharepipeShims
import Foundation
import Glibc
import Synchronization

extension UUID {
    /// A time-ordered UUID (version 7: 48 bits of Unix milliseconds, then 74 random bits from `getrandom`).
    /// Share and file ids made close together sort close together, so the ledger's indexes keyed by share id grow
    /// at their end instead of touching a random page per share; and Foundation's `UUID()` on Linux opens, reads and
    /// closes `/dev/urandom` for every id.
    package static func random() -> UUID {
        var bytes = RandomPool.shared.next()
        let milliseconds = UInt64(System.wallClockNanoseconds() / 1_000_000)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            for index in 0..<6 { raw[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * index)) }
            raw[6] = raw[6] & 0x0f | 0x70
            raw[8] = raw[8] & 0x3f | 0x80
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }
}

/// Random bytes for ids, fetched from the kernel's CSPRNG (`getrandom`) 4 KiB at a time: a share costs two ids,
/// and a system call for each of their halves showed up in the syscall count per share. Every byte is handed out
/// once.
private final class RandomPool: Sendable {
    static let shared = RandomPool()

    private struct Buffer {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096
    }

    private let buffer = Mutex(Buffer())

    /// The next 16 random bytes.
    func next() -> (UInt64, UInt64) {
        buffer.withLock { buffer in
            if buffer.used + 16 > buffer.bytes.count {
                Self.fill(&buffer.bytes)
                buffer.used = 0
            }
            let offset = buffer.used
            buffer.used += 16
            return buffer.bytes.withUnsafeBytes { raw in
                (raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self),
                 raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            }
        }
    }

    /// Fills `bytes` from `getrandom`, which blocks only until the kernel's pool is first seeded at boot.
    private static func fill(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            var filled = 0
            while filled < raw.count {
                let got = getrandom(raw.baseAddress! + filled, raw.count - filled, 0)
                if got > 0 {
                    filled += got
                } else if got < 0 && errno != EINTR {
                    // getrandom has existed since Linux 3.17; should it fail, the standard library's generator
                    // (which has its own fallbacks) fills the rest.
                    var generator = SystemRandomNumberGenerator()
                    for index in filled..<raw.count { raw[index] = generator.next() }
                    filled = raw.count
                }
            }
        }
    }
}
