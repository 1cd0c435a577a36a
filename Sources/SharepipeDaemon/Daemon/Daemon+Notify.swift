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
    func startNotifications(spool: Spool, consumer: Consumer) -> DaemonNotifications {
        let settings = configuration.notify
        var notifier: Notifier?
        if settings.isEnabled {
            let made = Notifier(configuration: settings, ledger: spool.ledger, logger: logger)
            spool.ledger.outboxTargets.withLock { targets in
                targets = OutboxTargets(urls: settings.urls, events: settings.events, wake: { made.wake() })
            }
            if !configuration.oneshot { made.start() }
            logger.info("notify.ready", [
                ("receivers", .int(Int64(settings.urls.count))), ("lanes", .int(Int64(settings.lanes))),
                ("events", .string(settings.events.map(\.rawValue).sorted().joined(separator: ","))),
                ("signed", .string(settings.secret == nil ? "no" : "yes")),
            ])
            notifier = made
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
