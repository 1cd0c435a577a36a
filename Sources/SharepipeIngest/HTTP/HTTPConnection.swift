/// One connection of the HTTP server as a pure state machine (STYLE 11): events in (a request begins, its head is
/// complete, a piece of its body, its end, work finished, the connection resumed, a timer tick, the request
/// completed), actions out (respond, suspend, start work, resume, close). The server library's adapter performs
/// the actions; nothing here reads a clock or a socket, so every deadline is testable without either.
///
/// The deadlines (SPEC "Connections"): a connection with no request begun is closed after `idleTimeout` (a new
/// connection, or a kept-alive one between requests); a request's head must be complete within `headerTimeout`
/// of its request line; a body is measured in windows of `rateWindow` and cut off (408) when a window received
/// less than `minBodyRate` per second. While work runs for the request (admission, ingest) the connection is
/// suspended: it reads nothing and no deadline runs.
struct HTTPConnection: Sendable, Equatable {
    /// The deadlines, in nanoseconds of a monotonic clock.
    struct Limits: Sendable, Equatable {
        /// `--connection-timeout`: how long a connection may sit with no request begun.
        var idleTimeout: UInt64
        /// `--header-timeout`: from a request's first line to its complete head.
        var headerTimeout: UInt64
        /// `--min-body-rate`, bytes per second (0: no minimum).
        var minBodyRate: Int64
        /// How long a body is measured before its rate is judged.
        var rateWindow: UInt64 = 20_000_000_000
    }

    /// A body's progress in the current measuring window.
    struct BodyMeter: Sendable, Equatable {
        var windowStart: UInt64
        var windowBytes: Int64 = 0
    }

    enum State: Sendable, Equatable {
        /// No request begun since `since` (the connection opened, or the last response was sent).
        case idle(since: UInt64)
        /// A request line arrived at `since`; its head is not complete yet.
        case head(since: UInt64)
        /// The head is in; the request is admitted (idempotency, capacity) off the I/O thread, suspended.
        case admitting
        /// Receiving the body.
        case body(BodyMeter)
        /// The body is in; its work (ingest) runs off the I/O thread, suspended.
        case working
        /// The response is queued; sending it.
        case responding
        /// Closed, by the peer or by a deadline.
        case closed
    }

    /// How a request goes on once its head (or its admission) is decided, as the adapter found.
    enum Next: Sendable, Equatable {
        /// Answer now; a body on its way is not read.
        case answer
        /// Admit it off the I/O thread first.
        case admit
        /// Read the body.
        case receive
    }

    enum Event: Sendable, Equatable {
        case requestBegun(at: UInt64)
        case head(at: UInt64, next: Next)
        case bodyChunk(bytes: Int, at: UInt64)
        /// The body ended; `work`: the answer needs work off the I/O thread.
        case bodyEnd(work: Bool)
        /// Work off the I/O thread finished (from a worker thread).
        case workFinished
        /// The adapter was called again after a resume; `next` says how an admitted request goes on.
        case resumed(at: UInt64, next: Next)
        case timer(at: UInt64)
        /// The response was sent (or the request given up): the connection waits for the next request.
        case requestCompleted(at: UInt64)
        case closed
    }

    enum Action: Sendable, Equatable {
        /// Queue the request's answer.
        case respond
        /// Stop reading the connection.
        case suspend
        /// Start the request's work on the server's threads.
        case startWork
        /// Resume the connection (from a worker thread).
        case resume
        /// Close the connection; with a status, tell the client first (408: too slow).
        case close(status: Int?)
    }

    let limits: Limits
    private(set) var state: State

    init(limits: Limits, openedAt: UInt64) {
        self.limits = limits
        state = .idle(since: openedAt)
    }

    mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.closed, _):
            return []
        case (_, .closed):
            state = .closed
            return []
        case (.idle, .requestBegun(let now)):
            state = .head(since: now)
            return []
        case (.idle, .head(let now, let next)), (.head, .head(let now, let next)):
            return proceed(next, at: now)
        case (.admitting, .workFinished), (.working, .workFinished):
            return [.resume]
        case (.admitting, .resumed(let now, let next)):
            return proceed(next == .admit ? .answer : next, at: now)
        case (.working, .resumed):
            state = .responding
            return [.respond]
        case (.body(var meter), .bodyChunk(let count, let now)):
            meter.windowBytes += Int64(count)
            return measure(meter, at: now)
        case (.body, .bodyEnd(let work)):
            state = work ? .working : .responding
            return work ? [.suspend, .startWork] : [.respond]
        case (.body(let meter), .timer(let now)):
            return measure(meter, at: now)
        case (.idle(let since), .timer(let now)):
            return expired(since, limits.idleTimeout, at: now) ? cut(status: nil) : []
        case (.head(let since), .timer(let now)):
            return expired(since, limits.headerTimeout, at: now) ? cut(status: 408) : []
        case (_, .requestCompleted(let now)):
            state = .idle(since: now)
            return []
        default:
            // Events that do not apply in a state (a timer while suspended or responding, a second request line
            // while one is open) change nothing.
            return []
        }
    }

    private mutating func proceed(_ next: Next, at now: UInt64) -> [Action] {
        switch next {
        case .answer:
            state = .responding
            return [.respond]
        case .admit:
            state = .admitting
            return [.suspend, .startWork]
        case .receive:
            state = .body(BodyMeter(windowStart: now))
            return []
        }
    }

    /// A window of `rateWindow` that received less than `minBodyRate` per second ends the body; a window that
    /// received enough starts the next.
    private mutating func measure(_ meter: BodyMeter, at now: UInt64) -> [Action] {
        var meter = meter
        if limits.minBodyRate > 0, expired(meter.windowStart, limits.rateWindow, at: now) {
            let seconds = Double(now - meter.windowStart) / 1_000_000_000
            if Double(meter.windowBytes) < Double(limits.minBodyRate) * seconds { return cut(status: 408) }
            meter = BodyMeter(windowStart: now)
        }
        state = .body(meter)
        return []
    }

    private func expired(_ since: UInt64, _ limit: UInt64, at now: UInt64) -> Bool {
        now >= since && now - since >= limit
    }

    private mutating func cut(status: Int?) -> [Action] {
        state = .closed
        return [.close(status: status)]
    }
}
