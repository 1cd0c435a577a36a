import Foundation

extension Date {
    /// RFC 3339 with milliseconds, in UTC. Formatted by hand: Foundation's date formatters load ICU's data, which
    /// would cost the daemon more memory than everything else it does.
    package var rfc3339: String {
        let milliseconds = Int64((timeIntervalSince1970 * 1000).rounded(.down))
        let parts = System.utcCalendar(secondsSinceEpoch: milliseconds / 1000)
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2))T"
            + "\(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2))."
            + "\(pad(Int(milliseconds % 1000), 3))Z"
    }

    /// `milliseconds` since the epoch as `rfc3339` writes it.
    package static func rfc3339(milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).rfc3339
    }
}
