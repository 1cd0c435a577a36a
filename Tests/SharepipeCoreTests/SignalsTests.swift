import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// Signal dispositions are process-wide, so these run one at a time, on SIGURG, whose default action is to ignore.
@Suite(.serialized, .timeLimit(.minutes(5))) struct SignalsTests {
    @Test func firstSignalCancelsTheBodyAndPutsThePreviousDispositionBack() async throws {
        signal(SIGURG, SIG_DFL)
        let (cancelled, defaultAfterSignal) = await withCancellationOnSignals([SIGURG]) {
            // libdispatch registers its signal source asynchronously: signal until the handler has run.
            let deadline = ContinuousClock.now + .seconds(20)
            while !Task.isCancelled && ContinuousClock.now < deadline {
                kill(getpid(), SIGURG)
                await Task.yield()
            }
            return (Task.isCancelled, isDefault(SIGURG))
        }
        // The first signal cancels the body and gives the default action back at once, so a second one acts as if
        // nothing had been installed.
        #expect(cancelled)
        #expect(defaultAfterSignal)
        #expect(isDefault(SIGURG))
    }

    @Test func aSignalStreamRestoresTheDispositionItChanged() async throws {
        signal(SIGUSR2, SIG_DFL)
        do {
            let stream = System.signals([SIGUSR2])
            #expect(!isDefault(SIGUSR2))
            _ = stream
        }
        // The stream and its sources are gone: once libdispatch has let go, the default action is back.
        #expect(try await eventually(.seconds(5)) { isDefault(SIGUSR2) })
    }

    @Test func dispositionComesBackWhenTheBodyReturnsWithoutASignal() async {
        signal(SIGURG, SIG_DFL)
        let cancelled = await withCancellationOnSignals([SIGURG]) { Task.isCancelled }
        #expect(!cancelled)
        #expect(isDefault(SIGURG))
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

    @Test func theCommandLinesIgnoreAndRestoreDefaultSetTheDisposition() {
        signal(SIGURG, SIG_DFL)
        Signal.ignore(SIGURG)
        #expect(System.isIgnored(SIGURG))
        Signal.restoreDefault(SIGURG)
        #expect(isDefault(SIGURG))
    }
}

/// Whether the signal's disposition is SIG_DFL.
private func isDefault(_ number: Int32) -> Bool {
    var current = sigaction()
    guard sigaction(number, nil, &current) == 0 else { return false }
    guard let handler = current.__sigaction_handler.sa_handler else { return true }
    return unsafeBitCast(handler, to: Int.self) == 0
}
