import Foundation

/// One event per line on stderr, logfmt or JSON. Fields carry ids, indexes, types, sizes, stages, codes and
/// durations; file names appear only when the user allows them (`--log-names`), and content never.
public struct Logger: Sendable {
    /// Line format.
    public enum Format: String, Sendable, CaseIterable {
        case logfmt, json
    }

    /// Severity, lowest first.
    public enum Level: String, Sendable, CaseIterable, Comparable {
        case debug, info, warning, error

        public static func < (lhs: Level, rhs: Level) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// A field value.
    package enum Value: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
        case string(String)
        case int(Int64)
        case double(Double)

        package init(stringLiteral value: String) { self = .string(value) }
        package init(integerLiteral value: Int64) { self = .int(value) }
    }

    let format: Format
    let level: Level
    /// Whether file names may be logged.
    package let logsNames: Bool
    private let sink: @Sendable (String) -> Void

    /// A logger writing to stderr, or to `sink` (tests).
    public init(
        format: Format = .logfmt, level: Level = .info, logsNames: Bool = false,
        sink: (@Sendable (String) -> Void)? = nil
    ) {
        self.format = format
        self.level = level
        self.logsNames = logsNames
        self.sink = sink ?? { System.writeStandardError($0) }
    }

    /// A file name, or a placeholder unless names may be logged.
    package func name(_ name: String) -> Value {
        logsNames ? .string(name) : .string("<redacted>")
    }

    /// Logs one event with its fields, in order.
    package func log(_ level: Level, _ event: String, _ fields: [(String, Value)] = []) {
        guard level >= self.level else { return }
        let time = Date().rfc3339
        switch format {
        case .logfmt:
            var line = "ts=\(time) level=\(level.rawValue) event=\(Self.logfmt(event))"
            for (key, value) in fields { line += " \(key)=\(Self.logfmt(value))" }
            sink(line)
        case .json:
            var line = "{\"ts\":\(Self.json(time)),\"level\":\(Self.json(level.rawValue)),\"event\":\(Self.json(event))"
            for (key, value) in fields { line += ",\(Self.json(key)):\(Self.json(value))" }
            sink(line + "}")
        }
    }

    package func debug(_ event: String, _ fields: [(String, Value)] = []) { log(.debug, event, fields) }
    package func info(_ event: String, _ fields: [(String, Value)] = []) { log(.info, event, fields) }
    package func warning(_ event: String, _ fields: [(String, Value)] = []) { log(.warning, event, fields) }
    package func error(_ event: String, _ fields: [(String, Value)] = []) { log(.error, event, fields) }

    private static func logfmt(_ value: Value) -> String {
        switch value {
        case .int(let number): return String(number)
        case .double(let number): return String(format: "%.3f", number)
        case .string(let string): return logfmt(string)
        }
    }

    private static func logfmt(_ string: String) -> String {
        let plain = !string.isEmpty && string.unicodeScalars.allSatisfy {
            $0.value > 0x20 && $0.value < 0x7f && $0 != "\"" && $0 != "=" && $0 != "\\"
        }
        return plain ? string : json(string)
    }

    private static func json(_ value: Value) -> String {
        switch value {
        case .int(let number): return String(number)
        case .double(let number): return String(format: "%.3f", number)
        case .string(let string): return json(string)
        }
    }

    /// A JSON string literal; control characters and invalid scalars escaped.
    static func json(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
