import Foundation
import SharepipeSystem

/// `INBOX/.rejected/`: the entries the daemon could not ingest, each beside its `<name>.reason.json`. Listed by
/// `sharepipe ls --rejected` and emptied by `sharepipe purge --rejected`; the daemon itself never reads it.
package struct RejectedFolder: Sendable {
    /// One rejected inbox entry.
    package struct Entry: Sendable, Equatable {
        /// The entry's name in `.rejected/` (the dropped name, with ` (1)` … when names collided).
        package var name: String
        /// Whether the dropped entry was a folder.
        package var isFolder: Bool
        /// Bytes: the file's size, or the sum of the regular files under a folder.
        package var bytes: Int64
        /// The code and message of its reason file; nil when the reason file is missing or unreadable.
        package var code: String?
        package var message: String?
        /// When it was rejected: when its reason file was written, else the entry's own modification time.
        package var rejectedAt: Date

        /// `rejectedAt` in RFC 3339, UTC, with milliseconds.
        package var rejectedAtText: String { rejectedAt.rfc3339 }
    }

    /// The `.rejected` directory.
    package let path: String

    /// The rejection folder of an inbox; it may not exist (nothing was rejected yet).
    package init(inbox: String) {
        path = inbox + "/" + InboxIngester.rejectedDirectory
    }

    /// The rejected entries, oldest first; none when the folder does not exist.
    package func entries() throws -> [Entry] {
        guard try System.lstatIfPresent(path) != nil else { return [] }
        let names = try System.listDirectory(path, repairingNames: true)
        let reasons = Set(names.filter { $0.hasSuffix(Self.reasonSuffix) })
        var entries: [Entry] = []
        for name in names where !reasons.contains(name) {
            guard let status = try System.lstatIfPresent(path + "/" + name) else { continue }
            var entry = Entry(
                name: name, isFolder: status.kind == .directory, bytes: Self.bytes(path + "/" + name, status),
                code: nil, message: nil, rejectedAt: Self.date(status.modificationTime))
            let reasonPath = path + "/" + name + Self.reasonSuffix
            if reasons.contains(name + Self.reasonSuffix), let reasonStatus = try? System.lstatIfPresent(reasonPath) {
                entry.rejectedAt = Self.date(reasonStatus.modificationTime)
                let reason = try? Self.reason(reasonPath)
                entry.code = reason?.code
                entry.message = reason?.message
            }
            entries.append(entry)
        }
        // A reason file whose entry is gone (deleted by hand) is listed under its entry's name, so it can be purged.
        for reason in reasons where !names.contains(String(reason.dropLast(Self.reasonSuffix.count))) {
            guard let status = try System.lstatIfPresent(path + "/" + reason) else { continue }
            let name = String(reason.dropLast(Self.reasonSuffix.count))
            let parsed = try? Self.reason(path + "/" + reason)
            entries.append(Entry(
                name: name, isFolder: false, bytes: 0, code: parsed?.code, message: parsed?.message,
                rejectedAt: Self.date(status.modificationTime)))
        }
        return entries.sorted { ($0.rejectedAt, $0.name) < ($1.rejectedAt, $1.name) }
    }

    /// Deletes rejected entries and their reason files, all of them or those rejected at least `age` ago; returns
    /// the names deleted.
    package func purge(olderThan age: Duration? = nil, now: Date = Date()) throws -> [String] {
        let cutoff = age.map { age in
            now.addingTimeInterval(-(Double(age.components.seconds) + Double(age.components.attoseconds) * 1e-18))
        }
        var purged: [String] = []
        for entry in try entries() where cutoff.map({ entry.rejectedAt <= $0 }) ?? true {
            try System.removeTree(path + "/" + entry.name)
            try System.removeTree(path + "/" + entry.name + Self.reasonSuffix)
            purged.append(entry.name)
        }
        if !purged.isEmpty { try System.syncDirectory(path) }
        return purged
    }

    private static let reasonSuffix = ".reason.json"

    private static func date(_ nanoseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(nanoseconds) / 1e9)
    }

    private static func reason(_ reasonPath: String) throws -> (code: String?, message: String?) {
        let bytes = try System.readFile(reasonPath, limit: 1 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] ?? [:]
        return (object["code"] as? String, object["message"] as? String)
    }

    /// A file's size, or the regular files' sizes under a folder (symlinks not followed).
    private static func bytes(_ path: String, _ status: FileStatus) -> Int64 {
        guard status.kind == .directory else { return status.kind == .regular ? status.size : 0 }
        let names = (try? System.listDirectory(path, repairingNames: false)) ?? []
        return names.reduce(0) { total, name in
            guard let child = try? System.lstatIfPresent(path + "/" + name) else { return total }
            return total + bytes(path + "/" + name, child)
        }
    }
}
