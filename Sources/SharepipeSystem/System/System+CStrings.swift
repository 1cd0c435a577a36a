import Glibc

extension System {
    /// Calls `body` with the strings as C strings (NULL for nil), then a NULL, that live for the call (libpq's
    /// keyword and parameter arrays).
    package static func withCStrings<T>(_ strings: [String?],
    _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        let copies = strings.map { $0.flatMap { strdup($0) } }
        defer { for copy in copies { free(copy) } }
        let pointers = copies.map { $0.map { UnsafePointer<CChar>($0) } } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
