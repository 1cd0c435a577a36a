import Dispatch
import Glibc
import Synchronization

/// The signals the rest of the package (and the `sharepipe` executable) sends or handles, by name.
package enum Signal {
    /// `SIGTERM`
    package static let terminate = SIGTERM
    /// `SIGINT`
    package static let interrupt = SIGINT
    /// `SIGHUP`
    package static let hangUp = SIGHUP
    /// `SIGKILL`
    package static let kill = SIGKILL

    /// Sets the signal's disposition to `SIG_IGN`, so that only a dispatch source made for it sees it. `signal(2)`
    /// fails only for a number that is not a signal, or SIGKILL and SIGSTOP, which no caller passes; it is never
    /// interrupted.
    package static func ignore(_ number: Int32) {
        _ = signal(number, SIG_IGN)
    }

    /// Gives the signal its default action back (`SIG_DFL`); fails only as `ignore(_:)` does.
    package static func restoreDefault(_ number: Int32) {
        _ = signal(number, SIG_DFL)
    }
}

extension System {
    /// Delivers the given signals as a stream instead of their default action (which is then ignored), for as long
    /// as the stream is alive; when it ends, each signal gets back the disposition it had before.
    package static func signals(_ numbers: [Int32]) -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let queue = DispatchQueue(label: "sharepipe.signals")
        var sources: [any DispatchSourceSignal] = []
        for number in numbers {
            let previous = signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { continuation.yield(number) }
            // Once libdispatch has let go of the signal, it gets back the disposition it had before.
            source.setCancelHandler { signal(number, previous) }
            source.resume()
            sources.append(source)
        }
        System.waitUntilHandled(numbers)
        let retained = SignalSources(sources: sources)
        continuation.onTermination = { _ in retained.cancel() }
        return stream
    }
}

private final class SignalSources: @unchecked Sendable {
    let sources: [any DispatchSourceSignal]

    init(sources: [any DispatchSourceSignal]) {
        self.sources = sources
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}


/// Runs `body` in a task that the first of `numbers` (SIGINT, SIGTERM) cancels instead of ending the process, so
/// that work in flight can be rolled back and reported. The first signal also puts the signals' previous
/// dispositions back, so a second one does what it would have done without this function (by default: end the
/// process at once). They are put back when `body` returns too. A signal that was ignored when this was called
/// (a background job's SIGINT) stays ignored.
///
/// `onSignal` runs on a private queue when the first signal arrives, before the task is cancelled. Like `signals(_:)`
/// this relies on libdispatch's signal sources, which register asynchronously: a signal in the first moments, before
/// the registration is done, is ignored.
package func withCancellationOnSignals<T: Sendable>(
    _ numbers: [Int32] = [SIGINT, SIGTERM], onSignal: @escaping @Sendable (Int32) -> Void = { _ in },
    _ body: @escaping @Sendable () async -> T
) async -> T {
    // The handlers are in place before the body starts, so no signal it could cause or wait for is missed.
    let target = PendingCancellation<T>()
    let dispositions = SavedDispositions(numbers.filter { !System.isIgnored($0) })
    let queue = DispatchQueue(label: "sharepipe.signals.cancel")
    let sources = dispositions.numbers.map { number -> any DispatchSourceSignal in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
        source.setEventHandler {
            guard dispositions.restore() else { return }
            onSignal(number)
            target.cancel()
        }
        source.resume()
        return source
    }
    System.waitUntilHandled(dispositions.numbers)
    let task = Task { await body() }
    target.hold(task)
    let result = await task.value
    dispositions.restore()
    for source in sources { source.cancel() }
    return result
}

extension System {
    /// Whether the signal's disposition is SIG_IGN.
    /// Waits (a second at most) until libdispatch has installed its handler for each signal: it registers a signal
    /// source asynchronously, and until then a signal set to SIG_IGN would be lost.
    static func waitUntilHandled(_ numbers: [Int32]) {
        let deadline = monotonicNanoseconds() + 1_000_000_000
        while numbers.contains(where: isIgnored) && monotonicNanoseconds() < deadline { usleep(200) }
    }

    static func isIgnored(_ number: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(number, nil, &current) == 0, let handler = current.__sigaction_handler.sa_handler else {
            return false
        }
        return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}

/// A task to cancel, which a signal may ask for before the task exists.
private final class PendingCancellation<T: Sendable>: Sendable {
    private let state = Mutex<(task: Task<T, Never>?, requested: Bool)>((nil, false))

    func hold(_ task: Task<T, Never>) {
        let requested = state.withLock { state in
            state.task = task
            return state.requested
        }
        if requested { task.cancel() }
    }

    func cancel() {
        state.withLock { state in
            state.requested = true
            return state.task
        }?.cancel()
    }
}

/// Signal dispositions as they were before a scope changed them, put back once.
private final class SavedDispositions: Sendable {
    let numbers: [Int32]
    private let saved: Mutex<[sigaction]?>

    init(_ numbers: [Int32]) {
        self.numbers = numbers
        saved = Mutex(numbers.map { number in
            var previous = sigaction()
            sigaction(number, nil, &previous)
            return previous
        })
    }

    /// Puts the saved dispositions back; false when they already were.
    @discardableResult
    func restore() -> Bool {
        saved.withLock { saved in
            guard var dispositions = saved else { return false }
            for index in numbers.indices { sigaction(numbers[index], &dispositions[index], nil) }
            saved = nil
            return true
        }
    }
}
