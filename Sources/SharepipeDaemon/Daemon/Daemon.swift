import SharepipeIngest
import SharepipeSpool
import SharepipeSystem
import Synchronization

/// `sharepipe daemon`: recovery, then the watcher, the ingester and the consumer as long-running parts in one task
/// group, under the systemd notify protocol. SIGTERM/SIGINT stop it (work in flight finishes or rolls back, exit
/// 0); SIGHUP reloads limits, accept list and processor.
package struct Daemon: Sendable {
    /// Builds a fresh configuration on SIGHUP (re-reading the config file); nil disables reloading.
    package typealias Reload = @Sendable () throws -> DaemonConfiguration
    /// Decides whether a share activates the extension.
    package typealias Activation = ShareActivation

    let configuration: DaemonConfiguration
    let registry: TypeRegistry
    let logger: Logger
    let notifier: ServiceNotifier
    let activation: Activation?
    let reload: Reload?
    /// issue 19: the body of `GET /v1/shares/ID` (the `show --json` report) and the share's sourceApp.
    package typealias ShareTimeline = @Sendable (_ spool: Spool, _ shareID: String) throws
        -> (json: [UInt8], sourceApp: String?)
    let timeline: ShareTimeline?

    /// A daemon; nothing runs until `run()`.
    package init(
        configuration: DaemonConfiguration, registry: TypeRegistry = .standard, logger: Logger = Logger(),
        environment: [String: String] = [:], activation: Activation? = nil, reload: Reload? = nil,
        timeline: ShareTimeline? = nil
    ) {
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        self.notifier = ServiceNotifier(environment: environment)
        self.activation = activation
        self.reload = reload
        self.timeline = timeline
        self.environment = environment
    }

    /// The environment (systemd's LISTEN_FDS for the HTTP listeners).
    let environment: [String: String]

    /// The processor a configuration names.
    package static func makeProcessor(_ choice: DaemonConfiguration.ProcessorChoice, registry: TypeRegistry)
        -> any Processor
    {
        switch choice {
        case .store(let output, let path): StoreProcessor(output: output, path: path, registry: registry)
        case .exec(let command, let timeout): ExecProcessor(command: command, timeout: timeout)
        case .discard: DiscardProcessor()
        }
    }

    /// Runs until stopped (or, with `oneshot`, until what was present is done); returns the exit status.
    package func run() async throws -> Int32 {
        System.raiseDescriptorLimit()
        let spool = try Spool(
            root: configuration.state, ledger: configuration.ledger, logger: logger, faults: configuration.faults)
        let notifier = prepareNotifier(spool: spool)
        let report = try spool.recover()
        logger.info("daemon.recovered", [
            ("staging_removed", .int(Int64(report.stagingRemoved))), ("claims_returned", .int(Int64(report.returnedToIncoming))),
        ])
        try System.makeDirectories(configuration.inbox, mode: 0o755)
        // --- issue 22: the file systems' capabilities, logged once; the store's temporaries a crash left ---
        logCapabilities(spool)
        if case .store(let output, let path) = configuration.processor {
            let swept = StoreProcessor(output: output, path: path, registry: registry).removeLeftTemporaries()
            if swept > 0 { logger.info("store.temporaries_removed", [("count", .int(Int64(swept)))]) }
        }
        // --- end issue 22 ---
        let removed = try InboxRecovery(spool: spool).recover(configuration.inbox)
        if !removed.isEmpty {
            logger.info("daemon.exactly_once", [("sources_removed", .int(Int64(removed.count)))])
        }
        // The magic database loads now, so that a broken one fails the start and the first drop is not slower.
        try Magic.shared.check()
        let metrics = Metrics()
        try metrics.refresh(from: spool.ledger)
        let processor = ReloadableProcessor(Self.makeProcessor(configuration.processor, registry: registry))
        var consumerConfiguration = configuration.consumer
        consumerConfiguration.logger = logger
        let consumer = Consumer(spool: spool, processor: processor, configuration: consumerConfiguration)
        // Every share this process publishes (inbox, HTTP, tus) wakes the consumer, which otherwise looks at
        // `incoming` only every few seconds.
        spool.onPublish { consumer.wake() }
        let queue = IngestQueue()
        // issue 33: the outbox's delivery lanes, and the other daemons' wake-ups on PostgreSQL.
        let notifications = startNotifications(notifier, spool: spool, consumer: consumer, queue: queue)
        defer { notifications.stop(deadline: configuration.shutdownDeadline) }
        let live = LiveSettings(loader: configuration.loader)
        let threads = (0..<Self.ingestThreads).map { Lane(name: "sp-ingest-\($0)") }
        for thread in threads { thread.start() }
        defer { for thread in threads { thread.stop() } }
        let context = Context(
            spool: spool, metrics: metrics, consumer: consumer, processor: processor, live: live,
            queue: queue, threads: threads)
        if configuration.oneshot {
            let status = try await runOnce(context)
            notifications.deliverDue()
            return status
        }
        // issue 19: HTTP ingest; listeners are bound now, so a bad --listen fails the start.
        var server: HTTPServer?
        if !configuration.http.listen.isEmpty || configuration.http.socketActivation {
            server = try HTTPServer(
                configuration: configuration.http, spool: spool, registry: registry, logger: logger,
                metrics: metrics.http, loaderConfiguration: { live.loader }, activation: activation,
                timeline: timeline, environment: environment)
        }
        return try await runForever(context, server: server)
    }

    /// Threads the ingest runs on: opening, sniffing and copying block, so they stay off the cooperative pool. Many
    /// shares are in flight on them at once (`ingestConcurrency`), so that the publisher finds batches to commit.
    static let ingestThreads = 4

    /// What the parts share.
    struct Context: Sendable {
        let spool: Spool
        let metrics: Metrics
        let consumer: Consumer
        let processor: ReloadableProcessor
        let live: LiveSettings
        let queue: IngestQueue
        let threads: [Lane]

        /// The thread for the n-th ingest task.
        func thread(_ index: Int) -> Lane { threads[index % threads.count] }
    }

    private func ingester(_ context: Context) -> InboxIngester {
        InboxIngester(
            inbox: configuration.inbox,
            loader: ShareLoader(spool: context.spool, registry: registry, configuration: context.live.loader),
            ignore: IgnoreRules(globs: configuration.ignore), logger: logger, metrics: context.metrics,
            activation: activation)
    }

    private func runOnce(_ context: Context) async throws -> Int32 {
        let ignore = IgnoreRules(globs: configuration.ignore)
        let names = try System.listDirectory(configuration.inbox,
        repairingNames: true).filter { !ignore.ignores($0) }.sorted()
        let concurrency = configuration.effectiveIngestConcurrency
        // Counted as they come: a backlog of 100,000 files keeps no outcome per file.
        var published = 0, rejected = 0, deferred = 0
        func count(_ outcome: InboxIngester.Outcome) {
            switch outcome {
            case .published: published += 1
            case .rejected: rejected += 1
            case .deferred: deferred += 1
            case .busy, .vanished, .leftInPlace: break
            }
        }
        // A backlog larger than the spool may hold is taken a part at a time, each consumed before the next is
        // ingested: it is all done in one run instead of deferred with ERR_SPOOL_FULL past --max-pending-shares.
        let part = max(1, context.live.loader.maxPendingShares / 2)
        var summary = ConsumeSummary()
        // An empty inbox is one empty part: what is already in `incoming` is still drained.
        for start in stride(from: 0, to: max(names.count, 1), by: part) {
            let last = start + part >= names.count
            await withTaskGroup(of: InboxIngester.Outcome.self) { group in
                var running = 0
                for index in start..<min(start + part, names.count) {
                    let name = names[index]
                    guard let status = try? System.lstatIfPresent(configuration.inbox + "/" + name) else { continue }
                    if running >= concurrency, let outcome = await group.next() {
                        count(outcome)
                        running -= 1
                    }
                    running += 1
                    let arrival = context.spool.expectPublish()
                    group.addTask(executorPreference: context.thread(index)) {
                        await ingester(context).ingest(InboxCandidate(name: name, status: status), arrival: arrival)
                    }
                }
                for await outcome in group { count(outcome) }
            }
            // After the last part nothing will take a directory the drain empties.
            if last { context.spool.recycler.stopKeeping() }
            summary.add(try await context.consumer.drain())
        }
        try await refresh(context)
        logger.info("daemon.oneshot_done", [
            ("published", .int(Int64(published))), ("rejected", .int(Int64(rejected))),
            ("deferred", .int(Int64(deferred))), ("processed", .int(Int64(summary.processed))),
            ("quarantined", .int(Int64(summary.quarantined))),
        ])
        if deferred > 0 || summary.quarantined > 0 { return 1 }
        if rejected > 0 { return published > 0 ? 3 : 4 }
        return 0
    }

    private func runForever(_ context: Context, server: HTTPServer?) async throws -> Int32 {
        let signals = System.signals([Signal.terminate, Signal.interrupt, Signal.hangUp])
        let watcher = InboxWatcher(
            inbox: configuration.inbox, settle: configuration.settle, poll: configuration.poll,
            rescanInterval: configuration.rescanInterval, ignore: IgnoreRules(globs: configuration.ignore))
        let mode = configuration.poll == nil ? "inotify" : "poll"
        let ready: [(String, Logger.Value)] = [("mode", .string(mode))] + configuration.readyFields
        let candidates = watcher.candidates { [notifier, logger] in
            // Recovery is done and the first scan of the inbox is in the stream: ready.
            notifier.send("READY=1", "STATUS=watching")
            logger.info("daemon.ready", ready)
        }
        // The loops that do blocking file-system and ledger work run on the daemon's own threads, never on the
        // cooperative pool. The first to end decides: a signal stops everything; a watcher failure is an error.
        var services = ServiceGroup()
        services.add("ingest") { try await ingestLoop(candidates, context) }
        services.add("retry", on: context.thread(1)) { try await retryLoop(context) }
        services.add("consume", on: context.thread(2)) { try await consumeLoop(context) }
        services.add("status", on: context.thread(3)) { try await statusLoop(context) }
        services.add("sweep", on: context.thread(3)) { try await sweepLoop(context) }
        if let server {
            services.add("http") { try await server.run() }
        }
        if let keeper = LeaseKeeper(spool: context.spool, consumer: context.consumer, logger: logger) {
            services.add("lease", on: context.thread(0), keeper)
        }
        if let interval = notifier.watchdogInterval {
            services.add("watchdog") {
                while !Task.isCancelled {
                    notifier.send("WATCHDOG=1")
                    try await Task.sleep(for: interval)
                }
            }
        }
        services.add("signals") {
            for await number in signals {
                if number == Signal.hangUp {
                    reloadConfiguration(context)
                } else {
                    logger.info("daemon.stopping", [("signal", .int(Int64(number)))])
                    return
                }
            }
        }
        let stopped = try await services.run() == "signals"
        notifier.send("STOPPING=1")
        try? await refresh(context)
        context.spool.recycler.removeKept()
        logger.info("daemon.stopped", [("clean", .string(stopped ? "yes" : "no"))])
        return 0
    }

    /// Ingests candidates as the watcher reports them, a few at a time.
    private func ingestLoop(_ candidates: AsyncThrowingStream<InboxCandidate, Error>, _ context: Context) async throws {
        let concurrency = configuration.effectiveIngestConcurrency
        try await withThrowingTaskGroup(of: Void.self) { group in
            var running = 0
            var started = 0
            for try await candidate in candidates {
                if running >= concurrency {
                    try await group.next()
                    running -= 1
                }
                running += 1
                started += 1
                // Announced as it is queued: the tasks of a burst run one after another on few threads, and the
                // publish batch the first of them joins waits for the rest.
                let arrival = context.spool.expectPublish()
                group.addTask(executorPreference: context.thread(started)) {
                    await handle(candidate, arrival: arrival, context)
                }
            }
        }
        throw InboxWatcher.inboxGone
    }

    private func handle(_ candidate: InboxCandidate, arrival: LaneArrival? = nil, _ context: Context) async {
        guard context.queue.begin(candidate.name) else { return }
        let outcome = await ingester(context).ingest(candidate, arrival: arrival)
        context.queue.end(candidate.name, deferred: outcome.isDeferred, retryAfter: configuration.deferRetry)
    }

    /// Runs the consumer; a spool or ledger failure (a full disk, say) pauses it instead of ending the daemon: after
    /// the retry interval, dead claims go back to `incoming` and consuming starts again.
    private func consumeLoop(_ context: Context) async throws {
        while true {
            do {
                try await context.consumer.run()
                return
            } catch let error as ShareError {
                logger.error("consumer.paused", [
                    ("code", .string(error.code.rawValue)), ("message", .string(error.message)),
                ])
                try await Task.sleep(for: configuration.deferRetry)
                do {
                    let report = try context.spool.recover()
                    logger.info("consumer.resumed", [("claims_returned", .int(Int64(report.returnedToIncoming)))])
                } catch {
                    logger.error("consumer.recovery_failed", [("message", .string("\(error)"))])
                }
            }
        }
    }

    /// Tries again the entries that could not be ingested (spool full, I/O) once their retry time comes; asleep
    /// while nothing waits.
    private func retryLoop(_ context: Context) async throws {
        while true {
            if let wait = context.queue.timeUntilNextDue() {
                try await Task.sleep(for: wait)
            } else {
                await context.queue.deferred.wait(upTo: .seconds(3600))
                try Task.checkCancellation()
                continue
            }
            for name in context.queue.due() {
                guard let status = try? System.lstatIfPresent(configuration.inbox + "/" + name) else { continue }
                await handle(InboxCandidate(name: name, status: status), context)
            }
        }
    }

    /// How often a running daemon looks for the work of dead processes on its state directory.
    static let sweepInterval: Duration = .seconds(30)

    /// Every 30 s: recovery, which touches only staging directories and claims whose lock is free — those of a
    /// loader or claimer that died (another daemon on the same state, killed) — so their shares are finished or
    /// sent back to `incoming` by the living, not left until a restart.
    private func sweepLoop(_ context: Context) async throws {
        while true {
            try await Task.sleep(for: Self.sweepInterval)
            do {
                let report = try context.spool.recover()
                if report.stagingRemoved + report.returnedToIncoming + report.completed + report.rolledForward
                    + report.repaired > 0
                {
                    logger.info("daemon.swept", [
                        ("staging_removed", .int(Int64(report.stagingRemoved))),
                        ("claims_returned", .int(Int64(report.returnedToIncoming))),
                        ("completed", .int(Int64(report.completed))), ("repaired", .int(Int64(report.repaired))),
                    ])
                    context.consumer.wake()
                }
            } catch {
                let failure = error as? ShareError ?? ShareError(.io, "\(error)")
                logger.warning("daemon.sweep_failed", [("code", .string(failure.code.rawValue))])
            }
        }
    }

    /// Every 10 s: counters from the ledger, the metrics file, the systemd status line.
    private func statusLoop(_ context: Context) async throws {
        while true {
            try await refresh(context)
            try await Task.sleep(for: .seconds(10))
        }
    }

    private func refresh(_ context: Context) async throws {
        context.metrics.setQueueDepth((try? context.spool.shareIDs(in: .incoming).count) ?? 0)
        try? context.metrics.refresh(from: context.spool.ledger)
        if let path = configuration.metricsFile {
            do {
                try context.metrics.write(to: path)
            } catch {
                let failure = error as? ShareError ?? ShareError(.io, "\(error)")
                logger.warning("metrics.write_failed", [
                    ("code", .string(failure.code.rawValue)), ("path", .string(path)),
                    ("message", .string(failure.message)),
                ])
            }
        }
        notifier.send("STATUS=" + context.metrics.statusLine)
    }

    private func reloadConfiguration(_ context: Context) {
        guard let reload else {
            logger.warning("daemon.reload_unavailable")
            return
        }
        do {
            let fresh = try reload()
            var changes: [(String, Logger.Value)] = []
            if fresh.loader.accept != context.live.loader.accept {
                changes.append(("accept", .string(fresh.loader.accept.joined(separator: ","))))
            }
            if fresh.loader.maxFileSize != context.live.loader.maxFileSize {
                changes.append(("max_file_size", .int(fresh.loader.maxFileSize)))
            }
            if fresh.loader.maxShareSize != context.live.loader.maxShareSize {
                changes.append(("max_share_size", .int(fresh.loader.maxShareSize)))
            }
            if fresh.processor != configuration.processor {
                changes.append(("processor", .string("\(fresh.processor)".prefix(while: { $0 != "(" }).description)))
            }
            context.live.loader = fresh.loader
            context.processor.replace(with: Self.makeProcessor(fresh.processor, registry: registry))
            logger.info("daemon.reloaded", changes)
        } catch {
            logger.error("daemon.reload_failed", [("message", .string("\(error)"))])
        }
    }
}

extension InboxIngester.Outcome {
    /// Left in place to be tried again: deferred, or locked by another daemon (which, if it stops before
    /// finishing, leaves it to us).
    var isDeferred: Bool {
        switch self {
        case .deferred, .busy: true
        default: false
        }
    }
}

/// Settings SIGHUP may change while the daemon runs.
final class LiveSettings: Sendable {
    private let state: Mutex<LoaderConfiguration>

    init(loader: LoaderConfiguration) {
        state = Mutex(loader)
    }

    var loader: LoaderConfiguration {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}

/// Which inbox entries are being ingested, and which wait to be tried again.
final class IngestQueue: Sendable {
    private struct State {
        var inFlight: Set<String> = []
        var deferred: [String: UInt64] = [:]
    }

    private let state = Mutex(State())
    /// Rung when an entry is deferred, so the retry loop can sleep while nothing waits.
    let deferred = Doorbell()

    /// Whether no entry is being ingested.
    var isIdle: Bool { state.withLock { $0.inFlight.isEmpty } }

    /// Claims a name for ingesting; false when it is already in flight.
    func begin(_ name: String) -> Bool {
        state.withLock { state in
            guard !state.inFlight.contains(name) else { return false }
            state.inFlight.insert(name)
            state.deferred[name] = nil
            return true
        }
    }

    func end(_ name: String, deferred: Bool, retryAfter: Duration) {
        state.withLock { state in
            state.inFlight.remove(name)
            if deferred {
                let (seconds, attoseconds) = retryAfter.components
                state.deferred[name] = System.monotonicNanoseconds() + UInt64(seconds) * 1_000_000_000
                    + UInt64(attoseconds / 1_000_000_000)
            }
        }
        if deferred { self.deferred.ring() }
    }

    /// How long until the first deferred entry is due (zero when one is), or nil when none waits.
    func timeUntilNextDue() -> Duration? {
        let now = System.monotonicNanoseconds()
        return state.withLock { state in
            state.deferred.values.min().map { .nanoseconds(Int64($0 > now ? $0 - now : 0)) }
        }
    }

    /// Deferred names whose retry time has come, taken off the list (a retry that is deferred again re-enters it).
    func due() -> [String] {
        let now = System.monotonicNanoseconds()
        return state.withLock { state in
            let names = state.deferred.filter { $0.value <= now }.map(\.key).sorted()
            for name in names { state.deferred[name] = nil }
            return names
        }
    }
}

// --- issue 22 ---
extension Daemon {
    /// Logs what the state's, the inbox's and the output's file systems honour (`filesystem.capabilities`, one line
    /// each) and, once, a state file system whose capacity is unknown (`--min-free` cannot apply there).
    func logCapabilities(_ spool: Spool) {
        var locations = [("state", configuration.state), ("inbox", configuration.inbox)]
        if case .store(let output, _) = configuration.processor {
            try? System.makeDirectories(output, mode: 0o755)
            locations.append(("output", output))
        }
        for (location, path) in locations {
            do {
                let capabilities = location == "state" ? spool.capabilities : try FileSystemCapabilities.probeOnce(path)
                logger.info("filesystem.capabilities", capabilities.logFields(location: location))
            } catch {
                logger.error("filesystem.probe_failed", [
                    ("location", .string(location)), ("code", .string((error as? ShareError)?.code.rawValue ?? "ERR_IO")),
                ])
            }
        }
        if !spool.capabilities.capacityKnown {
            logger.info("spool.capacity_unknown", [("min_free", .string("not applied"))])
        }
    }
}
