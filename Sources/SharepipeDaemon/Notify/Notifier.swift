import Foundation
import SharepipeLedger
import SharepipeSystem
import Synchronization

/// Delivers the outbox (issue 33): `lanes` threads, each taking a few due rows at a time under a lease, POSTing
/// them one after the other (signed, with the row's event id), marking the acknowledged ones delivered and putting
/// the others off with backoff. Lanes are threads of their own because a request blocks: a receiver that hangs holds
/// one lane until the request's timeout, never the daemon. Woken by this process's transitions (the ledger's outbox
/// writes), by other daemons' NOTIFY on PostgreSQL, and otherwise every `pollInterval` or when the next row is due.
///
/// Deliveries wait out a burst (`hold`, session 11): while the daemon is ingesting or processing, a lane holds its
/// take until the daemon is idle or the hold has lasted `configuration.hold`; once it has, the lanes deliver until
/// nothing is due, then the hold starts over. On a small machine the ingest goes first, and a row waits at most the
/// hold and the deliveries before it, even under sustained load.
final class Notifier: Sendable {
    let configuration: NotifyConfiguration
    private let ledger: LedgerStore
    private let logger: Logger?
    private let bell = NSCondition()
    /// Guarded by `bell`: a wake not yet seen by every lane (a generation count), stopping, lanes running.
    nonisolated(unsafe) private var generation = 0
    nonisolated(unsafe) private var stopping = false
    nonisolated(unsafe) private var running = 0
    /// Guarded by `bell`: when the current hold began (monotonic ns), and whether it ran out: then the lanes deliver
    /// until nothing is due before they hold again.
    nonisolated(unsafe) private var holdStarted: UInt64?
    nonisolated(unsafe) private var draining = false
    /// Guarded by `bell`: the daemon was idle at the last look of any lane, having been found idle by two looks
    /// `holdCheck` apart; while it stays so, one look is enough.
    nonisolated(unsafe) private var idle = false
    /// Deliveries made and failed attempts, for the metrics.
    let delivered = Atomic<Int>(0)
    let failedAttempts = Atomic<Int>(0)

    /// Acknowledged rows marked delivered together.
    static let markEvery = 8

    init(configuration: NotifyConfiguration, ledger: LedgerStore, logger: Logger?) {
        self.configuration = configuration
        self.ledger = ledger
        self.logger = logger
    }

    /// Starts the lanes; rows leased by a dead process of this host are given back first. `busy` tells whether the
    /// daemon is ingesting or processing now (in memory only: it is asked every `holdCheck` while a lane holds).
    func start(busy: @escaping @Sendable () -> Bool) {
        releaseDeadLeases()
        bell.lock()
        running = configuration.lanes
        bell.unlock()
        for index in 0..<configuration.lanes {
            Thread { [self] in
                System.nameCurrentThread("sp-notify-\(index)")
                // Deliveries are background work: in a burst on a busy machine the ingest and the consumer go
                // first, and the lanes catch up as soon as they leave a core free.
                System.lowerCurrentThreadPriority(to: 10)
                lane(busy: busy)
                bell.lock()
                running -= 1
                bell.broadcast()
                bell.unlock()
            }.start()
        }
    }

    /// Wakes a lane to look at the outbox now (one: a lane that finds a full batch wakes the next).
    func wake() {
        bell.lock()
        generation &+= 1
        bell.signal()
        bell.unlock()
    }

    /// Stops the lanes: each finishes the request it is making (bounded by its timeout) and gives back the rows it
    /// took and did not try. Waits up to `deadline` for them.
    func stop(deadline: Duration) {
        bell.lock()
        stopping = true
        bell.broadcast()
        let until = Date(timeIntervalSinceNow: Double(deadline.milliseconds) / 1000)
        while running > 0 && bell.wait(until: until) {}
        bell.unlock()
    }

    /// Delivers what is due now, in this thread, until nothing is (the daemon's `--oneshot`). Rows put off by a
    /// failure are left for the next run.
    func deliverDue() {
        releaseDeadLeases()
        let client = WebhookClient()
        while (try? deliverOnce(client)) ?? 0 > 0 {}
    }

    private var isStopping: Bool {
        bell.lock()
        defer { bell.unlock() }
        return stopping
    }

    private func lane(busy: () -> Bool) {
        let client = WebhookClient()
        while !isStopping {
            waitOutBurst(busy: busy)
            bell.lock()
            let seen = generation
            bell.unlock()
            let count: Int
            do {
                count = try deliverOnce(client)
            } catch {
                let failure = error as? ShareError ?? ShareError(.io, "\(error)")
                logger?.warning("notify.ledger_failed", [("code", .string(failure.code.rawValue))])
                count = 0
            }
            if count >= configuration.batch { wake() }
            if count > 0 { continue }
            // Nothing is due: a drain after a hold ends here, and the next take while the daemon is busy holds again.
            bell.lock()
            draining = false
            bell.unlock()
            var wait = configuration.pollInterval
            if let due = try? ledger.timeUntilNextNotification(urls: configuration.urls) {
                wait = min(wait, max(due, .milliseconds(5)))
            }
            bell.lock()
            let until = Date(timeIntervalSinceNow: Double(wait.milliseconds) / 1000)
            while !stopping && generation == seen && bell.wait(until: until) {}
            let woken = !stopping && generation != seen
            bell.unlock()
            if woken { Thread.sleep(forTimeInterval: Double(configuration.gather.milliseconds) / 1000) }
        }
    }

    /// Returns when the lane may take: at once with no hold, while the lanes drain after a hold ran out, or when
    /// stopping; otherwise once the daemon is idle — found so by two looks `holdCheck` apart, or by one look when the
    /// last look of any lane found it idle too (the hold then starts over with the next busy look) — or once the hold
    /// shared by the lanes has lasted `configuration.hold` (the lanes then drain).
    private func waitOutBurst(busy: () -> Bool) {
        guard configuration.hold > .zero else { return }
        let check = UInt64(configuration.holdCheck.milliseconds) * 1_000_000
        var idleSince: UInt64?
        while true {
            // Asked outside the bell: the probe takes the spool's and the consumer's locks, whose holders may wake us.
            let isBusy = busy()
            bell.lock()
            if stopping || draining {
                bell.unlock()
                return
            }
            // Read under the lock: a hold another lane started is never later than this lane's now.
            let now = System.monotonicNanoseconds()
            if isBusy {
                idle = false
                idleSince = nil
            } else if idle || idleSince.map({ now - $0 >= check }) == true {
                idle = true
                holdStarted = nil
                bell.unlock()
                return
            } else if idleSince == nil {
                idleSince = now
            }
            let started = holdStarted ?? now
            if .nanoseconds(now - started) >= configuration.hold {
                draining = true
                holdStarted = nil
                bell.broadcast()
                bell.unlock()
                return
            }
            holdStarted = started
            // Woken early by a new row or by another lane's drain: looked at again at once.
            _ = bell.wait(until: Date(timeIntervalSinceNow: Double(check) / 1e9))
            bell.unlock()
        }
    }

    /// Takes a batch and delivers it; returns how many rows it took.
    private func deliverOnce(_ client: WebhookClient) throws -> Int {
        let leaseNanoseconds = UInt64(configuration.lease.milliseconds) * 1_000_000
        // Counted from before the take: the lease starts no earlier than that.
        var leaseEnds = System.monotonicNanoseconds() + leaseNanoseconds
        let rows = try ledger.takeDueNotifications(
            urls: configuration.urls, limit: configuration.batch, lease: configuration.lease)
        var acknowledged: [(seq: Int64, status: Int)] = []
        let needed = UInt64((configuration.timeout + .seconds(5)).milliseconds) * 1_000_000
        var held = Set(rows.map(\.seq))
        for (index, row) in rows.enumerated() {
            if isStopping {
                try? ledger.releaseNotifications(rows[index...].map(\.seq))
                break
            }
            // Less than one request's time left on the lease: extended first, so that no other lane can take a
            // row while this one may still be sending it; a row another lane took meanwhile is left to it.
            if System.monotonicNanoseconds() + needed > leaseEnds {
                let renewing = System.monotonicNanoseconds()
                held = try ledger.renewNotificationLeases(rows[index...].map(\.seq), lease: configuration.lease)
                leaseEnds = renewing + leaseNanoseconds
            }
            guard held.contains(row.seq) else { continue }
            let body = row.body ?? "{}"
            let timestamp = System.wallClockNanoseconds() / 1_000_000_000
            var headers = [("webhook-id", row.id), ("webhook-timestamp", String(timestamp))]
            if let secret = configuration.secret {
                headers.append(("webhook-signature", secret.signature(id: row.id, timestamp: timestamp, body: body)))
            }
            let outcome = client.post(
                url: row.url, body: body, headers: headers, connectTimeout: configuration.connectTimeout,
                timeout: configuration.timeout)
            let fields: [(String, Logger.Value)] = [
                ("event_id", .string(row.id)), ("share", .string(row.shareID)), ("type", .string(row.type)),
                ("attempt", .int(Int64(row.attempts + 1))),
            ]
            switch outcome {
            case .status(let status) where outcome.delivered:
                acknowledged.append((row.seq, status))
                logger?.debug("notify.delivered", fields + [("status", .int(Int64(status)))])
                // Marked every few rows: a daemon killed mid-batch repeats at most these to its receivers.
                if acknowledged.count >= Self.markEvery {
                    try ledger.markNotificationsDelivered(acknowledged)
                    delivered.add(acknowledged.count, ordering: .relaxed)
                    acknowledged.removeAll()
                }
            case .status(let status):
                try fail(row, status: status, error: "HTTP \(status)", fields: fields)
            case .failed(let reason):
                try fail(row, status: 0, error: reason, fields: fields)
            }
        }
        try ledger.markNotificationsDelivered(acknowledged)
        delivered.add(acknowledged.count, ordering: .relaxed)
        return rows.count
    }

    private func fail(_ row: OutboxRow, status: Int, error: String, fields: [(String, Logger.Value)]) throws {
        let delay = configuration.delay(afterAttempts: row.attempts + 1)
        try ledger.markNotificationFailed(
            seq: row.seq, status: status, error: error, delay: delay, maxAge: configuration.maxAge)
        failedAttempts.add(1, ordering: .relaxed)
        logger?.warning("notify.attempt_failed", fields + [
            ("status", .int(Int64(status))), ("reason", .string(error)), ("retry_in_ms", .int(delay.milliseconds)),
        ])
    }

    /// Gives back rows whose lease is held by a process of this host and boot that is gone (a daemon killed and
    /// started again), instead of waiting for their lease to run out.
    private func releaseDeadLeases() {
        guard let holders = try? ledger.notificationLeaseHolders() else { return }
        let mine = LedgerStore.currentOwner().split(separator: ":")
        for holder in holders {
            let parts = holder.split(separator: ":")
            guard parts.count == 3, mine.count == 3, parts[0] == mine[0], parts[2] == mine[2],
                let pid = Int32(parts[1]), pid != System.processID, !System.processExists(pid)
            else { continue }
            try? ledger.releaseNotifications(heldBy: holder)
        }
    }
}
