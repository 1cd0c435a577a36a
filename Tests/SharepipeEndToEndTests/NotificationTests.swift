import Foundation
import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeLedger
@testable import SharepipeSystem

/// Webhooks from the outbox (issue 33), through the built binary and a real receiver on 127.0.0.1
/// (`WebhookReceiver`): signed, one id per event, in order per share, delivered through a receiver's failures and
/// absence and across kill -9 — and on PostgreSQL by three daemons, none delivering an event while another does.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct NotificationTests {
    /// A daemon's directories and the receiver.
    struct Sandbox {
        let root: String
        let receiver: WebhookReceiver
        let secret: String

        init(root: String) throws {
            self.root = root
            receiver = try WebhookReceiver(directory: root + "/receiver")
            secret = try receiver.writeSecretFile()
            for path in [inbox, outside] {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            }
        }

        var inbox: String { root + "/inbox" }
        var state: String { root + "/state" }
        var outside: String { root + "/outside" }

        /// Drops a file atomically (written beside the inbox, then renamed in).
        func drop(_ name: String, _ bytes: [UInt8]) throws {
            let staged = try writeFile(outside + "/" + name, bytes)
            try FileManager.default.moveItem(atPath: staged, toPath: inbox + "/" + name)
        }

        /// A daemon notifying the receiver; exec processor that fails for content holding "bad".
        func daemon(_ extra: [String] = [], ledger: [String] = []) async throws -> SharepipeProcess {
            let daemon = try SharepipeProcess([
                "daemon", "--inbox", inbox, "--state", state, "--settle", "100", "--processor", "exec",
                "--exec", "if grep -q bad \"$SHAREPIPE_FILE\"; then exit 1; fi", "--max-attempts", "1",
                "--notify", receiver.url, "--notify-secret", secret, "--notify-backoff", "100",
            ] + ledger + extra)
            let ready = try await eventually(.seconds(60), every: .milliseconds(50)) {
                daemon.stderrSoFar.contains("event=daemon.ready")
            }
            guard ready else { throw SupportError("the daemon did not get ready: \(daemon.stderrSoFar)") }
            return daemon
        }

        /// Waits until the receiver acknowledged `count` distinct event ids.
        func waitForAcknowledged(_ count: Int, timeout: Duration = .seconds(180)) async throws -> Bool {
            try await eventually(timeout, every: .milliseconds(100)) {
                Set(receiver.acknowledged.map(\.id)).count >= count
            }
        }
    }

    /// Checks what every run must hold: every request signed, each (share, type) one event id, and each share's
    /// events acknowledged in lifecycle order.
    static func expectOneIDPerEventInOrder(_ deliveries: [WebhookReceiver.Delivery]) {
        let unsigned = deliveries.filter { !$0.valid }.count
        #expect(unsigned == 0, "requests without a valid signature")
        var ids: [String: Set<String>] = [:]
        for delivery in deliveries { ids[delivery.shareID + " " + delivery.type, default: []].insert(delivery.id) }
        for (event, set) in ids { #expect(set.count == 1, "\(event) was produced as \(set.count) events") }
        let rank = ["share.published": 0, "share.rejected": 1, "share.processed": 1, "share.quarantined": 1]
        let acknowledged = deliveries.filter { $0.status == 200 }.sorted { $0.end < $1.end }
        var last: [String: Int] = [:]
        for delivery in acknowledged {
            let order = rank[delivery.type] ?? -1
            #expect(order >= (last[delivery.shareID] ?? 0), "\(delivery.type) of \(delivery.shareID) out of order")
            last[delivery.shareID] = order
        }
    }

    @Test func everyEventTypeIsPostedSignedOncePerIdInOrder() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start()
            let daemon = try await sandbox.daemon(["--accept", "public.plain-text"])
            try sandbox.drop("good.txt", Array("fine\n".utf8))
            try sandbox.drop("bad.txt", Array("bad\n".utf8))
            try sandbox.drop("noise.bin", [0x00, 0xFF, 0x13, 0x37, 0x00, 0x01, 0x80, 0xFE])
            // good: published, processed; bad: published, quarantined; noise: rejected.
            #expect(try await sandbox.waitForAcknowledged(5))
            let deliveries = sandbox.receiver.deliveries
            Self.expectOneIDPerEventInOrder(deliveries)
            #expect(deliveries.count == 5, "one request per event: \(deliveries.map(\.type))")
            #expect(Set(deliveries.map(\.type)) == [
                "share.published", "share.processed", "share.quarantined", "share.rejected",
            ])
            for delivery in deliveries {
                let share = delivery.payload["share"] as? [String: Any] ?? [:]
                #expect(delivery.payload["id"] as? String == delivery.id)
                #expect(share["status"] as? String == String(delivery.type.dropFirst(6)))
                #expect(share.keys.contains("title") && share["tags"] as? [String] == [])
                #expect(share["text"] == nil)
            }
            let processed = try #require(deliveries.first { $0.type == "share.processed" })
            let attachments = (processed.payload["share"] as? [String: Any])?["attachments"] as? [[String: Any]] ?? []
            #expect(attachments.count == 1)
            #expect(attachments.first?["sha256"] as? String == (try await sha256(ofData: Array("fine\n".utf8))))
            #expect(attachments.first?["bytes"] as? Int == 5)
            #expect(attachments.first?["typeIdentifier"] as? String == "public.plain-text")
            #expect(attachments.first?["fileId"] as? String != nil)
            let listed = try await runSharepipe(["notifications", "ls", "--state", sandbox.state, "--json"])
            #expect(listed.status == 0)
            #expect((try JSONSerialization.jsonObject(with: listed.stdoutData) as? [Any])?.isEmpty == true)
            let status = try await runSharepipe(["status", "--state", sandbox.state, "--json"])
            let counts = (try status.decoded(StatusNotifications.self)).notifications
            #expect(counts.pending == 0 && counts.failed == 0)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit().status == 0)
        }
    }

    /// issue 33 with issue 31: a dropped folder's title and tags reach every payload of its share; its text and
    /// userInfo reach none.
    @Test func aSharesTitleAndTagsAreInEveryPayloadAndItsTextInNone() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start()
            let daemon = try await sandbox.daemon(["--accept", "public.plain-text"])
            // The folder's name is its first tag (issue 31).
            let folder = sandbox.outside + "/trip"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            _ = try writeFile(folder + "/note.txt", Array("fine\n".utf8))
            _ = try writeFile(folder + "/share.json", Array(
                #"{"title": "Harbour at dusk", "tags": ["a", "b"], "text": "secret words", "userInfo": {"k": "v"}}"#
                    .utf8))
            try FileManager.default.moveItem(atPath: folder, toPath: sandbox.inbox + "/trip")
            #expect(try await sandbox.waitForAcknowledged(2))
            let deliveries = sandbox.receiver.deliveries
            Self.expectOneIDPerEventInOrder(deliveries)
            #expect(Set(deliveries.map(\.type)) == ["share.published", "share.processed"])
            for delivery in deliveries {
                let share = delivery.payload["share"] as? [String: Any] ?? [:]
                #expect(share["title"] as? String == "Harbour at dusk", "\(delivery.type)")
                #expect(share["tags"] as? [String] == ["trip", "a", "b"], "\(delivery.type)")
                #expect(share["text"] == nil && share["userInfo"] == nil)
                let body = try JSONSerialization.data(withJSONObject: delivery.payload)
                #expect(!String(decoding: body, as: UTF8.self).contains("secret"))
            }
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit().status == 0)
        }
    }

    @Test func aReceiverAnswering500FiveTimesGetsTheEventOnTheSixth() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start(failPerID: 5)
            let daemon = try await sandbox.daemon()
            try sandbox.drop("one.txt", Array("one\n".utf8))
            #expect(try await sandbox.waitForAcknowledged(2))
            let deliveries = sandbox.receiver.deliveries
            Self.expectOneIDPerEventInOrder(deliveries)
            for id in Set(deliveries.map(\.id)) {
                let statuses = deliveries.filter { $0.id == id }.sorted { $0.start < $1.start }.map(\.status)
                #expect(statuses == [500, 500, 500, 500, 500, 200], "event \(id): \(statuses)")
            }
            #expect(daemon.stderrSoFar.contains("event=notify.attempt_failed"))
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit().status == 0)
        }
    }

    @Test func everyEventArrivesOnceTheReceiverIsBackAfter20Seconds() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            // Its port, then down.
            try await sandbox.receiver.start()
            try await sandbox.receiver.stop()
            let daemon = try await sandbox.daemon()
            for index in 0..<5 { try sandbox.drop("file-\(index).txt", Array("drop \(index)\n".utf8)) }
            try await Task.sleep(for: .seconds(20))
            let pending = try await runSharepipe(["notifications", "ls", "--state", sandbox.state, "--json"])
            let rows = try JSONSerialization.jsonObject(with: pending.stdoutData) as? [[String: Any]] ?? []
            #expect(rows.count == 10, "pending while the receiver is down: \(pending.stdout)")
            #expect(rows.contains { ($0["attempts"] as? Int ?? 0) > 1 }, "tried again while down")
            try await sandbox.receiver.start()
            #expect(try await sandbox.waitForAcknowledged(10, timeout: .seconds(120)))
            Self.expectOneIDPerEventInOrder(sandbox.receiver.deliveries)
            #expect(Set(sandbox.receiver.acknowledged.map(\.id)).count == 10)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit().status == 0)
        }
    }

    /// A share whose processor succeeded just before a kill -9 (its success recorded, its completion not) is
    /// completed by the next start's recovery, which runs before anything else: its `share.processed` is reported
    /// like any other (the outbox's receivers are set before recovery).
    @Test func aShareRecoveryCompletesIsReportedProcessed() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start()
            try sandbox.drop("file-0.txt", Array("drop 0\n".utf8))
            let daemon = [
                "daemon", "--inbox", sandbox.inbox, "--state", sandbox.state, "--oneshot", "--processor", "discard",
                "--notify", sandbox.receiver.url, "--notify-secret", sandbox.secret,
            ]
            let killed = try await runSharepipe(
                daemon, environment: ["SHAREPIPE_CRASH_AFTER": "succeed.record-succeeded"])
            #expect(killed.status == 128 + SIGKILL, "the crash hook did not fire: \(killed.stderr)")
            let again = try await runSharepipe(daemon)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try await sandbox.waitForAcknowledged(2, timeout: .seconds(60)))
            let types = Set(sandbox.receiver.acknowledged.map(\.type))
            #expect(types == ["share.published", "share.processed"], "\(types)")
            Self.expectOneIDPerEventInOrder(sandbox.receiver.deliveries)
        }
    }

    @Test func aDaemonKilledMidDeliveryDeliversEveryEventOnceAfterARestart() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start(delay: 0.05)
            let count = 40
            for index in 0..<count { try sandbox.drop("file-\(index).txt", Array("drop \(index)\n".utf8)) }
            let first = try await sandbox.daemon()
            #expect(try await sandbox.waitForAcknowledged(10))
            first.signal(SIGKILL)
            #expect(try await first.waitForExit().status == 128 + SIGKILL)
            let second = try await sandbox.daemon()
            let all = try await sandbox.waitForAcknowledged(2 * count, timeout: .seconds(240))
            // Once seen in a CI run (not reproduced since): what was left undelivered, and why, for the next one.
            var left = ""
            if !all {
                let pending = try await runSharepipe(["notifications", "ls", "--state", sandbox.state, "--json"])
                let shares = try await runSharepipe(["ls", "--state", sandbox.state])
                left = "pending: \(pending.stdout)\nshares: \(shares.stdout)\(shares.stderr)\n"
                    + "first daemon: \(first.stderrSoFar.suffix(3000))\nsecond: \(second.stderrSoFar.suffix(6000))"
            }
            #expect(all, "\(left)")
            let deliveries = sandbox.receiver.deliveries
            Self.expectOneIDPerEventInOrder(deliveries)
            // A repeat is only an acknowledgement lost to the kill: the same id, at most the lanes' batch in flight.
            let repeats = deliveries.count - Set(deliveries.map(\.id)).count
            #expect(repeats <= 32, "\(repeats) requests repeated")
            let delivered = try await runSharepipe(["notifications", "ls", "--state", sandbox.state, "--json"])
            #expect((try JSONSerialization.jsonObject(with: delivered.stdoutData) as? [Any])?.isEmpty == true)
            second.signal(SIGTERM)
            #expect(try await second.waitForExit().status == 0)
        }
    }

    /// The wall-clock times (seconds since 1970) of a daemon's log lines of `event`, in order.
    static func logTimes(_ log: String, event: String) -> [Double] {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return log.split(separator: "\n").filter { $0.contains("event=\(event) ") }.compactMap { line in
            guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("ts=") }) else { return nil }
            return formatter.date(from: String(field.dropFirst(3)))?.timeIntervalSince1970
        }
    }

    /// When an event was recorded (its payload's `timestamp`), in seconds since 1970.
    static func recordedAt(_ delivery: WebhookReceiver.Delivery) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (delivery.payload["timestamp"] as? String).flatMap(formatter.date(from:))?.timeIntervalSince1970
    }

    /// Session 11: while the daemon processes (one worker, a processor that takes 0.5 s, 4 shares), nothing is
    /// delivered; once the last share is done the daemon is idle and every event arrives, long before the hold.
    @Test func deliveriesWaitUntilTheDaemonIsIdle() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start()
            let daemon = try await sandbox.daemon(["--exec", "sleep 0.5", "--workers", "1", "--notify-hold", "60000"])
            for index in 0..<4 { try sandbox.drop("file-\(index).txt", Array("drop \(index)\n".utf8)) }
            #expect(try await sandbox.waitForAcknowledged(8, timeout: .seconds(50)))
            let processed = Self.logTimes(daemon.stderrSoFar, event: "share.processed")
            try #require(processed.count == 4, "\(daemon.stderrSoFar)")
            let deliveries = sandbox.receiver.deliveries
            Self.expectOneIDPerEventInOrder(deliveries)
            // The log's times have milliseconds; the receiver's are finer.
            let first = deliveries.map(\.start).min() ?? 0
            #expect(first >= processed[3] - 0.002, "delivered \(processed[3] - first) s before the last share was done")
            let last = deliveries.map(\.end).max() ?? 0
            #expect(last - processed[3] < 20, "the events came \(last - processed[3]) s after the daemon went idle")
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit().status == 0)
        }
    }

    /// Session 11: under load longer than the hold (one worker, 1 s per share, 8 shares, `--notify-hold 1000`),
    /// deliveries go out during the burst and no event waits much longer than the hold.
    @Test func aHoldEndsAfterNotifyHoldUnderSustainedLoad() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start()
            let daemon = try await sandbox.daemon(["--exec", "sleep 1", "--workers", "1", "--notify-hold", "1000"])
            for index in 0..<8 { try sandbox.drop("file-\(index).txt", Array("drop \(index)\n".utf8)) }
            #expect(try await sandbox.waitForAcknowledged(16, timeout: .seconds(90)))
            let processed = Self.logTimes(daemon.stderrSoFar, event: "share.processed")
            try #require(processed.count == 8, "\(daemon.stderrSoFar)")
            let deliveries = sandbox.receiver.acknowledged
            Self.expectOneIDPerEventInOrder(sandbox.receiver.deliveries)
            let first = deliveries.map(\.start).min() ?? .infinity
            #expect(first < processed[7], "nothing was delivered while the daemon was busy")
            // Held without a bound, the first events would wait about 8 s for the end of the burst.
            for delivery in deliveries {
                let waited = delivery.start - (Self.recordedAt(delivery) ?? 0)
                #expect(waited < 5, "\(delivery.type) of \(delivery.shareID) waited \(waited) s")
            }
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit().status == 0)
        }
    }

    /// Session 11: `--notify-hold 0` delivers at once, while the daemon is still busy.
    @Test func withoutAHoldEventsArriveDuringTheBurst() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start()
            let daemon = try await sandbox.daemon(["--exec", "sleep 1", "--workers", "1", "--notify-hold", "0"])
            for index in 0..<4 { try sandbox.drop("file-\(index).txt", Array("drop \(index)\n".utf8)) }
            #expect(try await sandbox.waitForAcknowledged(8, timeout: .seconds(60)))
            let processed = Self.logTimes(daemon.stderrSoFar, event: "share.processed")
            try #require(processed.count == 4, "\(daemon.stderrSoFar)")
            let deliveries = sandbox.receiver.acknowledged
            Self.expectOneIDPerEventInOrder(sandbox.receiver.deliveries)
            let during = deliveries.filter { $0.end < processed[3] }
            #expect(during.count >= 4, "\(during.count) events delivered before the last share was done")
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit().status == 0)
        }
    }

    @Test func aSecretFileOthersCanReadIsAUsageError() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            chmod(sandbox.secret, 0o644)
            let result = try await runSharepipe([
                "daemon", "--inbox", sandbox.inbox, "--state", sandbox.state, "--oneshot",
                "--notify", "http://127.0.0.1:9/hook", "--notify-secret", sandbox.secret,
            ])
            #expect(result.status == 2)
            #expect(result.stderr.contains("chmod 600"))
            let malformed = try writeFile(dir + "/malformed", "not-a-secret\n")
            chmod(malformed, 0o600)
            let refused = try await runSharepipe([
                "daemon", "--inbox", sandbox.inbox, "--state", sandbox.state, "--oneshot",
                "--notify", "http://127.0.0.1:9/hook", "--notify-secret", malformed,
            ])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("whsec_"))
        }
    }

    @Test func aOneshotDaemonConfiguredByFileDeliversItsEvents() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start()
            let config = try writeFile(dir + "/config.json", """
                {"notify": ["\(sandbox.receiver.url)"], "notify-secret": "\(sandbox.secret)",
                 "notify-events": ["share.processed"], "processor": "discard"}
                """)
            try sandbox.drop("one.txt", Array("one\n".utf8))
            let result = try await runSharepipe([
                "daemon", "--inbox", sandbox.inbox, "--state", sandbox.state, "--oneshot", "--config", config,
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let deliveries = sandbox.receiver.deliveries
            #expect(deliveries.map(\.type) == ["share.processed"])
            #expect(deliveries.first?.valid == true)
        }
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["SHAREPIPE_TEST_PG"].map { !$0.isEmpty } ?? false))
    func threeDaemonsOnPostgreSQLDeliverEachEventOnceWhenOneIsKilled() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            try await sandbox.receiver.start(delay: 0.02)
            let ledger = [
                "--ledger", try notificationTestDatabase(), "--ledger-lease", "1500", "--notify-timeout", "1000",
            ]
            let count = 60
            var daemons: [SharepipeProcess] = []
            for _ in 0..<3 { daemons.append(try await sandbox.daemon(["--workers", "2"], ledger: ledger)) }
            for index in 0..<count { try sandbox.drop("file-\(index).txt", Array("drop \(index)\n".utf8)) }
            #expect(try await sandbox.waitForAcknowledged(20))
            daemons[0].signal(SIGKILL)
            #expect(try await daemons[0].waitForExit().status == 128 + SIGKILL)
            #expect(try await sandbox.waitForAcknowledged(2 * count, timeout: .seconds(300)))
            let deliveries = sandbox.receiver.deliveries
            Self.expectOneIDPerEventInOrder(deliveries)
            // No event id was being delivered by two daemons at once.
            for (id, requests) in Dictionary(grouping: deliveries, by: \.id) where requests.count > 1 {
                let sorted = requests.sorted { $0.start < $1.start }
                for (earlier, later) in zip(sorted, sorted.dropFirst()) {
                    #expect(later.start >= earlier.end, "event \(id) delivered twice at once")
                }
            }
            for daemon in daemons.dropFirst() { daemon.signal(SIGTERM) }
            for daemon in daemons.dropFirst() { #expect(try await daemon.waitForExit().status == 0) }
        }
    }
    /// LISTEN/NOTIFY: a share another process publishes (`sharepipe share`) is claimed by a daemon at once, where
    /// the daemon's own look at `incoming` comes every 5 s. Prints the claim latencies (published → claimed, both
    /// recorded on this host's clock).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SHAREPIPE_TEST_PG"].map { !$0.isEmpty } ?? false))
    func aShareAnotherProcessPublishesIsClaimedAtOnceThroughNotify() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = try Sandbox(root: dir)
            let database = try notificationTestDatabase()
            let daemon = try SharepipeProcess([
                "daemon", "--inbox", sandbox.inbox, "--state", sandbox.state, "--ledger", database, "--poll", "1000",
                "--processor", "discard",
            ])
            let ready = try await eventually(.seconds(60), every: .milliseconds(50)) {
                daemon.stderrSoFar.contains("event=daemon.ready")
            }
            try #require(ready, "\(daemon.stderrSoFar)")
            let file = try writeFile(dir + "/note.txt", "note\n")
            for _ in 0..<10 {
                let shared = try await runSharepipe(["share", "--state", sandbox.state, "--ledger", database, file])
                #expect(shared.status == 0, "\(shared.stderr)")
            }
            let driver = try PostgresDriver(url: database, setting: "test")
            let claimedAll = try await eventually(.seconds(60), every: .milliseconds(100)) {
                try driver.run("SELECT COUNT(*) FROM events WHERE event = 'claimed'").scalar.int == 10
            }
            #expect(claimedAll)
            let rows = try driver.run(
                """
                SELECT MIN(c.at) - MIN(p.at) FROM events p JOIN events c ON c.share_id = p.share_id
                WHERE p.event = 'published' AND c.event = 'claimed' GROUP BY p.share_id
                """
            ).rows.compactMap { $0[0].integer }.sorted()
            try #require(rows.count == 10)
            print("claim latency after another process's publish (ms), sorted: \(rows)")
            #expect(rows[rows.count / 2] < 1500, "p50 \(rows[rows.count / 2]) ms: the daemon waited for its poll")
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit().status == 0)
        }
    }
}

/// The part of `status --json` these tests read.
private struct StatusNotifications: Decodable {
    struct Counts: Decodable {
        var pending: Int
        var failed: Int
    }

    var notifications: Counts
}

/// A fresh schema on `SHAREPIPE_TEST_PG`, and a URL whose connections use it.
private func notificationTestDatabase() throws -> String {
    let server = try #require(ProcessInfo.processInfo.environment["SHAREPIPE_TEST_PG"])
    let schema = "n_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    try PostgresDriver(url: server, setting: "SHAREPIPE_TEST_PG").run("CREATE SCHEMA \(schema)")
    let separator = server.contains("?") ? "&" : "?"
    return server + separator + "options=-c%20search_path%3D\(schema)"
}

private func sha256(ofData bytes: [UInt8]) async throws -> String {
    let path = NSTemporaryDirectory() + "sharepipe-hash-" + UUID().uuidString
    try writeFile(path, bytes)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await sha256(ofFile: path)
}
