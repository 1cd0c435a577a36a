import Foundation
import SharepipeIngest
import SharepipeSpool
import SharepipeSystem

/// Everything `sharepipe daemon` is told by its flags and config file.
package struct DaemonConfiguration: Sendable {
    /// What happens to a claimed share.
    package enum ProcessorChoice: Sendable, Equatable {
        /// Move copies into `output`, at the places `path` gives (by default `output/<group>/`).
        case store(output: String, path: StorePath = .default)
        /// Run a shell command per copy.
        case exec(command: String, timeout: Duration)
        /// Record and delete.
        case discard
    }

    /// The watched inbox.
    package var inbox = "inbox"
    /// The state directory.
    package var state = Spool.defaultRoot()
    /// Where the ledger lives.
    package var ledger = LedgerLocation.sqlite
    /// The processor.
    package var processor = ProcessorChoice.store(output: "processed")
    /// Loader limits, accept list and policy.
    package var loader = LoaderConfiguration()
    /// Workers, retries, backoff. Every publish of the daemon wakes the consumer, so it only looks at `incoming`
    /// by itself every 5 s (for shares published by other processes, such as `sharepipe share`).
    package var consumer: ConsumerConfiguration = {
        var consumer = ConsumerConfiguration()
        consumer.pollInterval = .seconds(5)
        return consumer
    }()
    /// Quiet window before an inbox entry is judged complete.
    package var settle: Duration = .milliseconds(250)
    /// Poll interval for file systems without inotify; nil uses inotify.
    package var poll: Duration?
    /// Safety rescan interval with inotify.
    package var rescanInterval: Duration = .seconds(60)
    /// Inbox names left alone (shell globs).
    package var ignore: [String] = IgnoreRules.defaultGlobs
    /// Prometheus textfile, replaced every 10 s and on exit.
    package var metricsFile: String?
    /// Ingest and consume what is present, then exit.
    package var oneshot = false
    /// Faults injected into the spool's executor (the crash tests); none in production.
    package var faults: LifecycleFaults?
    /// Shares ingested at the same time.
    package var ingestConcurrency = 64

    /// `ingestConcurrency`, bounded by the descriptor limit: each share in flight holds its inbox directory, its
    /// source, its staging lock and a copy open, and claims waiting for their removal hold theirs.
    var effectiveIngestConcurrency: Int {
        min(ingestConcurrency, max(4, (System.descriptorLimit() - 96) / 8))
    }
    /// How long to wait before trying again an entry that could not be ingested now (spool full, I/O).
    package var deferRetry: Duration = .seconds(5)
    /// How long SIGTERM waits for work in flight.
    package var shutdownDeadline: Duration = .seconds(10)
    /// issue 19: HTTP ingest (`--listen`, `--tokens`, TLS, connection limits); no listeners by default.
    package var http = HTTPConfiguration()

    /// The defaults documented in the README.
    package init() {}
}

extension DaemonConfiguration {
    /// What `daemon.ready` reports, so that one log line answers which inbox, state and output a daemon uses and
    /// what it accepts: paths made absolute (configured paths are not user file names), limits in bytes and ms.
    var readyFields: [(String, Logger.Value)] {
        func absolute(_ path: String) -> Logger.Value {
            guard !path.hasPrefix("/") else { return .string(path) }
            let relative = path.hasPrefix("./") ? String(path.dropFirst(2)) : path
            return .string(FileManager.default.currentDirectoryPath + "/" + relative)
        }
        func milliseconds(_ duration: Duration) -> Logger.Value {
            let (seconds, attoseconds) = duration.components
            return .int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        }
        var fields: [(String, Logger.Value)] = [("inbox", absolute(inbox)), ("state", absolute(state))]
        switch processor {
        case .store(let output, let path):
            fields += [("processor", "store"), ("output", absolute(output)), ("store_path", .string(path.template))]
        case .exec(_, let timeout):
            fields += [("processor", "exec"), ("exec_timeout_ms", milliseconds(timeout))]
        case .discard:
            fields += [("processor", "discard")]
        }
        fields += [
            ("accept", .string(loader.accept.joined(separator: ","))), ("policy", .string(loader.policy.rawValue)),
            ("max_file_size", .int(loader.maxFileSize)), ("max_share_size", .int(loader.maxShareSize)),
            ("max_attachments", .int(Int64(loader.maxAttachments))),
            ("load_timeout_ms", milliseconds(loader.loadTimeout)), ("settle_ms", milliseconds(settle)),
            ("workers", .int(Int64(consumer.workers))), ("max_attempts", .int(Int64(consumer.maxAttempts))),
        ]
        if let poll { fields.append(("poll_ms", milliseconds(poll))) }
        return fields
    }
}
