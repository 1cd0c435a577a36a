import Glibc
import Testing
@testable import SharepipeCore

/// Signal dispositions are process-wide, so these run one at a time, on SIGURG, whose default action is to ignore.
@Suite(.serialized, .timeLimit(.minutes(1))) struct SignalsTests {
    @Test func firstSignalCancelsTheBodyAndPutsThePreviousDispositionBack() async throws {
        signal(SIGURG, SIG_DFL)
        let (handledBefore, cancelled, ignoredAfterSignal) = await withCancellationOnSignals([SIGURG]) {
            let handledBefore = System.isIgnored(SIGURG)
            kill(getpid(), SIGURG)
            while !Task.isCancelled { await Task.yield() }
            return (handledBefore, true, System.isIgnored(SIGURG))
        }
        // While the body runs the signal is taken from its default action; the first one cancels the body and
        // gives the default action back, so a second one would act as if nothing had been installed.
        #expect(handledBefore)
        #expect(cancelled)
        #expect(!ignoredAfterSignal)
        #expect(!System.isIgnored(SIGURG))
    }

    @Test func dispositionComesBackWhenTheBodyReturnsWithoutASignal() async {
        signal(SIGURG, SIG_DFL)
        let cancelled = await withCancellationOnSignals([SIGURG]) { Task.isCancelled }
        #expect(!cancelled)
        #expect(!System.isIgnored(SIGURG))
    }

    @Test func signalIgnoredBeforehandStaysIgnoredAndCancelsNothing() async {
        signal(SIGURG, SIG_IGN)
        defer { signal(SIGURG, SIG_DFL) }
        let notified = await withCancellationOnSignals([SIGURG], onSignal: { _ in Issue.record("signal handled") }) {
            kill(getpid(), SIGURG)
            return Task.isCancelled
        }
        #expect(!notified)
        #expect(System.isIgnored(SIGURG))
    }
}
