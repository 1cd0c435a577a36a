import Glibc

extension System {
    /// This machine's host name, or `localhost` when it has none.
    package static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }

    /// The kernel's boot id (changes at every boot), or an empty string when /proc does not say.
    package static func bootID() -> String {
        guard let bytes = try? readFile("/proc/sys/kernel/random/boot_id", limit: 64) else { return "" }
        return String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
