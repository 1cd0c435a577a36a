import Testing

@testable import SharepipeIngest

/// The connection state machine without a socket or a clock: every deadline and every suspension is an event in
/// and an action out.
@Suite struct HTTPConnectionTests {
    static let second: UInt64 = 1_000_000_000
    static let limits = HTTPConnection.Limits(
        idleTimeout: 60 * second, headerTimeout: 10 * second, minBodyRate: 1024, rateWindow: 20 * second)

    func opened(at time: UInt64 = 0) -> HTTPConnection {
        HTTPConnection(limits: Self.limits, openedAt: time)
    }

    @Test func aHeadThatTricklesIsCutWith408AtTheHeaderTimeout() {
        var connection = opened()
        #expect(connection.handle(.requestBegun(at: 1 * Self.second)).isEmpty)
        #expect(connection.handle(.timer(at: 10 * Self.second)).isEmpty)
        #expect(connection.handle(.timer(at: 11 * Self.second)) == [.close(status: 408)])
        #expect(connection.state == .closed)
        #expect(connection.handle(.head(at: 12 * Self.second, next: .receive)).isEmpty, "a closed connection stays so")
    }

    @Test func anIdleConnectionIsClosedWithoutAnAnswerAfterTheIdleTimeout() {
        var connection = opened(at: 5 * Self.second)
        #expect(connection.handle(.timer(at: 64 * Self.second)).isEmpty)
        #expect(connection.handle(.timer(at: 65 * Self.second)) == [.close(status: nil)])
    }

    @Test func aKeptAliveConnectionWaitsForItsNextRequestFromTheLastResponse() {
        var connection = opened()
        _ = connection.handle(.requestBegun(at: 0))
        #expect(connection.handle(.head(at: 0, next: .receive)).isEmpty)
        #expect(connection.handle(.bodyEnd(work: false)) == [.respond])
        _ = connection.handle(.requestCompleted(at: 50 * Self.second))
        #expect(connection.state == .idle(since: 50 * Self.second))
        #expect(connection.handle(.timer(at: 100 * Self.second)).isEmpty)
        _ = connection.handle(.requestBegun(at: 100 * Self.second))
        #expect(connection.handle(.timer(at: 109 * Self.second)).isEmpty)
        #expect(connection.handle(.timer(at: 110 * Self.second)) == [.close(status: 408)])
    }

    @Test func aBodyBelowTheMinimumRateOverAWindowIsCutOnATimerOrAChunk() {
        var slow = opened()
        _ = slow.handle(.head(at: 0, next: .receive))
        #expect(slow.handle(.bodyChunk(bytes: 10_000, at: 5 * Self.second)).isEmpty)
        #expect(slow.handle(.timer(at: 19 * Self.second)).isEmpty)
        #expect(slow.handle(.timer(at: 20 * Self.second)) == [.close(status: 408)])

        var trickle = opened()
        _ = trickle.handle(.head(at: 0, next: .receive))
        #expect(trickle.handle(.bodyChunk(bytes: 20_000, at: 21 * Self.second)) == [.close(status: 408)])
    }

    @Test func aBodyAtTheRateStartsAFreshWindowEachTime() {
        var connection = opened()
        _ = connection.handle(.head(at: 0, next: .receive))
        #expect(connection.handle(.bodyChunk(bytes: 30_000, at: 20 * Self.second)).isEmpty)
        #expect(connection.state == .body(.init(windowStart: 20 * Self.second)))
        #expect(connection.handle(.bodyChunk(bytes: 10_000, at: 30 * Self.second)).isEmpty)
        #expect(connection.handle(.timer(at: 40 * Self.second)) == [.close(status: 408)])
    }

    @Test func noMinimumRateMeansABodyIsNeverCut() {
        var limits = Self.limits
        limits.minBodyRate = 0
        var connection = HTTPConnection(limits: limits, openedAt: 0)
        _ = connection.handle(.head(at: 0, next: .receive))
        #expect(connection.handle(.timer(at: 1000 * Self.second)).isEmpty)
    }

    @Test func anAdmissionSuspendsRunsWorkAndResumesIntoTheBody() {
        var connection = opened()
        _ = connection.handle(.requestBegun(at: 0))
        #expect(connection.handle(.head(at: 0, next: .admit)) == [.suspend, .startWork])
        #expect(connection.state == .admitting)
        #expect(connection.handle(.timer(at: 1000 * Self.second)).isEmpty, "no deadline runs while suspended")
        #expect(connection.handle(.workFinished) == [.resume])
        #expect(connection.handle(.resumed(at: 1001 * Self.second, next: .receive)).isEmpty)
        #expect(connection.state == .body(.init(windowStart: 1001 * Self.second)))
        #expect(connection.handle(.bodyEnd(work: true)) == [.suspend, .startWork])
        #expect(connection.handle(.timer(at: 5000 * Self.second)).isEmpty)
        #expect(connection.handle(.workFinished) == [.resume])
        #expect(connection.handle(.resumed(at: 5000 * Self.second, next: .answer)) == [.respond])
        #expect(connection.state == .responding)
        #expect(connection.handle(.timer(at: 9000 * Self.second)).isEmpty, "sending the answer has no deadline here")
    }

    @Test func aRefusedAdmissionAnswersBeforeTheBody() {
        var connection = opened()
        _ = connection.handle(.head(at: 0, next: .admit))
        _ = connection.handle(.workFinished)
        #expect(connection.handle(.resumed(at: 1, next: .answer)) == [.respond])
        #expect(connection.state == .responding)
    }

    @Test func anAnswerDecidedFromTheHeadGoesOutAtOnce() {
        var connection = opened()
        #expect(connection.handle(.head(at: 0, next: .answer)) == [.respond])
    }

    @Test func aClosedConnectionIgnoresEverythingAfter() {
        var connection = opened()
        _ = connection.handle(.head(at: 0, next: .admit))
        #expect(connection.handle(.closed).isEmpty)
        #expect(connection.handle(.workFinished).isEmpty)
        #expect(connection.handle(.requestCompleted(at: 1)).isEmpty)
        #expect(connection.state == .closed)
    }
}
