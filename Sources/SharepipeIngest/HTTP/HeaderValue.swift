import Foundation

/// A header value with parameters, as `Content-Type` and `Content-Disposition` have them:
/// `form-data; name="file"; filename*=UTF-8''%E2%82%AC.pdf`. Parameter names are case-insensitive; values may be
/// tokens or quoted strings (with backslash escapes); `name*` values are RFC 8187 extended values.
struct HeaderValue: Sendable, Equatable {
    /// The part before the first `;`, trimmed.
    var value: String
    /// Parameters by lowercased name; extended (`*`) values decoded, kept under their name with the star.
    var parameters: [String: String]

    init(_ text: String) {
        let scalars = Array(text.unicodeScalars)
        var index = 0
        func skipSpaces() {
            while index < scalars.count, scalars[index] == " " || scalars[index] == "\t" { index += 1 }
        }
        var head = ""
        while index < scalars.count, scalars[index] != ";" {
            head.unicodeScalars.append(scalars[index])
            index += 1
        }
        value = head.trimmingSpaces()
        parameters = [:]
        while index < scalars.count {
            index += 1  // the ';'
            skipSpaces()
            var name = ""
            while index < scalars.count, scalars[index] != "=", scalars[index] != ";" {
                name.unicodeScalars.append(scalars[index])
                index += 1
            }
            name = name.trimmingSpaces().lowercased()
            guard index < scalars.count, scalars[index] == "=" else { continue }
            index += 1
            skipSpaces()
            var parameterValue = ""
            if index < scalars.count, scalars[index] == "\"" {
                index += 1
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\\", index + 1 < scalars.count { index += 1 }
                    parameterValue.unicodeScalars.append(scalars[index])
                    index += 1
                }
                index += 1
                while index < scalars.count, scalars[index] != ";" { index += 1 }
            } else {
                while index < scalars.count, scalars[index] != ";" {
                    parameterValue.unicodeScalars.append(scalars[index])
                    index += 1
                }
                parameterValue = parameterValue.trimmingSpaces()
            }
            if name.hasSuffix("*") {
                guard let decoded = Self.extendedValue(parameterValue) else { continue }
                parameterValue = decoded
            }
            if !name.isEmpty, parameters[name] == nil { parameters[name] = parameterValue }
        }
    }

    subscript(name: String) -> String? { parameters[name] }

    /// The file name a `Content-Disposition` gives: `filename*` (RFC 6266: it wins) over `filename`.
    var filename: String? { parameters["filename*"] ?? parameters["filename"] }

    /// Decodes an RFC 8187 value, `charset'language'percent-encoded`; UTF-8 and ISO-8859-1 only.
    static func extendedValue(_ text: String) -> String? {
        let pieces = text.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard pieces.count == 3 else { return nil }
        let charset = pieces[0].lowercased()
        var bytes: [UInt8] = []
        var utf8 = Array(pieces[2].utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == 0x25 {
                guard utf8.count >= 2, let high = hexValue(utf8.popFirst()!), let low = hexValue(utf8.popFirst()!)
                else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        switch charset {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1": return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default: return nil
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// A suggested name fit for a manifest: the last path component of what the client sent (either slash), without
    /// control characters; nil when nothing is left.
    static func safeFileName(_ name: String?) -> String? {
        guard let name else { return nil }
        let last = name.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        let cleaned = String(String.UnicodeScalarView(last.unicodeScalars.filter {
            $0.properties.generalCategory != .control
        }))
        guard !cleaned.isEmpty, cleaned != ".", cleaned != ".." else { return nil }
        return String(cleaned.prefix(255))
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        var scalars = Substring(self).unicodeScalars[...]
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}
