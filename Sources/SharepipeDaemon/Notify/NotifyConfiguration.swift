import Foundation
import SharepipeLedger
import SharepipeSystem

/// `--notify` and its companions (issue 33): where lifecycle events are POSTed, how they are signed, which are sent
/// and for how long a delivery is tried.
package struct NotifyConfiguration: Sendable {
    /// Receivers, each sent every event of `events` (an outbox row per event and URL).
    package var urls: [String] = []
    /// The signing secret (`--notify-secret`); nil sends unsigned requests.
    package var secret: WebhookSecret?
    /// The events sent; all by default.
    package var events: Set<NotificationType> = Set(NotificationType.allCases)
    /// How long a delivery is tried before it is kept as failed.
    package var maxAge: Duration = .seconds(86_400)
    /// The first retry's delay; each further one doubles it, up to `maxBackoff`, with jitter.
    package var backoff: Duration = .seconds(5)
    /// The longest delay between two attempts.
    package var maxBackoff: Duration = .seconds(3600)
    /// One request's limits: connecting, and the whole exchange.
    package var connectTimeout: Duration = .seconds(10)
    package var timeout: Duration = .seconds(30)
    /// Delivery lanes: requests in flight at once; a receiver that hangs holds one.
    package var lanes = 4
    /// Rows a lane takes at once.
    package var batch = 32
    /// How often a lane looks at the outbox without being woken (events of other daemons without NOTIFY).
    package var pollInterval: Duration = .seconds(5)
    /// How long deliveries wait at most while the daemon is ingesting or processing (`--notify-hold`); zero delivers
    /// at once.
    package var hold: Duration = .milliseconds(2000)

    package init() {}

    /// Whether anything is to be sent.
    package var isEnabled: Bool { !urls.isEmpty }

    /// How long a lane holds the rows it took: two requests at their limit and some margin, renewed before a request
    /// that would start with less than one request's time left. A lane of a daemon that died gives its rows back
    /// to the others after this long.
    var lease: Duration { timeout * 2 + .seconds(10) }
    /// How long a lane woken by a new row waits for more to come before it takes them: a burst of shares is taken
    /// in batches (one durable commit each) instead of a transaction per share.
    var gather: Duration { .milliseconds(20) }
    /// How often a holding lane asks whether the daemon is still busy; it is idle once two looks this far apart
    /// found it so (a share between two stages, published and not yet claimed, is not idleness).
    var holdCheck: Duration { .milliseconds(10) }

    /// The delay before the attempt after `attempts` failed ones: `backoff` doubled per attempt, at most
    /// `maxBackoff`, times a random factor in [0.5, 1) so that receivers coming back are not hit all at once.
    func delay(afterAttempts attempts: Int) -> Duration {
        let base = Double(backoff.milliseconds) * pow(2, Double(max(0, attempts - 1)))
        let capped = min(base, Double(maxBackoff.milliseconds))
        return .milliseconds(Int64(capped * Double.random(in: 0.5..<1)))
    }

}
