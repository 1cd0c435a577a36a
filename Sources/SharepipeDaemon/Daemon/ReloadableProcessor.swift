import Synchronization

/// A processor that can be swapped on SIGHUP; shares already claimed finish with the processor they started with.
final class ReloadableProcessor: Processor {
    private let current: Mutex<any Processor>

    init(_ processor: any Processor) {
        current = Mutex(processor)
    }

    func replace(with processor: any Processor) {
        current.withLock { $0 = processor }
    }

    func process(_ share: ClaimedShare) async throws {
        let processor = current.withLock { $0 }
        try await processor.process(share)
    }
}
