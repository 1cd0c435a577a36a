import Foundation
import SharepipeLedger
import SharepipeSystem
import Synchronization

/// Counters for the Prometheus textfile collector and the systemd status line, fed by the daemon's parts.
package final class Metrics: Sendable {
    /// Upper bounds of the drop-to-processed latency histogram, in seconds.
    static let latencyBuckets: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

    private struct State {
        var ingested = 0
        var rejected: [String: Int] = [:]
        var processed = 0
        var failed: [String: Int] = [:]
        var quarantined: [String: Int] = [:]
        var bytesIngested: Int64 = 0
        var queueDepth = 0
        var latencyCounts = [Int](repeating: 0, count: Metrics.latencyBuckets.count)
        var latencyCount = 0
        var latencySum = 0.0
        /// The last ledger event already counted; nil until the first refresh.
        var ledgerSequence: Int64?
        /// When the oldest share still staged, published or claimed was created, as of the last refresh.
        var oldestPendingCreatedAt: Date?
    }

    private let state = Mutex(State())
    private let copies: CopiesInFlight
    /// issue 19: the HTTP server's counters (zero without --listen).
    package let http = HTTPMetrics()

    /// Empty counters; the copies in flight are those of `copies` (this process's).
    package init(copies: CopiesInFlight = .shared) {
        self.copies = copies
    }

    func shareIngested(bytes: Int64) {
        state.withLock {
            $0.ingested += 1
            $0.bytesIngested += bytes
        }
    }

    func sourceRejected(code: ShareError.Code) {
        state.withLock { $0.rejected[code.rawValue, default: 0] += 1 }
    }

    func shareProcessed(latencySeconds: Double?) {
        state.withLock { state in
            state.processed += 1
            guard let latency = latencySeconds else { return }
            state.latencyCount += 1
            state.latencySum += latency
            for (index, bound) in Self.latencyBuckets.enumerated() where latency <= bound {
                state.latencyCounts[index] += 1
            }
        }
    }

    func shareFailed(code: ShareError.Code) {
        state.withLock { $0.failed[code.rawValue, default: 0] += 1 }
    }

    func shareQuarantined(code: ShareError.Code) {
        state.withLock { $0.quarantined[code.rawValue, default: 0] += 1 }
    }

    /// Counts the consumer's processed, failed and quarantined events recorded since the last refresh, and notes
    /// the oldest pending share. The first refresh only remembers where the ledger is, so a restart does not count
    /// history again.
    package func refresh(from ledger: LedgerStore) throws {
        let oldest = try ledger.status(now: LedgerClock.now()).oldestPendingCreatedAt
        state.withLock { $0.oldestPendingCreatedAt = oldest }
        guard let after = state.withLock({ $0.ledgerSequence }) else {
            let last = try ledger.lastEventSequence()
            state.withLock { $0.ledgerSequence = last }
            return
        }
        var sequence = after
        while true {
            let events = try ledger.metricEvents(after: sequence, limit: 10_000)
            for event in events {
                switch event.event {
                case .processed: shareProcessed(latencySeconds: event.latencySeconds)
                case .failed: shareFailed(code: event.code ?? .processorFailed)
                case .quarantined: shareQuarantined(code: event.code ?? .processorFailed)
                default: break
                }
            }
            guard let last = events.last else { break }
            sequence = last.sequence
        }
        state.withLock { $0.ledgerSequence = sequence }
    }

    package func setQueueDepth(_ depth: Int) {
        state.withLock { $0.queueDepth = depth }
    }

    /// The systemd `STATUS=` line: counters, then the copies in flight (bytes done / total, when there are any)
    /// and the age of the oldest pending share (when there is one).
    package var statusLine: String {
        statusLine(copies: copies.summary, now: Date())
    }

    func statusLine(copies: CopiesInFlight.Summary, now: Date) -> String {
        state.withLock { state in
            let failed = state.failed.values.reduce(0, +)
            let rejected = state.rejected.values.reduce(0, +)
            var line = "ingested \(state.ingested), processed \(state.processed), pending \(state.queueDepth), "
                + "rejected \(rejected), failed \(failed)"
            if copies.count > 0 {
                let done = Self.mebibytes(copies.bytesDone)
                line += ", copying \(copies.count) (\(done) / \(Self.mebibytes(copies.bytesTotal)))"
            }
            if let oldest = state.oldestPendingCreatedAt {
                line += ", oldest pending \(Self.age(from: oldest, to: now))"
            }
            // issue 19: HTTP ingest
            let uploads = http.uploadsInFlight
            if uploads > 0 { line += ", uploads \(uploads)" }
            return line
        }
    }

    /// A byte count in MiB with one decimal, for the status line.
    private static func mebibytes(_ bytes: Int64) -> String {
        String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }

    /// Whole seconds, minutes or hours between two dates, for the status line: `42s`, `5m`, `3h`.
    private static func age(from start: Date, to now: Date) -> String {
        let seconds = max(0, Int(now.timeIntervalSince(start)))
        switch seconds {
        case ..<120: return "\(seconds)s"
        case ..<7200: return "\(seconds / 60)m"
        default: return "\(seconds / 3600)h"
        }
    }

    /// The Prometheus text exposition format.
    var prometheusText: String {
        prometheusText(copies: copies.summary, now: Date())
    }

    func prometheusText(copies: CopiesInFlight.Summary, now: Date) -> String {
        state.withLock { state in
            var lines: [String] = []
            func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
                lines.append("# HELP sharepipe_\(name) \(help)")
                lines.append("# TYPE sharepipe_\(name) \(type)")
                for (labels, value) in samples { lines.append("sharepipe_\(name)\(labels) \(value)") }
            }
            func byCode(_ counts: [String: Int]) -> [(String, String)] {
                counts.keys.sorted().map { ("{code=\"\($0)\"}", String(counts[$0]!)) }
            }
            metric("shares_ingested_total", "counter", "Shares published from the inbox.", [("", String(state.ingested))])
            metric("ingested_bytes_total", "counter", "Bytes copied into published shares.", [("", String(state.bytesIngested))])
            metric("sources_rejected_total", "counter", "Inbox entries moved to .rejected, by code.", byCode(state.rejected))
            metric("shares_processed_total", "counter", "Shares processed and deleted.", [("", String(state.processed))])
            metric("shares_failed_total", "counter", "Processing attempts that failed, by code.", byCode(state.failed))
            metric("shares_quarantined_total", "counter", "Shares quarantined, by code.", byCode(state.quarantined))
            metric("queue_depth", "gauge", "Shares published and not yet processed.", [("", String(state.queueDepth))])
            metric("copies_in_flight", "gauge", "Attachments being copied into staging.", [("", String(copies.count))])
            metric("copy_bytes_done", "gauge", "Bytes copied so far by the copies in flight.",
                [("", String(copies.bytesDone))])
            metric("copy_bytes_total", "gauge", "Bytes the copies in flight will have copied.",
                [("", String(copies.bytesTotal))])
            let age = state.oldestPendingCreatedAt.map { max(0, now.timeIntervalSince($0)) } ?? 0
            metric("oldest_pending_age_seconds", "gauge", "Age of the oldest share not yet processed (0: none).",
                [("", String(format: "%.3f", age))])
            var buckets: [(String, String)] = []
            for (index, bound) in Self.latencyBuckets.enumerated() {
                buckets.append(("_bucket{le=\"\(bound)\"}", String(state.latencyCounts[index])))
            }
            buckets.append(("_bucket{le=\"+Inf\"}", String(state.latencyCount)))
            buckets.append(("_sum", String(state.latencySum)))
            buckets.append(("_count", String(state.latencyCount)))
            metric("drop_to_processed_seconds", "histogram", "From the drop's last write to processed.", buckets)
            // issue 19: HTTP ingest
            for (name, type, help, samples) in http.samples { metric(name, type, help, samples) }
            return lines.joined(separator: "\n") + "\n"
        }
    }

    /// Replaces the metrics file atomically.
    package func write(to path: String) throws {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let name = path.contains("/") ? String(path[path.index(after: path.lastIndex(of: "/")!)...]) : path
        try System.writeAtomically(Array(prometheusText.utf8), to: directory.isEmpty ? "/" : directory, name: name, mode: 0o644)
    }
}
