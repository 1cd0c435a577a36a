import Synchronization

/// The HTTP server's counters: uploads in flight (bodies being received, finished bodies being ingested) and
/// responses by status, for the metrics file and the systemd status line.
package final class HTTPMetrics: Sendable {
    private struct State {
        var inFlight = 0
        var responses: [Int: Int] = [:]
    }

    private let state = Mutex(State())

    func uploadStarted() { state.withLock { $0.inFlight += 1 } }
    func uploadEnded() { state.withLock { $0.inFlight -= 1 } }
    func responded(_ status: Int) { state.withLock { $0.responses[status, default: 0] += 1 } }

    var uploadsInFlight: Int { state.withLock { $0.inFlight } }

    /// Prometheus samples: `(name, type, help, [(labels, value)])`.
    var samples: [(String, String, String, [(String, String)])] {
        state.withLock { state in
            [
                ("http_uploads_in_flight", "gauge", "HTTP uploads being received or ingested.",
                    [("", String(state.inFlight))]),
                ("http_responses_total", "counter", "HTTP responses, by status.",
                    state.responses.keys.sorted().map { ("{status=\"\($0)\"}", String(state.responses[$0]!)) }),
            ]
        }
    }
}
