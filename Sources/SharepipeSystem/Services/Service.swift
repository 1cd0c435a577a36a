/// A long-running part of a process (STYLE 15, after swift-service-lifecycle's `Service`): it runs until it is
/// cancelled, then returns, or until it fails, then throws. A `ServiceGroup` runs several together.
package protocol Service: Sendable {
    func run() async throws
}

/// A service whose body is a closure: a loop of the daemon that is a method rather than a type of its own.
package struct ClosureService: Service {
    private let body: @Sendable () async throws -> Void

    package init(_ body: @escaping @Sendable () async throws -> Void) {
        self.body = body
    }

    package func run() async throws {
        try await body()
    }
}
