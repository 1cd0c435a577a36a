import Dispatch
import Glibc

extension System {
    /// Delivers the given signals as a stream instead of their default action (which is then ignored), for as long
    /// as the stream is alive; when it ends, each signal gets back the disposition it had before.
    static func signals(_ numbers: [Int32]) -> AsyncStream<Int32> {
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

