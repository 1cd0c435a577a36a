import SharepipeIngest
import SharepipeLedger
import SharepipeSpool
import SharepipeSystem
/// The daemon's notification parts (issue 33): the notifier's lanes when `--notify` is given, and on PostgreSQL the
/// listener that wakes the consumer and the notifier when another daemon publishes or writes an event.
struct DaemonNotifications: Sendable {
    let notifier: Notifier?
    let listener: PostgresListener?

    /// `--oneshot`: delivers what is due now.
    func deliverDue() {
        notifier?.deliverDue()
    }

    func stop(deadline: Duration) {
        listener?.stop()
        notifier?.stop(deadline: deadline)
    }
}

extension Daemon {
    /// With `--notify`: the notifier, its receivers set as the ledger's outbox targets — before recovery, so that a
    /// share that recovery completes, returns or repairs is reported like any other (a claim that succeeded before a
    /// kill -9 is recorded processed there, and its event was lost when the targets came later).
    func prepareNotifier(spool: Spool) -> Notifier? {
        let settings = configuration.notify
        guard settings.isEnabled else { return nil }
        let made = Notifier(configuration: settings, ledger: spool.ledger, logger: logger)
        spool.ledger.outboxTargets.withLock { targets in
            targets = OutboxTargets(urls: settings.urls, events: settings.events, wake: { made.wake() })
        }
        return made
    }

    /// Starts the notifier's lanes (not with `--oneshot`) and, on PostgreSQL, the listener. The lanes hold their
    /// deliveries while the daemon is busy (`--notify-hold`): an inbox entry being ingested, a share being loaded or
    /// in the lifecycle executor's queues, a share the consumer has claimed, is running or has not looked at yet.
    func startNotifications(
        _ notifier: Notifier?, spool: Spool, consumer: Consumer, queue: IngestQueue
    ) -> DaemonNotifications {
        let settings = configuration.notify
        if let notifier {
            if !configuration.oneshot {
                notifier.start(busy: { !queue.isIdle || spool.isWorking || consumer.isBusy })
            }
            logger.info("notify.ready", [
                ("receivers", .int(Int64(settings.urls.count))), ("lanes", .int(Int64(settings.lanes))),
                ("hold_ms", .int(settings.hold.milliseconds)),
                ("events", .string(settings.events.map(\.rawValue).sorted().joined(separator: ","))),
                ("signed", .string(settings.secret == nil ? "no" : "yes")),
            ])
        }
        var listener: PostgresListener?
        if !configuration.oneshot, let driver = spool.ledger.driver as? PostgresDriver {
            listener = PostgresListener(url: driver.url) { [notifier] in
                consumer.wake()
                notifier?.wake()
            }
            listener?.start()
        }
        return DaemonNotifications(notifier: notifier, listener: listener)
    }
}
