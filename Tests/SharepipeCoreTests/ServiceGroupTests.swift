import Foundation
import Synchronization
import Testing
@testable import SharepipeSystem

/// The daemon's services: the first to end ends the group, the others stop in reverse order of start, a failure is
/// the group's error.
@Suite(.timeLimit(.minutes(2))) struct ServiceGroupTests {
    /// What the services did, in order.
    final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Runs until cancelled, then logs that it stopped.
    struct Waiting: Service {
        let name: String
        let log: Log

        func run() async throws {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(60))
            }
            log.add("stopped \(name)")
        }
    }

    @Test func theFirstToEndStopsTheOthersLastStartedFirst() async throws {
        let log = Log()
        var group = ServiceGroup()
        for name in ["a", "b", "c"] { group.add(name, Waiting(name: name, log: log)) }
        group.add("signals") { log.add("signal") }
        let ended = try await group.run()
        #expect(ended == "signals")
        #expect(log.all == ["signal", "stopped c", "stopped b", "stopped a"])
    }

    @Test func aFailingServiceEndsTheGroupWithItsError() async throws {
        let log = Log()
        var group = ServiceGroup()
        group.add("a", Waiting(name: "a", log: log))
        group.add("failing") { throw ShareError(.io, "the watched directory is gone") }
        group.add("c", Waiting(name: "c", log: log))
        await #expect(throws: ShareError(.io, "the watched directory is gone")) { try await group.run() }
        #expect(log.all == ["stopped c", "stopped a"])
    }

    @Test func whatAServiceThrowsWhileItIsStoppedIsNotTheGroupsError() async throws {
        var group = ServiceGroup()
        group.add("inbox") {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
            throw ShareError(.io, "the stream ended")
        }
        group.add("signals") {}
        #expect(try await group.run() == "signals")
    }

    @Test func aServiceOnItsOwnThreadRunsThere() async throws {
        let thread = Lane(name: "sp-test-lane")
        thread.start()
        defer { thread.stop() }
        let names = Mutex<[String]>([])
        var group = ServiceGroup()
        group.add("named", on: thread) {
            let name = String(decoding: try System.readFile("/proc/thread-self/comm"), as: UTF8.self)
            names.withLock { $0.append(name.trimmingCharacters(in: .newlines)) }
        }
        #expect(try await group.run() == "named")
        #expect(names.withLock { $0 } == ["sp-test-lane"])
    }
}
