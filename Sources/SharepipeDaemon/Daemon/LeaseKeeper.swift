import SharepipeSpool
import SharepipeSystem

/// Claims across hosts, for a ledger with leases: every third of the lease, picks the claims whose lease expired
/// (their daemon stopped renewing them: its host died, or it was killed) and runs the spool's recovery, which moves
/// back to `incoming` every claim whose `flock` is free and leaves alone those a live process still holds. It also
/// runs recovery once after the ledger reconnected to its server, for claims that could not be recorded while the
/// server was away.
struct LeaseKeeper: Sendable {
    let spool: Spool
    let consumer: Consumer
    let logger: Logger
    /// How often to look: a third of the lease.
    let interval: Duration
    /// The time the turns are measured in.
    let clock: any SharepipeClock

    init?(spool: Spool, consumer: Consumer, logger: Logger, clock: any SharepipeClock = SystemClock()) {
        guard let lease = spool.ledger.leaseDuration else { return nil }
        self.spool = spool
        self.consumer = consumer
        self.logger = logger
        self.clock = clock
        interval = max(lease / 3, .milliseconds(100))
    }

    /// Runs until cancelled; ledger failures are logged and tried again at the next turn.
    func run() async throws {
        var reconnections = spool.ledger.reconnections
        while true {
            try await clock.sleep(for: interval)
            do {
                let expired = try spool.ledger.pickExpiredClaims(limit: 256)
                let current = spool.ledger.reconnections
                guard !expired.isEmpty || current != reconnections else { continue }
                let report = try spool.recover()
                reconnections = current
                logger.info("lease.recovered", [
                    ("expired", .int(Int64(expired.count))),
                    ("claims_returned", .int(Int64(report.returnedToIncoming))),
                    ("live_claims", .int(Int64(report.liveClaims))),
                ])
                if report.returnedToIncoming > 0 { consumer.wake() }
            } catch let error as ShareError {
                logger.warning("lease.check_failed", [("code", .string(error.code.rawValue))])
            }
        }
    }
}

extension LeaseKeeper: Service {}
