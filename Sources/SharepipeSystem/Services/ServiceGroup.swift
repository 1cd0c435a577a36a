/// Runs services together, as swift-service-lifecycle's `ServiceGroup` does: they start in the order they were added,
/// each on its own executor when it has one; the first to end — returning (a stop signal's service returns) or
/// throwing — ends the group. The others are then cancelled one at a time, the last started first, each awaited
/// before the next, so a service never outlives one that started before it. `run` returns the name of the service
/// that ended first, or throws its error; what the others throw while they are stopped is part of stopping.
package struct ServiceGroup: Sendable {
    private struct Entry: Sendable {
        let name: String
        let executor: (any TaskExecutor)?
        let service: any Service
    }

    private var entries: [Entry] = []

    package init() {}

    /// Adds a service, started after those added before it; `executor` runs it off the cooperative pool.
    package mutating func add(_ name: String, on executor: (any TaskExecutor)? = nil, _ service: any Service) {
        entries.append(Entry(name: name, executor: executor, service: service))
    }

    /// Adds a closure as a service.
    package mutating func add(
        _ name: String, on executor: (any TaskExecutor)? = nil, _ body: @escaping @Sendable () async throws -> Void
    ) {
        add(name, on: executor, ClosureService(body))
    }

    package func run() async throws -> String {
        let stops = entries.map { _ in AsyncStream<Void>.makeStream() }
        let (first, error) = await withTaskGroup(of: (Int, Error?).self) { group in
            for (index, entry) in entries.enumerated() {
                let stop = stops[index].stream
                group.addTask(executorPreference: entry.executor) {
                    (index, await Self.run(entry, until: stop))
                }
            }
            // Without services there is nothing to wait for.
            guard let (first, error) = await group.next() else { return (nil as Int?, nil as Error?) }
            // What a service throws once the group is ending (an inbox stream ended by the cancellation, say) is
            // part of stopping, not a failure.
            var ended: Set<Int> = [first]
            for index in entries.indices.reversed() where !ended.contains(index) {
                stops[index].continuation.finish()
                while !ended.contains(index), let (done, _) = await group.next() {
                    ended.insert(done)
                }
            }
            return (first, error is CancellationError ? nil : error)
        }
        if let error { throw error }
        return first.map { entries[$0].name } ?? ""
    }

    /// Runs one service until it ends or `stop` finishes, when it is cancelled and awaited; returns its error.
    private static func run(_ entry: Entry, until stop: AsyncStream<Void>) async -> Error? {
        await withTaskGroup(of: Error?.self) { group in
            group.addTask(executorPreference: entry.executor) {
                do {
                    try await entry.service.run()
                    return nil
                } catch {
                    return error
                }
            }
            group.addTask {
                for await _ in stop {}
                return nil
            }
            var errors = [await group.next() ?? nil]
            group.cancelAll()
            for await error in group { errors.append(error) }
            return errors.compactMap { $0 }.first
        }
    }
}
