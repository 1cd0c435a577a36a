import Foundation
import SharepipeSystem

/// What an attachment whose content was already ingested within the duplicate window gets (`--duplicates`).
package enum DuplicatePolicy: String, Codable, Sendable, CaseIterable {
    /// Ingested as any other attachment.
    case accept
    /// Ingested, and the manifest, the receipt and the exec environment name the original.
    case flag
    /// Refused with `ERR_DUPLICATE` naming the original; the share's partial-failure policy decides the rest.
    case reject
}

/// The copy an attachment's content duplicates: its share, its file id and when its share was created.
package struct DuplicateOrigin: Codable, Sendable, Equatable {
    /// The original's share id.
    package var shareId: String
    /// The original's file id.
    package var fileId: String
    /// When the original's share was created, RFC 3339 as in its manifest.
    package var createdAt: String

    /// Creates an origin.
    package init(shareId: String, fileId: String, createdAt: String) {
        self.shareId = shareId
        self.fileId = fileId
        self.createdAt = createdAt
    }

    /// An origin whose time is in ms since the epoch, as the ledger keeps it.
    init(shareId: String, fileId: String, createdAtMilliseconds: Int64) {
        self.init(
            shareId: shareId, fileId: fileId,
            createdAt: Date(timeIntervalSince1970: Double(createdAtMilliseconds) / 1000).rfc3339)
    }
}

/// One copied attachment's content, offered to the ledger's duplicate check.
package struct ContentClaim: Sendable, Equatable {
    /// The attachment's index in its share.
    package var index: Int
    /// SHA-256 of the copy, lowercase hex.
    var sha256: String
    /// The copy's file id.
    var fileID: String

    package init(index: Int, sha256: String, fileID: String) {
        self.index = index
        self.sha256 = sha256
        self.fileID = fileID
    }
}

/// A share's request to the ledger: look its copies' contents up, and record those that will be ingested, in one
/// transaction that serializes on the contents' hashes (so two daemons ingesting one content at once never both
/// find no original). Within the share, the second copy of a content duplicates the first; across shares, a copy
/// duplicates the earliest copy that counts. Under `reject` a duplicate is recorded as rejected (for `show` and
/// `status`, never an original), and an all-or-nothing share that loses a copy records no original at all.
package struct ContentReservation: Sendable {
    package var shareID: String
    /// When the share was created (its manifest's `createdAt`), ms since the epoch.
    var createdAt: Int64
    /// The copied attachments, in attachment order.
    var claims: [ContentClaim]
    /// What a duplicate gets.
    var policy: DuplicatePolicy
    /// Whether any refused attachment rolls the whole share back (all-or-nothing).
    var allOrNothing: Bool
    /// Copies recorded before this time (ms since the epoch) are outside the window.
    var windowStart: Int64
    /// A reservation whose share was never staged counts as an original only when made after this time: a loader
    /// that died between reserving and staging does not block the content for longer.
    var reservationsSince: Int64

    package init(
        shareID: String, createdAt: Int64, claims: [ContentClaim], policy: DuplicatePolicy, allOrNothing: Bool,
        windowStart: Int64, reservationsSince: Int64
    ) {
        self.shareID = shareID
        self.createdAt = createdAt
        self.claims = claims
        self.policy = policy
        self.allOrNothing = allOrNothing
        self.windowStart = windowStart
        self.reservationsSince = reservationsSince
    }
}

/// Duplicates one day saw, for `sharepipe status`.
package struct DuplicateDay: Sendable, Equatable, Encodable {
    /// The UTC day, `YYYY-MM-DD`.
    package var day: String
    /// Attachments flagged (ingested naming their original).
    package var flagged: Int
    /// Attachments refused with `ERR_DUPLICATE`.
    package var rejected: Int
}

/// A duplicate attachment of one share, as the ledger recorded it (`sharepipe show`).
package struct RecordedDuplicate: Sendable, Equatable {
    /// The attachment's index.
    package var index: Int
    /// Its original.
    package var origin: DuplicateOrigin
    /// Whether it was refused (`reject`) rather than flagged.
    package var rejected: Bool
}

extension ShareError {
    /// `ERR_DUPLICATE` naming the original share, its file and when it was ingested.
    package static func duplicate(of origin: DuplicateOrigin) -> ShareError {
        ShareError(
            .duplicate,
            "the same content was ingested at \(origin.createdAt) as file \(origin.fileId) of share \(origin.shareId)")
    }
}

extension DuplicateDay {
    /// `YYYY-MM-DD` of a day counted from the epoch (UTC).
    static func name(ofDay day: Int64) -> String {
        let (year, month, dayOfMonth) = Date.civil(fromDays: day)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(dayOfMonth, 2))"
    }
}

extension Date {
    /// Milliseconds since the epoch of a time written as `rfc3339` writes it (`2026-12-01T12:00:00.000Z`); nil for
    /// any other form. By hand, like `rfc3339`, so that no ICU data is loaded.
    static func milliseconds(rfc3339 text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 24, bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54, bytes[13] == 0x3A,
            bytes[16] == 0x3A, bytes[19] == 0x2E, bytes[23] == 0x5A
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                guard (0x30...0x39).contains(bytes[index]) else { return nil }
                value = value * 10 + Int64(bytes[index] - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            let millisecond = number(20..<23), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        let days = days(fromCivil: year, month, day)
        return (((days * 24 + hour) * 60 + minute) * 60 + second) * 1000 + millisecond
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day counted from 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
