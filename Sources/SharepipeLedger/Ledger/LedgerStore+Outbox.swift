import Foundation
import SharepipeSystem

/// The notification outbox (issue 33): one row per (event, URL), written in the transaction of the lifecycle record
/// it reports, taken by delivery lanes under a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL, the write lock on
/// SQLite), marked delivered after a 2xx, put off with backoff after anything else, and kept as failed once older
/// than the notifier's maximum age. A row is due only when no earlier row of its share and URL is still pending,
/// so the events of one share reach each receiver in order. Times are the database's clock: leases and due times
/// hold across hosts whatever their clocks say.
extension LedgerStore {
    /// v10: the outbox. `seq` orders the rows of a share; `since` starts a row's delivery window (`created_at`,
    /// or the time of `notifications retry`); `body` is rendered by the first lane that takes the row and kept,
    /// so a redelivery sends the same bytes. `outbox_shares` keeps, for the payloads only, the title and tags (a
    /// JSON array) of a share a notifying process staged or rolled back with either: never its text or userInfo.
    static func outboxMigration(_ dialect: SQLDialect) -> [String] {
        let bigint = dialect.bigint
        return [
            """
            CREATE TABLE outbox (seq \(dialect.serialKey), id TEXT NOT NULL, url TEXT NOT NULL,
                share_id TEXT NOT NULL, type TEXT NOT NULL, created_at \(bigint) NOT NULL, since \(bigint) NOT NULL,
                state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_at \(bigint) NOT NULL,
                lease_until \(bigint), claimed_by TEXT, delivered_at \(bigint), last_status INTEGER,
                last_error TEXT, body TEXT)
            """,
            "CREATE TABLE outbox_shares (share_id TEXT PRIMARY KEY, title TEXT, tags TEXT NOT NULL)",
            "CREATE UNIQUE INDEX outbox_id ON outbox(id, url)",
            "CREATE INDEX outbox_due ON outbox(next_at) WHERE state = 'pending'",
            "CREATE INDEX outbox_share ON outbox(share_id, url, seq) WHERE state = 'pending'",
            "CREATE INDEX outbox_state ON outbox(state, created_at)",
        ]
    }

    /// v12: an event's row went into the table and four indexes, and each commit wrote a page of each (a completion
    /// commit with a receiver wrote 41 `pwrite64` against 22 without). Rows are marked by `seq`, so the unique
    /// `(id, url)` index goes; the `(state, created_at)` index becomes two partial ones written only when a row
    /// fails or is delivered: failed rows (`notifications ls|retry`) and delivered ones by age (retention).
    /// Pending rows are counted and listed through `outbox_due`.
    static let outboxIndexMigration = [
        "DROP INDEX outbox_id", "DROP INDEX outbox_state",
        "CREATE INDEX outbox_failed ON outbox(seq) WHERE state = 'failed'",
        "CREATE INDEX outbox_delivered ON outbox(delivered_at) WHERE state = 'delivered'",
    ]

    /// The outbox rows reporting `change`'s events, guarded by the change's own condition (`condition`, bound to
    /// `bound`): written only when the change applies. A repair reports the state it moves a share into, unless the
    /// row was in it already.
    func outboxStatements(for change: Change, condition: String, bound: [SQLValue]) -> [SQLStatement] {
        let targets = outboxTargets.withLock { $0 }
        guard !targets.urls.isEmpty else { return [] }
        var statements: [SQLStatement] = []
        for event in change.events {
            var type: NotificationType?
            var extra = ""
            var values: [SQLValue] = []
            if event.event == .repaired, let state = event.type.flatMap(ShareState.init(rawValue:)) {
                type = NotificationType(state: state)
                extra = " AND state <> ?"
                values = [.text(state.rawValue)]
            } else {
                type = NotificationType(event: event.event)
            }
            guard let type, targets.events.contains(type) else { continue }
            statements += outboxInserts(
                type: type, urls: targets.urls, source: "FROM shares WHERE \(condition)\(extra)",
                bound: bound + values, shareID: nil)
        }
        return statements
    }

    /// The outbox rows of a share recorded rejected without a guard (a share never staged).
    func outboxStatements(rejected shareID: String) -> [SQLStatement] {
        let targets = outboxTargets.withLock { $0 }
        guard !targets.urls.isEmpty, targets.events.contains(.rejected) else { return [] }
        return outboxInserts(type: .rejected, urls: targets.urls, source: "", bound: [], shareID: shareID)
    }

    /// The title and tags of a share staged or rolled back by a process that notifies, for its payloads: nothing
    /// when it does not notify or the share has neither.
    func outboxDetails(_ manifest: Manifest) -> [SQLStatement] {
        let details = manifest.details
        guard details.title != nil || !details.tags.isEmpty,
            !outboxTargets.withLock({ $0.urls.isEmpty })
        else { return [] }
        let tags = String(decoding: (try? JSONEncoder().encode(details.tags)) ?? Data("[]".utf8), as: UTF8.self)
        return [SQLStatement(
            "INSERT INTO outbox_shares (share_id, title, tags) VALUES (?, ?, ?)",
            [.text(manifest.shareId), SQLValue(details.title), .text(tags)])]
    }

    /// One insert per URL, all with one new event id; `source` is a FROM clause naming the share row (its `id`), or
    /// empty with `shareID` given.
    private func outboxInserts(
        type: NotificationType, urls: [String], source: String, bound: [SQLValue], shareID: String?
    ) -> [SQLStatement] {
        let id = SQLValue.text(UUID.random().uuidString.lowercased())
        let now = driver.dialect.now
        let share = shareID == nil ? "id" : "CAST(? AS TEXT)"
        return urls.map { url in
            SQLStatement(
                """
                INSERT INTO outbox (id, url, share_id, type, created_at, since, state, next_at)
                SELECT CAST(? AS TEXT), CAST(? AS TEXT), \(share), CAST(? AS TEXT), \(now), \(now), 'pending', \(now)
                \(source)
                """,
                [id, .text(url)] + (shareID.map { [SQLValue.text($0)] } ?? []) + [.text(type.rawValue)] + bound)
        }
    }

    // MARK: Delivery

    /// Takes up to `limit` due rows of `urls` for this process until `lease` from now: pending, due, not leased
    /// by a live taker, and first of their share and URL among the pending rows. Rows without a body get one,
    /// rendered from the ledger, in the same transaction.
    package func takeDueNotifications(urls: [String], limit: Int, lease: Duration) throws -> [OutboxRow] {
        guard !urls.isEmpty else { return [] }
        let dialect = driver.dialect
        let now = dialect.now
        let marks = Array(repeating: "?", count: urls.count).joined(separator: ", ")
        // The earlier-row check looks only at pending rows: a row kept as failed no longer holds its share's later
        // events back.
        let taken = try driver.execute([SQLStatement(
            """
            UPDATE outbox SET lease_until = \(now) + ?, claimed_by = ? WHERE seq IN (
                SELECT o.seq FROM outbox o WHERE o.state = 'pending' AND o.next_at <= \(now)
                    AND o.url IN (\(marks)) AND COALESCE(o.lease_until, 0) < \(now)
                    AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.state = 'pending' AND e.share_id = o.share_id
                        AND e.url = o.url AND e.seq < o.seq)
                ORDER BY o.next_at, o.seq LIMIT ?\(dialect.skipLocked))
            RETURNING seq, id, url, share_id, type, created_at, since, attempts, body
            """,
            [.integer(lease.milliseconds), .text(owner)] + urls.map { .text($0) } + [SQLValue(limit)])],
            // Durable: it makes every earlier commit durable too, so no event is sent whose transition (or row) a
            // power cut could still take back — recovery would then report it again under another id.
            durable: true)[0]
        var rows = taken.rows.map(OutboxRow.init(row:)).sorted { $0.seq < $1.seq }
        let missing = rows.indices.filter { rows[$0].body == nil }
        guard !missing.isEmpty else { return rows }
        // Every missing body's share read in one transaction, and stored in one more.
        let queries = missing.flatMap { Self.bodyQueries(shareID: rows[$0].shareID) }
        let results = try driver.execute(queries, durable: false)
        var bodies: [SQLStatement] = []
        for (position, index) in missing.enumerated() {
            let body = try Self.notificationBody(
                rows[index], share: results[3 * position], details: results[3 * position + 1],
                attachments: results[3 * position + 2])
            rows[index].body = body
            bodies.append(SQLStatement(
                "UPDATE outbox SET body = ? WHERE seq = ? AND body IS NULL", [.text(body), .integer(rows[index].seq)]))
        }
        _ = try driver.execute(bodies, durable: false)
        return rows
    }

    /// Marks rows delivered (their lease held by this process or expired meanwhile: a row delivered twice is
    /// still delivered).
    package func markNotificationsDelivered(_ rows: [(seq: Int64, status: Int)]) throws {
        guard !rows.isEmpty else { return }
        let now = driver.dialect.now
        _ = try driver.execute(rows.map { row in
            SQLStatement(
                """
                UPDATE outbox SET state = 'delivered', delivered_at = \(now), attempts = attempts + 1,
                    last_status = ?, last_error = NULL, lease_until = NULL, claimed_by = NULL
                WHERE seq = ? AND state = 'pending'
                """,
                [SQLValue(row.status), .integer(row.seq)])
        }, durable: false)
    }

    /// Records a failed attempt: the row is due again after `delay`, or kept as failed when its delivery window
    /// (`maxAge` from `since`) has passed. `status` is the HTTP status (0 when there was no response), `error` a
    /// short reason (a libcurl message or `HTTP 500`).
    package func markNotificationFailed(seq: Int64, status: Int, error: String, delay: Duration, maxAge: Duration) throws {
        let now = driver.dialect.now
        try driver.run(
            """
            UPDATE outbox SET attempts = attempts + 1, last_status = ?, last_error = ?, lease_until = NULL,
                claimed_by = NULL, next_at = \(now) + ?,
                state = CASE WHEN since + ? <= \(now) THEN 'failed' ELSE 'pending' END
            WHERE seq = ? AND state = 'pending'
            """,
            [SQLValue(status), .text(error), .integer(delay.milliseconds), .integer(maxAge.milliseconds),
             .integer(seq)])
    }

    /// Extends this process's lease on rows it took and has not finished; returns the rows it still holds.
    package func renewNotificationLeases(_ seqs: [Int64], lease: Duration) throws -> Set<Int64> {
        guard !seqs.isEmpty else { return [] }
        let marks = Array(repeating: "?", count: seqs.count).joined(separator: ", ")
        return Set(try driver.run(
            """
            UPDATE outbox SET lease_until = \(driver.dialect.now) + ?
            WHERE seq IN (\(marks)) AND state = 'pending' AND claimed_by = ? RETURNING seq
            """,
            [.integer(lease.milliseconds)] + seqs.map { .integer($0) } + [.text(owner)]
        ).rows.compactMap { $0[0].integer })
    }

    /// Gives back rows taken but not tried (shutdown): due at once for any process.
    package func releaseNotifications(_ seqs: [Int64]) throws {
        guard !seqs.isEmpty else { return }
        _ = try driver.execute(seqs.map {
            SQLStatement(
                "UPDATE outbox SET lease_until = NULL, claimed_by = NULL WHERE seq = ? AND state = 'pending'",
                [.integer($0)])
        }, durable: false)
    }

    /// Who holds leases on pending rows now.
    package func notificationLeaseHolders() throws -> [String] {
        try driver.run(
            """
            SELECT DISTINCT claimed_by FROM outbox
            WHERE state = 'pending' AND claimed_by IS NOT NULL AND lease_until > \(driver.dialect.now)
            """
        ).rows.compactMap { $0[0].text }
    }

    /// Gives back every pending row `holder` leased.
    package func releaseNotifications(heldBy holder: String) throws {
        try driver.run(
            "UPDATE outbox SET lease_until = NULL, claimed_by = NULL WHERE state = 'pending' AND claimed_by = ?",
            [.text(holder)])
    }

    /// Tells this process's notifier (and, on PostgreSQL, every daemon listening) that rows were written.
    func outboxWritten() {
        outboxTargets.withLock { $0.wake }?()
    }

    /// How long until the first pending row of `urls` is due (zero when one is), nil when none is pending.
    package func timeUntilNextNotification(urls: [String]) throws -> Duration? {
        guard !urls.isEmpty else { return nil }
        let marks = Array(repeating: "?", count: urls.count).joined(separator: ", ")
        let now = driver.dialect.now
        let row = try driver.run(
            """
            SELECT MIN(CASE WHEN COALESCE(lease_until, 0) > next_at THEN lease_until ELSE next_at END) - \(now)
            FROM outbox WHERE state = 'pending' AND url IN (\(marks))
            """, urls.map { .text($0) })
        return row.scalar.integer.map { .milliseconds(max(0, $0)) }
    }

    // MARK: Operators

    /// Pending and failed rows (delivered ones with `delivered`), oldest first, at most `limit`.
    package func notifications(states: [NotificationState], limit: Int) throws -> [NotificationRecord] {
        // One select per state, each through that state's partial index.
        let selects = states.map { state in
            """
            SELECT seq, id, url, share_id, type, state, attempts, created_at, next_at, delivered_at, last_status,
                last_error FROM outbox WHERE state = '\(state.rawValue)'
            """
        }
        guard !selects.isEmpty else { return [] }
        return try driver.run(
            selects.joined(separator: " UNION ALL ") + " ORDER BY seq LIMIT ?", [SQLValue(limit)]
        ).rows.map { NotificationRecord(row: Array($0.dropFirst())) }
    }

    /// Failed rows (all, or those of the event ids in `ids`) made pending again with a fresh delivery window.
    /// Returns how many.
    package func retryNotifications(ids: [String]?) throws -> Int {
        let now = driver.dialect.now
        let set = "state = 'pending', attempts = 0, since = \(now), next_at = \(now), lease_until = NULL"
        guard let ids else {
            return try driver.run("UPDATE outbox SET \(set) WHERE state = 'failed'").changed
        }
        return try driver.execute(ids.map {
            SQLStatement("UPDATE outbox SET \(set) WHERE state = 'failed' AND id = ?", [.text($0)])
        }, durable: true).reduce(0) { $0 + $1.changed }
    }

    /// Pending and failed deliveries, for `status` and the metrics.
    package func notificationCounts() throws -> (pending: Int, failed: Int) {
        // Two counts, each over its partial index (one query grouping by state would read the whole table).
        (pending: try driver.run("SELECT COUNT(*) FROM outbox WHERE state = 'pending'").scalar.int,
         failed: try driver.run("SELECT COUNT(*) FROM outbox WHERE state = 'failed'").scalar.int)
    }

    // MARK: Payload

    /// What a row's body is made of: the share's row, its title and tags, and its attachments' events with their
    /// contents.
    static func bodyQueries(shareID: String) -> [SQLStatement] {
        let share = SQLValue.text(shareID)
        return [
            SQLStatement("SELECT source_app FROM shares WHERE id = ?", [share]),
            SQLStatement("SELECT title, tags FROM outbox_shares WHERE share_id = ?", [share]),
            SQLStatement(
                """
                SELECT e.attachment, e.type, e.bytes, c.file_id, c.sha256, c.original_share, c.original_file,
                    c.original_at
                FROM events e LEFT JOIN contents c ON c.share_id = e.share_id AND c.attachment = e.attachment
                WHERE e.share_id = ? AND e.event IN ('staged', 'failed') AND e.attachment IS NOT NULL
                ORDER BY e.attachment, e.seq
                """, [share]),
        ]
    }

    /// The JSON body of a row: its type, id and time, and the share as the ledger knows it — its app, title, tags,
    /// status (the event's), and each attachment's file id, type, size, hash and original. Never content, names,
    /// text or userInfo.
    static func notificationBody(
        _ row: OutboxRow, share: SQLResult, details: SQLResult, attachments rows: SQLResult
    ) throws -> String {
        var attachments: [NotificationPayload.Attachment] = []
        var seen = Set<Int64>()
        for columns in rows.rows {
            guard let index = columns[0].integer, seen.insert(index).inserted else { continue }
            var duplicate: DuplicateOrigin?
            if let original = columns[5].text, let file = columns[6].text {
                let createdAt = (columns[7].date ?? Date(timeIntervalSince1970: 0)).rfc3339
                duplicate = DuplicateOrigin(shareId: original, fileId: file, createdAt: createdAt)
            }
            attachments.append(.init(
                fileId: columns[3].text, typeIdentifier: columns[1].text, bytes: columns[2].integer,
                sha256: columns[4].text, duplicateOf: duplicate))
        }
        let tags = (details.rows.first?[1].text).flatMap {
            try? JSONDecoder().decode([String].self, from: Data($0.utf8))
        }
        let payload = NotificationPayload(
            type: row.type, id: row.id,
            timestamp: Date(timeIntervalSince1970: Double(row.createdAt) / 1000).rfc3339,
            share: .init(
                shareId: row.shareID, sourceApp: share.rows.first?[0].text, title: details.rows.first?[0].text,
                tags: tags ?? [],
                status: NotificationType(rawValue: row.type)?.status ?? row.type, attachments: attachments))
        return try payload.json()
    }
}

/// The events a notification reports, by `type`.
package enum NotificationType: String, Sendable, CaseIterable {
    case published = "share.published"
    case rejected = "share.rejected"
    case processed = "share.processed"
    case quarantined = "share.quarantined"

    init?(event: LedgerEvent) {
        switch event {
        case .published: self = .published
        case .rejected: self = .rejected
        case .processed: self = .processed
        case .quarantined: self = .quarantined
        default: return nil
        }
    }

    init?(state: ShareState) {
        switch state {
        case .published: self = .published
        case .rejected: self = .rejected
        case .processed: self = .processed
        case .quarantined: self = .quarantined
        default: return nil
        }
    }

    /// The share's status the event reports.
    var status: String { String(rawValue.dropFirst("share.".count)) }
}

/// Whom the outbox writes rows for: the URLs and the event types this process notifies.
package struct OutboxTargets: Sendable {
    package var urls: [String] = []
    package var events: Set<NotificationType> = Set(NotificationType.allCases)
    /// Called after a transaction that wrote rows commits.
    package var wake: (@Sendable () -> Void)?

    package init(urls: [String] = [], events: Set<NotificationType> = Set(NotificationType.allCases),
                 wake: (@Sendable () -> Void)? = nil) {
        (self.urls, self.events, self.wake) = (urls, events, wake)
    }
}

/// A row taken for delivery.
package struct OutboxRow: Sendable {
    package var seq: Int64, id: String, url: String, shareID: String, type: String, createdAt: Int64, since: Int64
    package var attempts: Int, body: String?

    init(row: [SQLValue]) {
        (seq, id, url, shareID, type) =
            (row[0].integer ?? 0, row[1].text ?? "", row[2].text ?? "", row[3].text ?? "", row[4].text ?? "")
        (createdAt, since, attempts, body) = (row[5].integer ?? 0, row[6].integer ?? 0, row[7].int, row[8].text)
    }
}

/// A row's delivery state.
package enum NotificationState: String, Sendable, CaseIterable {
    case pending, failed, delivered
}

/// One delivery, as `sharepipe notifications ls` shows it.
package struct NotificationRecord: Sendable, Encodable {
    package var id: String, url: String, shareId: String, type: String, state: String, attempts: Int
    package var createdAt: String, nextAttemptAt: String?, deliveredAt: String?, lastStatus: Int?, lastError: String?

    init(row: [SQLValue]) {
        func time(_ value: SQLValue) -> String? { value.date?.rfc3339 }
        id = row[0].text ?? ""
        url = row[1].text ?? ""
        shareId = row[2].text ?? ""
        type = row[3].text ?? ""
        state = row[4].text ?? ""
        attempts = row[5].int
        createdAt = time(row[6]) ?? ""
        nextAttemptAt = state == "pending" ? time(row[7]) : nil
        deliveredAt = time(row[8])
        lastStatus = row[9].integer.map { Int($0) }
        lastError = row[10].text
    }
}

/// The JSON a receiver gets (SPEC "Notifications"): `title` null and `tags` empty when the share has none, or was
/// staged by a process that does not notify.
struct NotificationPayload: Encodable {
    struct Attachment: Encodable {
        var fileId: String?, typeIdentifier: String?, bytes: Int64?, sha256: String?
        var duplicateOf: DuplicateOrigin?
    }

    struct Share: Encodable {
        var shareId: String, sourceApp: String?, title: String?, tags: [String], status: String
        var attachments: [Attachment]

        private enum CodingKeys: String, CodingKey {
            case shareId, sourceApp, title, tags, status, attachments
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(shareId, forKey: .shareId)
            try container.encode(sourceApp, forKey: .sourceApp)
            try container.encode(title, forKey: .title)
            try container.encode(tags, forKey: .tags)
            try container.encode(status, forKey: .status)
            try container.encode(attachments, forKey: .attachments)
        }
    }

    var type: String, id: String, timestamp: String, share: Share

    package func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}
