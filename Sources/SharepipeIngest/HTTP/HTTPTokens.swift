import SharepipeSystem

/// The bearer tokens of `--tokens FILE`: one `NAME TOKEN` per line (blank lines and `#` comments skipped). The file
/// must not be readable by group or others. A token is compared by the SHA-256 of what the client sent against the
/// SHA-256 of every token, each comparison over all 32 bytes, so the time taken says nothing about which token or
/// how much of it matched. Tokens are never logged; their NAME is the share's `sourceApp`.
package struct HTTPTokens: Sendable {
    private let entries: [(name: String, digest: [UInt8])]

    /// The names, in file order (for `doctor` and the start-up log line).
    package var names: [String] { entries.map(\.name) }

    init(entries: [(name: String, token: String)]) {
        self.entries = entries.map { ($0.name, Self.digest($0.token)) }
    }

    /// Reads and checks a tokens file; a file that is group- or other-readable, malformed or empty is refused.
    package static func load(path: String) throws -> HTTPTokens {
        let text = try System.readPrivateFile(path, naming: "the tokens file", limit: 1 << 20)
        var entries: [(name: String, token: String)] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingSpaces()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let fields = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 2 else {
                throw ShareError(
                    .io, "tokens file line \(number + 1): expected NAME TOKEN", errno: Errno.invalidArgument)
            }
            guard !entries.contains(where: { $0.name == fields[0] }) else {
                throw ShareError(
                    .io, "tokens file line \(number + 1): the name is used twice", errno: Errno.invalidArgument)
            }
            entries.append((String(fields[0]), String(fields[1])))
        }
        guard !entries.isEmpty else {
            throw ShareError(.io, "the tokens file holds no tokens", errno: Errno.invalidArgument)
        }
        return HTTPTokens(entries: entries)
    }

    /// The NAME of the token in an `Authorization: Bearer TOKEN` header, or nil.
    func name(forAuthorization header: String?) -> String? {
        guard let header else { return nil }
        let trimmed = header.trimmingSpaces()
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return nil }
        let presented = Self.digest(String(trimmed.dropFirst(7)).trimmingSpaces())
        var found: String?
        for entry in entries {
            var difference: UInt8 = 0
            for index in 0..<presented.count { difference |= presented[index] ^ entry.digest[index] }
            if difference == 0 && found == nil { found = entry.name }
        }
        return found
    }

    private static func digest(_ token: String) -> [UInt8] {
        let text = SHA256.hash(Array(token.utf8))
        return Array(text.utf8)
    }
}
