import CPQ
import Foundation
import SharepipeSystem
import Synchronization

/// `LISTEN sharepipe` on a connection of its own (issue 33): every daemon's publishes and outbox writes `NOTIFY`
/// the channel when they commit, and this thread calls `onNotify` at once, so that another host's consumer claims a
/// published share and its notifier delivers an event without waiting for a poll. A lost connection is opened again
/// every second; `onNotify` is also called after a reconnect, for what was missed meanwhile.
package final class PostgresListener: Sendable {
    static let channel = "sharepipe"

    private let url: String
    private let onNotify: @Sendable () -> Void
    private let stopping = Atomic<Bool>(false)
    /// Notifications received (tests and the latency measurement read it).
    let received = Atomic<Int>(0)

    package init(url: String, onNotify: @escaping @Sendable () -> Void) {
        self.url = url
        self.onNotify = onNotify
    }

    package func start() {
        Thread { [self] in
            System.nameCurrentThread("sp-listen")
            run()
        }.start()
    }

    package func stop() {
        stopping.store(true, ordering: .relaxed)
    }

    private func run() {
        var first = true
        while !stopping.load(ordering: .relaxed) {
            if let connection = connect() {
                if !first { onNotify() }
                first = false
                listen(on: connection)
                PQfinish(connection)
            }
            if !stopping.load(ordering: .relaxed) { Thread.sleep(forTimeInterval: 1) }
        }
    }

    private func connect() -> OpaquePointer? {
        let keywords = ["connect_timeout", "fallback_application_name", "dbname"]
        let values = ["5", "sharepipe-listen", url]
        let handle = System.withCStrings(keywords) { keywordPointers in
            System.withCStrings(values) { valuePointers in PQconnectdbParams(keywordPointers, valuePointers, 1) }
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            if let handle { PQfinish(handle) }
            return nil
        }
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        guard let result = PQexec(handle, "LISTEN \(Self.channel)") else {
            PQfinish(handle)
            return nil
        }
        let ok = PQresultStatus(result) == PGRES_COMMAND_OK
        PQclear(result)
        if !ok {
            PQfinish(handle)
            return nil
        }
        return handle
    }

    /// Waits for notifications (a second at a time, to see `stop`) until the connection fails.
    private func listen(on connection: OpaquePointer) {
        while !stopping.load(ordering: .relaxed) {
            var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
            guard descriptor.fd >= 0 else { return }
            let ready = poll(&descriptor, 1, 1000)
            if ready < 0 && errno != EINTR { return }
            guard ready > 0 else { continue }
            guard PQconsumeInput(connection) == 1 else { return }
            var any = false
            while let notification = PQnotifies(connection) {
                PQfreemem(notification)
                any = true
            }
            if any {
                received.add(1, ordering: .relaxed)
                onNotify()
            }
        }
    }
}
