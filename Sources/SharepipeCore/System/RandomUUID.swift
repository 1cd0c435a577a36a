import Foundation

extension UUID {
    /// A time-ordered UUID (version 7: 48 bits of Unix milliseconds, then 74 random bits from `getrandom`).
    /// Share and file ids made close together sort close together, so the ledger's indexes keyed by share id grow
    /// at their end instead of touching a random page per share; and Foundation's `UUID()` on Linux opens, reads and
    /// closes `/dev/urandom` for every id.
    static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        let milliseconds = UInt64(System.wallClockNanoseconds() / 1_000_000)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            for index in 0..<6 { raw[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * index)) }
            raw[6] = raw[6] & 0x0f | 0x70
            raw[8] = raw[8] & 0x3f | 0x80
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }
}
