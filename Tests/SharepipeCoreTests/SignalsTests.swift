import Glibc
import Testing
@testable import SharepipeCore

@Suite(.serialized) struct SignalsTests {
    /// The disposition of a signal, read without changing it.
    func disposition(_ number: Int32) -> UInt {
        var current = sigaction()
        sigaction(number, nil, &current)
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: UInt.self)
    }

    @Test(.timeLimit(.minutes(1))) func aSignalStreamRestoresTheDispositionItChanged() async throws {
        let before = disposition(SIGUSR2)
        do {
            let stream = System.signals([SIGUSR2])
            #expect(disposition(SIGUSR2) != before)
            _ = stream
        }
        // The stream and its sources are gone: the process's own disposition is back.
        try await Task.sleep(for: .milliseconds(50))
        #expect(disposition(SIGUSR2) == before)
    }
}
