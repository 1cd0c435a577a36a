import Foundation
import SharepipeCore
import Synchronization

/// Where the command line writes: a command's result (human or JSON) on stdout; progress, warnings and errors on
/// stderr. Colour and progress only appear on a terminal, and never when `NO_COLOR` is set or `TERM` is `dumb`.
enum Output {
    /// One of the two output streams.
    enum Stream: Sendable {
        case standardOutput, standardError

        var descriptor: Int32 { self == .standardOutput ? 1 : 2 }
    }

    /// A terminal text style.
    enum Style: String, Sendable {
        case bold = "1", dim = "2", red = "31", green = "32", yellow = "33", cyan = "36"
    }

    /// Writes text as it is (add the newline yourself).
    static func write(_ text: String, to stream: Stream = .standardOutput) {
        let handle = stream == .standardOutput ? FileHandle.standardOutput : FileHandle.standardError
        handle.write(Data(text.utf8))
    }

    /// Writes one line on stdout.
    static func line(_ text: String = "") {
        write(text + "\n", to: .standardOutput)
    }

    /// Writes `error: message` on stderr, the prefix in red on a terminal.
    static func printError(_ message: String) {
        write(styled("error:", .red, for: .standardError) + " " + message + "\n", to: .standardError)
    }

    /// Writes `warning: message` on stderr, the prefix in yellow on a terminal.
    static func printWarning(_ message: String) {
        write(styled("warning:", .yellow, for: .standardError) + " " + message + "\n", to: .standardError)
    }

    /// Writes a value as JSON on stdout: sorted keys, indented, slashes unescaped, one trailing newline.
    static func printJSON(_ value: some Encodable) throws {
        write(try jsonText(value) + "\n", to: .standardOutput)
    }

    /// Writes the `--json` form of an error on stdout: `{"error": {"code", "message"}}`.
    static func printJSONError(code: String, message: String) {
        struct Body: Encodable {
            var code: String
            var message: String
        }
        struct Shape: Encodable {
            var error: Body
        }
        // Two strings always encode; nothing can be lost here.
        if let text = try? jsonText(Shape(error: Body(code: code, message: message))) {
            write(text + "\n", to: .standardOutput)
        }
    }

    /// The JSON text `printJSON` writes, without the newline.
    static func jsonText(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Whether the stream is a terminal.
    static func isTerminal(_ stream: Stream) -> Bool {
        CommandLineProcess.isTerminal(stream.descriptor)
    }

    /// Whether colour may be used on the stream: a terminal, `NO_COLOR` unset, `TERM` not `dumb`.
    static func usesColor(_ stream: Stream) -> Bool {
        let environment = ProcessInfo.processInfo.environment
        return isTerminal(stream) && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    }

    /// The text in a style when the stream takes colour, else unchanged.
    static func styled(_ text: String, _ style: Style, for stream: Stream) -> String {
        usesColor(stream) ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }

    /// Rows in aligned columns, under a header when one is given; cells are separated by two spaces, styling in a
    /// cell does not upset the alignment, and the last column is not padded.
    static func table(_ rows: [[String]], header: [String]? = nil) -> String {
        let all = (header.map { [$0] } ?? []) + rows
        var widths = [Int](repeating: 0, count: all.map(\.count).max() ?? 0)
        for row in all {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], visibleWidth(cell)) }
        }
        return all.map { row in
            row.enumerated().map { column, cell in
                guard column < row.count - 1 else { return cell }
                return cell + String(repeating: " ", count: widths[column] - visibleWidth(cell))
            }.joined(separator: "  ") + "\n"
        }.joined()
    }

    /// The width of text on a terminal, not counting escape sequences.
    static func visibleWidth(_ text: String) -> Int {
        var width = 0
        var inEscape = false
        for scalar in text.unicodeScalars {
            if inEscape {
                if scalar == "m" { inEscape = false }
            } else if scalar == "\u{1B}" {
                inEscape = true
            } else {
                width += 1
            }
        }
        return width
    }

    /// A byte count for people: `512 B`, `1.5 KiB`, `10.0 MiB`.
    static func formatBytes(_ bytes: Int64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        guard bytes >= 1024 else { return "\(bytes) B" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f %@", value, units[unit])
    }
}

/// A one-line progress bar on stderr, drawn only when stderr is a terminal and the total is worth showing: done and
/// total bytes, the rate since the first byte and, once the rate has settled, the time left.
/// Safe to update from any thread; redraws at most ten times a second.
final class ProgressBar: Sendable {
    private struct State {
        var completed: Int64 = 0
        var startedAt: ContinuousClock.Instant?
        var lastDraw: ContinuousClock.Instant?
        var finished = false
    }

    /// How long the copy runs before a rate and a time left are shown: sooner, they jump about.
    static let settling: Duration = .milliseconds(500)

    private let label: String
    private let total: Int64
    private let isVisible: Bool
    private let state = Mutex(State())

    /// A bar for `total` bytes; invisible unless stderr is a terminal and `total` is at least `minimumTotal`
    /// (4 MiB by default: small copies finish before a bar would help).
    init(label: String, total: Int64, minimumTotal: Int64 = 4 << 20) {
        self.label = label
        self.total = total
        isVisible = Output.isTerminal(.standardError) && total >= minimumTotal && total > 0
    }

    /// Records progress: `completed` bytes of the total so far.
    func update(completed: Int64) {
        guard isVisible else { return }
        let now = ContinuousClock.now
        let line: String? = state.withLock { state in
            state.completed = min(completed, total)
            guard !state.finished else { return nil }
            let startedAt = state.startedAt ?? now
            state.startedAt = startedAt
            if let last = state.lastDraw, now - last < .milliseconds(100), state.completed < total { return nil }
            state.lastDraw = now
            let elapsed = now - startedAt
            return Self.render(
                label: label, completed: state.completed, total: total,
                elapsed: elapsed >= Self.settling ? elapsed : nil, final: false)
        }
        if let line { Output.write(line, to: .standardError) }
    }

    /// Draws the final state, with the average rate, and moves to a new line; later updates are ignored.
    func finish() {
        guard isVisible else { return }
        let now = ContinuousClock.now
        let line: String? = state.withLock { state in
            guard !state.finished else { return nil }
            state.finished = true
            return Self.render(
                label: label, completed: state.completed, total: total, elapsed: state.startedAt.map { now - $0 },
                final: true) + "\n"
        }
        if let line { Output.write(line, to: .standardError) }
    }

    /// One frame: `\rcopying [#####---------------] 25% 256.0 MiB / 1.0 GiB, 512.0 MiB/s, 2s left`, cleared to
    /// the end of the line. The rate needs `elapsed`; the time left is only drawn while the copy runs.
    static func render(label: String, completed: Int64, total: Int64, elapsed: Duration?, final: Bool) -> String {
        let width = 20
        let fraction = total > 0 ? min(1, Double(completed) / Double(total)) : 0
        let filled = Int(Double(width) * fraction)
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let amounts = "\(Output.formatBytes(completed)) / \(Output.formatBytes(total))"
        var text = "\r\(label) [\(bar)] \(Int(100 * fraction))% \(amounts)"
        let seconds = elapsed.map { Double($0.components.seconds) + Double($0.components.attoseconds) * 1e-18 } ?? 0
        if seconds > 0, completed > 0 {
            let rate = Double(completed) / seconds
            text += ", \(Output.formatBytes(Int64(rate)))/s"
            if !final, completed < total {
                text += ", \(formatAge(seconds: Int((Double(total - completed) / rate).rounded(.up)))) left"
            }
        }
        return text + "\u{1B}[K"
    }
}
