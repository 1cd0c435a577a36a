import Foundation
import SharepipeLedger

extension Spool {
    /// The duplicate attachments the ledger recorded for a share (`sharepipe show`).
    package func duplicates(ofShare shareID: String) throws -> [RecordedDuplicate] {
        try ledger.duplicates(ofShare: shareID)
    }

    /// Duplicates per UTC day over the last `days` days, today included (`sharepipe status`).
    package func duplicateDays(last days: Int, now: Date = Date()) throws -> [DuplicateDay] {
        let today = Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) / 86_400_000
        return try ledger.duplicateDays(since: (today - Int64(days - 1)) * 86_400_000)
    }
}
