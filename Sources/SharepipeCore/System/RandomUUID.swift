import Foundation

extension UUID {
    /// A version 4 UUID from the system generator (`getrandom`). Foundation's `UUID()` on Linux opens, reads and
    /// closes `/dev/urandom` for every id, three system calls a share pays twice for nothing.
    static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = raw[6] & 0x0f | 0x40
            raw[8] = raw[8] & 0x3f | 0x80
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }
}
