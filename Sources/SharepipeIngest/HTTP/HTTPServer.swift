import CMicroHTTPD
import Foundation
import SharepipeSpool
import SharepipeSystem
import Synchronization

/// A command line that cannot be used: a listener beyond loopback without tokens (exit 2, ERR_USAGE).
package struct HTTPUsageError: Error, Sendable {
    /// What is wrong.
    package var message: String
}

/// `daemon --listen`: shares over HTTP/1.1, served by libmicrohttpd.
///
/// One libmicrohttpd daemon per listening socket, each with a small fixed pool of threads that multiplex every
/// connection with epoll, so a slow client costs a connection slot (`--max-connections`, at most
/// `--max-connections-per-client` from one address) and at most one read buffer, never a thread. Every connection
/// is an `HTTPConnection` state machine: its deadlines (`--connection-timeout` with no request begun,
/// `--header-timeout`, `--min-body-rate`) are checked every second by the sweeper and on each piece of a body, and
/// a connection past one is shut down. Bodies are written to files as they arrive (nothing is buffered whole).
/// When a request needs work that waits (admitting a share: idempotency and capacity, which read the ledger;
/// loading and publishing it; fsyncing a tus upload) its connection is suspended and the work runs on the server's
/// own threads, many shares at once, published in the spool's shared batches; the connection is resumed with the
/// answer. The protocol decisions are the pure `HTTPConnection`, `HTTPExchange`, `MultipartParser` and
/// `TusProtocol`; this type only moves bytes and performs their actions.
package final class HTTPServer: Sendable {
    /// The body of `GET /v1/shares/ID` (the `show --json` report) and the share's `sourceApp`; ERR_NOT_FOUND when
    /// neither the ledger nor the spool knows the share.
    package typealias Timeline = @Sendable (_ spool: Spool, _ shareID: String) throws -> (json: [UInt8],
    sourceApp: String?)

    /// A listening socket and what it is bound to.
    struct Listener: Sendable {
        var fd: Int32
        var address: System.SocketAddress
        /// Whether this process created it (and removes a unix socket's path at the end).
        var created: Bool
    }

    let configuration: HTTPConfiguration
    let spool: Spool
    let registry: TypeRegistry
    let logger: Logger
    let metrics: HTTPMetrics
    let loaderConfiguration: @Sendable () -> LoaderConfiguration
    let activation: ShareActivation?
    let timeline: Timeline?
    let listeners: [Listener]
    let uploads: TusStore
    /// Where `POST /v1/shares` bodies are received.
    let receiving: ReceiveDirectory
    let idempotency: any IdempotencyStore
    /// Uploads with a PATCH in progress, and the connection it arrives on: a second tus PATCH at the same time is
    /// refused (409); a request of `ResumableProtocol` ends the one in progress (see `takeOver`).
    let busyUploads = Mutex<[String: ConnectionContext]>([:])
    /// Idempotency keys whose first request is in progress.
    let busyKeys = Mutex<Set<String>>([])
    /// Every open connection, by its state machine's holder; the sweeper's timer ticks go through it.
    let connections = Mutex<[ObjectIdentifier: ConnectionContext]>([:])
    /// The deadlines of every connection.
    let connectionLimits: HTTPConnection.Limits
    private let work: AsyncStream<Job>
    private let submit: AsyncStream<Job>.Continuation
    private let threads: [Lane]

    /// Work for the server's threads: the request, and what to do for it.
    struct Job: Sendable {
        let request: RequestContext
        /// The answer, or nil when an admitted request goes on to read its body.
        let task: @Sendable () async -> HTTPResponse?
    }

    /// How long an idempotency key is remembered.
    static let idempotencyWindow: Duration = .seconds(24 * 3600)
    /// libmicrohttpd's memory per connection, the most one connection holds (its head must fit; it reads a body
    /// into what is left). libmicrohttpd zeroes the whole of it after each request, so a kept-alive connection
    /// holds all of it resident: 16 KiB keeps 10,000 idle connections near 180 MiB (512 KiB made 1,000 cost
    /// 500 MiB), for more and smaller reads of a large body.
    static let connectionBuffer = 16 << 10

    /// Binds every listener (or takes the sockets systemd passed) and prepares the stores; nothing is served until
    /// `run()`. A listener beyond loopback and unix sockets without `--tokens` is an `HTTPUsageError`.
    package init(
        configuration: HTTPConfiguration, spool: Spool, registry: TypeRegistry, logger: Logger, metrics: HTTPMetrics,
        loaderConfiguration: @escaping @Sendable () -> LoaderConfiguration, activation: ShareActivation?,
        timeline: Timeline?, environment: [String: String]
    ) throws {
        self.configuration = configuration
        self.spool = spool
        self.registry = registry
        self.logger = logger
        self.metrics = metrics
        self.loaderConfiguration = loaderConfiguration
        self.activation = activation
        self.timeline = timeline
        uploads = try TusStore(stateDirectory: spool.root, ledger: spool.ledger)
        idempotency = spool.ledger
        receiving = try ReceiveDirectory(spool: spool)
        var listeners: [Listener] = []
        do {
            if configuration.socketActivation {
                for fd in try System.activationSockets(environment: environment) {
                    listeners.append(Listener(fd: fd, address: try System.boundAddress(of: fd), created: false))
                }
            }
            for address in configuration.listen {
                let fd: Int32
                switch address {
                case .tcp(let host, let port): fd = try System.listenTCP(host: host, port: port)
                case .unix(let path): fd = try System.listenUnix(path: path)
                }
                listeners.append(Listener(fd: fd, address: try System.boundAddress(of: fd), created: true))
            }
            if configuration.tokens == nil, let open = listeners.first(where: { !$0.address.isLocal }) {
                throw HTTPUsageError(message: "--listen \(open.address.description) is reachable from other hosts: "
                    + "give --tokens FILE, or listen on loopback or a unix: socket")
            }
        } catch {
            for listener in listeners { System.closeSocket(listener.fd) }
            throw error
        }
        self.listeners = listeners
        func nanoseconds(_ duration: Duration) -> UInt64 {
            let (seconds, attoseconds) = duration.components
            return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        }
        connectionLimits = HTTPConnection.Limits(
            idleTimeout: nanoseconds(configuration.connectionTimeout),
            headerTimeout: nanoseconds(configuration.headerTimeout), minBodyRate: configuration.minBodyRate)
        (work, submit) = AsyncStream.makeStream(of: Job.self)
        threads = (0..<2).map { Lane(name: "sp-http-\($0)") }
    }

    /// Serves until cancelled; then stops accepting, finishes the requests in progress and closes the listeners.
    package func run() async throws {
        for thread in threads { thread.start() }
        defer { for thread in threads { thread.stop() } }
        // After the daemons below have stopped: no connection writes a body any more.
        defer { receiving.remove() }
        var daemons: [MHDDaemon] = []
        defer {
            for daemon in daemons { daemon.stop() }
        }
        for listener in listeners {
            let daemon = try MHDDaemon(server: self, listener: listener)
            daemons.append(daemon)
            logger.info("http.listening", [
                ("listener", .string(listener.address.description)), ("tls", .string(configuration.tls == nil ? "no" : "yes")),
                ("auth", .string(configuration.tokens == nil ? "none" : "tokens")),
            ])
        }
        // A discarding group: a plain task group keeps every finished child until it is awaited, and this one
        // starts a child per request (they were kept for the daemon's life, about 1.3 KB a request, 20 KB an upload).
        await withDiscardingTaskGroup { group in
            group.addTask { await self.expireLoop() }
            group.addTask { await self.sweepLoop() }
            await withTaskCancellationHandler {
                var started = 0
                for await job in work {
                    started += 1
                    group.addTask(executorPreference: threads[started % threads.count]) {
                        let response = await job.task()
                        job.request.complete(response)
                    }
                }
            } onCancel: {
                submit.finish()
            }
            group.cancelAll()
        }
        for daemon in daemons { daemon.quiesce() }
    }

    /// Hands work to the server's threads (the request's connection is suspended until it is done).
    func enqueue(_ request: RequestContext, _ task: @escaping @Sendable () async -> HTTPResponse?) {
        if case .terminated = submit.yield(Job(request: request, task: task)) {
            request.complete(.error(ShareError(.spoolFull, "the daemon is stopping")))
        }
    }

    /// A request of `ResumableProtocol` to an upload that another request is writing. As the draft recommends, the
    /// request in progress is ended: a client resumes only once it gave that request up, so a connection still
    /// receiving its body is shut down (as a deadline's cut is); then this waits until the upload is released, the
    /// bytes that arrived recorded. A request past its body (being ingested) is waited for. False when the upload is
    /// still busy after 30 s.
    func takeOver(_ id: String) async -> Bool {
        let deadline = System.monotonicNanoseconds() + 30_000_000_000
        var cut = false
        while true {
            let busy = busyUploads.withLock { busy -> Bool in
                guard let holder = busy[id] else { return false }
                if !cut, holder.isReceiving {
                    holder.cut(status: nil)
                    cut = true
                }
                return true
            }
            if !busy { return true }
            if System.monotonicNanoseconds() > deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Every minute (or every half expiry, when that is shorter): expired tus uploads and idempotency keys are
    /// removed, and the ledger's rows of the uploads made those of their files again.
    private func expireLoop() async {
        let (expiry, _) = configuration.uploadExpiry.components
        let interval = Duration.seconds(min(60, max(1, expiry / 2)))
        while !Task.isCancelled {
            do {
                try uploads.reconcile()
            } catch {
                logger.warning("http.upload_records_failed", [("message", .string("\(error)"))])
            }
            let now = System.wallClockNanoseconds() / 1_000_000
            for id in (try? uploads.ids()) ?? [] {
                guard let upload = try? uploads.load(id), upload.expiresAt <= now,
                    !busyUploads.withLock({ $0[id] != nil })
                else { continue }
                try? uploads.remove(id)
                logger.info("http.upload_expired", [("upload", .string(id))])
            }
            try? idempotency.expire(maxAge: Self.idempotencyWindow)
            try? await Task.sleep(for: interval)
        }
    }

    /// Every second: each connection's deadlines. One past its deadline is shut down here, under the table's lock,
    /// which libmicrohttpd's close notification takes before it closes the descriptor (so a descriptor number is
    /// never shut down after it was reused); libmicrohttpd then sees the end and closes the connection, and the
    /// request in progress is given up (what it received removed).
    private func sweepLoop() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            let now = System.monotonicNanoseconds()
            var cut = 0
            connections.withLock { open in
                for connection in open.values {
                    for case .close(let status) in connection.handle(.timer(at: now)) {
                        connection.cut(status: status)
                        cut += 1
                    }
                }
            }
            if cut > 0 { logger.info("http.deadline_cut", [("connections", .int(Int64(cut)))]) }
        }
    }

    /// The current limits (SIGHUP may change them).
    var settings: HTTPExchange.Settings {
        let limits = loaderConfiguration()
        return HTTPExchange.Settings(
            tokens: configuration.tokens, maxFileSize: limits.maxFileSize, maxShareSize: limits.maxShareSize)
    }

    // MARK: - One libmicrohttpd daemon

    /// One libmicrohttpd daemon serving one listener.
    final class MHDDaemon: @unchecked Sendable {
        // The pointer is libmicrohttpd's; it is used only to stop the daemon, once, from the server's task.
        private let handle: OpaquePointer
        private let context: Unmanaged<ListenerContext>
        private let listener: Listener

        init(server: HTTPServer, listener: Listener) throws {
            self.listener = listener
            let context = Unmanaged.passRetained(ListenerContext(server: server, name: listener.address.description))
            self.context = context
            let flags = MHD_USE_AUTO_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            let (seconds, _) = server.configuration.connectionTimeout.components
            func start(key: UnsafePointer<CChar>?, certificate: UnsafePointer<CChar>?) -> OpaquePointer? {
                Self.start(
                    flags: flags, server: server, listener: listener, timeout: seconds, key: key,
                    certificate: certificate, context: context)
            }
            let started: OpaquePointer?
            if let tls = server.configuration.tls {
                started = tls.key.withCString { key in
                    tls.certificate.withCString { certificate in start(key: key, certificate: certificate) }
                }
            } else {
                started = start(key: nil, certificate: nil)
            }
            guard let started else {
                context.release()
                throw ShareError(.io, "libmicrohttpd could not start on \(listener.address.description)")
            }
            handle = started
        }

        private static func start(
            flags: UInt32, server: HTTPServer, listener: Listener, timeout: Int64, key: UnsafePointer<CChar>?,
            certificate: UnsafePointer<CChar>?, context: Unmanaged<ListenerContext>
        ) -> OpaquePointer? {
            let pointer = context.toOpaque()
            return sharepipe_mhd_start(
                flags, listener.fd, UInt32(server.configuration.threads),
                UInt32(max(1, server.configuration.maxConnections)),
                UInt32(max(1, server.configuration.maxConnectionsPerClient)), UInt32(max(0, timeout)),
                HTTPServer.connectionBuffer, key, certificate,
                { cls, connection, url, method, _, data, size, slot in
                    guard let cls, let connection, let url, let method, let size, let slot else { return .NO }
                    let listener = Unmanaged<ListenerContext>.fromOpaque(cls).takeUnretainedValue()
                    return listener.server.access(
                        listener, connection: connection, url: String(cString: url), method: String(cString: method),
                        data: data, size: size, slot: slot)
                },
                pointer,
                { _, _, slot, termination in
                    guard let slot, let raw = slot.pointee else { return }
                    slot.pointee = nil
                    let request = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
                    request.ended(cleanly: termination == .REQUEST_TERMINATED_COMPLETED_OK)
                },
                { cls, connection, socketContext, event in
                    guard let cls, let connection, let socketContext else { return }
                    let listener = Unmanaged<ListenerContext>.fromOpaque(cls).takeUnretainedValue()
                    listener.server.connectionEvent(
                        connection, slot: socketContext, opened: event == .CONNECTION_NOTIFY_STARTED,
                        tls: listener.server.configuration.tls != nil)
                },
                { _, _, connection in
                    // The request line arrived: the head's deadline starts. (The answer is the request's slot,
                    // left empty until the head is complete.)
                    guard let connection, let raw = sharepipe_mhd_socket_context(connection) else { return nil }
                    let context = Unmanaged<ConnectionContext>.fromOpaque(raw).takeUnretainedValue()
                    _ = context.handle(.requestBegun(at: System.monotonicNanoseconds()))
                    return nil
                },
                pointer)
        }

        /// Stops accepting new connections (those in progress go on).
        func quiesce() {
            _ = MHD_quiesce_daemon(handle)
        }

        /// Stops the daemon: its threads end, its connections close, its socket is closed.
        func stop() {
            MHD_stop_daemon(handle)
            System.closeSocket(listener.fd)
            if listener.created, case .unix(let path) = listener.address { try? System.unlink(path) }
            context.release()
        }
    }

    /// What the callbacks of one daemon need.
    final class ListenerContext: Sendable {
        let server: HTTPServer
        let name: String

        init(server: HTTPServer, name: String) {
            self.server = server
            self.name = name
        }
    }
}

// MARK: - Connections

/// One connection: its state machine, and its descriptor for a deadline's cut. The state machine is driven from
/// libmicrohttpd's thread of the connection, from the server's threads (work finished) and from the sweeper.
final class ConnectionContext: Sendable {
    let fd: Int32
    let tls: Bool
    private let machine: Mutex<HTTPConnection>

    init(fd: Int32, tls: Bool, limits: HTTPConnection.Limits) {
        self.fd = fd
        self.tls = tls
        machine = Mutex(HTTPConnection(limits: limits, openedAt: System.monotonicNanoseconds()))
    }

    func handle(_ event: HTTPConnection.Event) -> [HTTPConnection.Action] {
        machine.withLock { $0.handle(event) }
    }

    /// Whether the connection is reading a request's body.
    var isReceiving: Bool {
        machine.withLock { if case .body = $0.state { true } else { false } }
    }

    /// Ends the connection past a deadline: on a plain connection the client is told first (a 408 is written if
    /// the socket takes it at once; nothing else is being written while a head or body is read), then the socket
    /// is shut down and libmicrohttpd closes the connection when it sees the end. A TLS connection is shut down
    /// without the answer (its session belongs to libmicrohttpd's thread).
    func cut(status: Int?) {
        if let status, !tls {
            let body = HTTPResponse.error(ShareError(.timeout, "the request was too slow"), status: status)
            var text = "HTTP/1.1 \(status) Request Timeout\r\nConnection: close\r\n"
            for (name, value) in body.headers { text += "\(name): \(value)\r\n" }
            text += "Content-Length: \(body.body.count)\r\n\r\n"
            System.sendNow(fd, Array(text.utf8) + body.body)
        }
        System.shutdownSocket(fd)
    }
}

extension HTTPServer {
    /// libmicrohttpd opened or closed a connection: its state machine is made or given up. The close is told before
    /// the descriptor is closed; the table's lock orders it after any cut in progress.
    fileprivate func connectionEvent(
        _ connection: OpaquePointer, slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>, opened: Bool, tls: Bool
    ) {
        if opened {
            let context = ConnectionContext(
                fd: sharepipe_mhd_connection_fd(connection), tls: tls, limits: connectionLimits)
            slot.pointee = Unmanaged.passRetained(context).toOpaque()
            connections.withLock { $0[ObjectIdentifier(context)] = context }
            return
        }
        guard let raw = slot.pointee else { return }
        slot.pointee = nil
        let context = Unmanaged<ConnectionContext>.fromOpaque(raw).takeRetainedValue()
        connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(context)) }
        _ = context.handle(.closed)
    }
}

// MARK: - Requests

extension HTTPServer {
    /// The access handler: called once with the head (`slot` still empty), then with each piece of the body, then
    /// once more with none; after a resume, again with none.
    fileprivate func access(
        _ listener: ListenerContext, connection: OpaquePointer, url: String, method: String,
        data: UnsafePointer<CChar>?, size: UnsafeMutablePointer<Int>,
        slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = slot.pointee else {
            guard let socketContext = sharepipe_mhd_socket_context(connection) else { return .NO }
            let context = Unmanaged<ConnectionContext>.fromOpaque(socketContext).takeUnretainedValue()
            let head = HTTPRequestHead(method: method, path: url, headers: Self.headers(of: connection))
            let request = RequestContext(
                server: self, connection: connection, context: context, listener: listener.name, head: head)
            slot.pointee = Unmanaged.passRetained(request).toOpaque()
            return request.begin()
        }
        let request = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        if size.pointee > 0 {
            let count = size.pointee
            size.pointee = 0
            return request.body(UnsafeRawBufferPointer(start: data, count: count))
        }
        return request.called()
    }

    private static func headers(of connection: OpaquePointer) -> [String: String] {
        final class Collected {
            var headers: [String: String] = [:]
        }
        let collected = Collected()
        let box = Unmanaged.passUnretained(collected).toOpaque()
        _ = MHD_get_connection_values(connection, .HEADER_KIND, { cls, _, key, value in
            guard let cls, let key else { return .YES }
            let collected = Unmanaged<Collected>.fromOpaque(cls).takeUnretainedValue()
            let name = String(cString: key).lowercased()
            let text = value.map { String(cString: $0) } ?? ""
            if let earlier = collected.headers[name] {
                collected.headers[name] = earlier + ", " + text
            } else {
                collected.headers[name] = text
            }
            return .YES
        }, box)
        return withExtendedLifetime(collected) { collected.headers }
    }
}

/// One request on one connection. libmicrohttpd calls a connection's callbacks one at a time; the fields below
/// `phase` are touched only from those callbacks. The answer of suspended work crosses threads through `answer`.
/// The connection's `HTTPConnection` decides when to suspend, start work, resume, respond or cut; this type
/// performs that.
final class RequestContext: @unchecked Sendable {
    private enum Phase {
        /// An answer is ready to queue at the next callback.
        case answer(HTTPResponse)
        /// Work to start when the (empty) body ends.
        case work(@Sendable () async -> HTTPResponse)
        /// Suspended while `check` admits the request off the I/O thread (nil: admitted; else the answer); then its
        /// body is read as `receive` says.
        case admitting(check: @Sendable () async -> HTTPResponse?, receive: () -> Phase)
        /// Receiving a share's body.
        case share(ShareBodyReceiver)
        /// A share's body received whole, to ingest.
        case received(ShareBodyReceiver, ReceivedBody)
        /// Receiving a PATCH (or a creation's) body into a tus upload.
        case tus(TusReceiver)
        /// Suspended while work runs.
        case waiting
        /// The response is queued.
        case answered
    }

    private let server: HTTPServer
    private let connection: OpaquePointer
    private let context: ConnectionContext
    let listener: String
    let head: HTTPRequestHead
    private let started = System.monotonicNanoseconds()
    private var phase = Phase.answered
    private var sourceApp: String?
    private var status = 0
    private var bodyBytes: Int64 = 0
    /// The share the request made (or replayed), for the log line; set from the server's threads too.
    private let shareID = Mutex<String?>(nil)
    private var countsAsUpload = false
    private var discarded: Int64 = 0
    /// How much of a body refused in its middle is read and dropped so the client still gets the answer;
    /// libmicrohttpd can only answer once a body is read, and past this the connection is closed instead.
    static let discardLimit: Int64 = 64 << 20
    /// How much of a body refused before it was read (a limit, a token, a route) is read and dropped.
    static let earlyDiscardLimit: Int64 = 8 << 20
    private var discardLimit = RequestContext.discardLimit
    /// What the request holds (an idempotency key or an upload in progress), let go once its work is done, before
    /// its answer is sent: a client that sends its next request the moment it reads the answer (tus clients do, on
    /// a new connection) must not find the upload still busy (409) or the key still in progress. Else at its end.
    private let releases = Mutex<[@Sendable () -> Void]>([])
    private let answer = Mutex<HTTPResponse?>(nil)

    init(
        server: HTTPServer, connection: OpaquePointer, context: ConnectionContext, listener: String,
        head: HTTPRequestHead
    ) {
        self.server = server
        self.connection = connection
        self.context = context
        self.listener = listener
        self.head = head
    }

    /// The head arrived: decide how the request goes on.
    func begin() -> MHD_Result {
        switch HTTPExchange.begin(head, settings: server.settings) {
        case .respond(let response):
            phase = .answer(resumableRefusal(response))
        case .serve(let route, let sourceApp, let body):
            self.sourceApp = sourceApp
            phase = phase(for: route, body: body)
        }
        return perform(context.handle(.head(at: System.monotonicNanoseconds(), next: next())))
    }

    /// How the request goes on from its phase. An answer decided before the body: a request without a body, or
    /// whose body of at most `earlyDiscardLimit` bytes is already on its way (no `Expect: 100-continue`), is
    /// answered after the body's end, read and dropped, keeping the connection alive — answered at once and closed,
    /// the client would still be sending, and the reset its unread bytes cause may destroy the answer before the
    /// client reads it (curl then reports a broken pipe instead of the 413). A client that waits for `100 Continue`
    /// or announces a larger body is answered at once, its body not read (the connection then closes).
    private func next() -> HTTPConnection.Next {
        let hasBody = head.contentLength.map { $0 > 0 } ?? (head["transfer-encoding"] != nil)
        switch phase {
        case .answer:
            guard hasBody else { return .receive }
            let waits = head["expect"]?.lowercased() == "100-continue"
            if !waits, let length = head.contentLength, length <= Self.earlyDiscardLimit {
                discardLimit = Self.earlyDiscardLimit
                return .receive
            }
            return .answer
        case .admitting: return .admit
        default: return .receive
        }
    }

    /// Performs the connection's actions; `.NO` closes the connection.
    private func perform(_ actions: [HTTPConnection.Action]) -> MHD_Result {
        var result = MHD_Result.YES
        for action in actions {
            switch action {
            case .respond:
                if case .answer(let response) = phase {
                    result = queue(response)
                } else if let response = answer.withLock({ $0 }) {
                    result = queue(response)
                }
            case .suspend:
                MHD_suspend_connection(connection)
            case .startWork:
                start()
            case .resume:
                MHD_resume_connection(connection)
            case .close(let status):
                context.cut(status: status)
                result = .NO
            }
        }
        return result
    }

    /// Hands the phase's work to the server's threads.
    private func start() {
        switch phase {
        case .admitting(let check, _):
            server.enqueue(self) { await check() }
        case .work(let task):
            phase = .waiting
            startLast(task)
        case .received(let receiver, let body):
            phase = .waiting
            startLast(ingest(receiver, body))
        case .tus(let receiver):
            phase = .waiting
            startLast { [self] in
                let response = await receiver.finish()
                if let shareID = receiver.shareID { self.noteShare(shareID) }
                return response
            }
        default:
            break
        }
    }

    /// Hands the request's last work to the server's threads; what it holds is let go as soon as it is done.
    private func startLast(_ task: @escaping @Sendable () async -> HTTPResponse) {
        server.enqueue(self) { [self] in
            let response = await task()
            releaseHeld()
            return response
        }
    }

    /// Lets go of what the request holds, once.
    private func releaseHeld() {
        for release in releases.withLock({ held in defer { held = [] }; return held }) { release() }
    }

    func body(_ bytes: UnsafeRawBufferPointer) -> MHD_Result {
        bodyBytes += Int64(bytes.count)
        let actions = context.handle(.bodyChunk(bytes: bytes.count, at: System.monotonicNanoseconds()))
        if !actions.isEmpty { return perform(actions) }
        do {
            switch phase {
            case .share(let receiver):
                try receiver.receive(bytes)
            case .tus(let receiver):
                try receiver.receive(bytes)
            default:
                // A body nobody reads (a GET's, or the rest of a refused one): discarded, up to a point.
                discarded += Int64(bytes.count)
                if discarded > discardLimit { return .NO }
            }
        } catch {
            return refuse(error)
        }
        return .YES
    }

    /// Called with no body: after a resume, or at the end of the body.
    func called() -> MHD_Result {
        switch phase {
        case .admitting(_, let receive):
            // Resumed after the admission: its refusal (or replay) goes out now, before the body; else the body.
            if let response = answer.withLock({ $0 }) {
                answer.withLock { $0 = nil }
                phase = .answer(response)
                return perform(context.handle(.resumed(at: System.monotonicNanoseconds(), next: .answer)))
            }
            phase = receive()
            return perform(context.handle(.resumed(at: System.monotonicNanoseconds(), next: next())))
        case .waiting:
            guard answer.withLock({ $0 }) != nil else { return .YES }
            return perform(context.handle(.resumed(at: System.monotonicNanoseconds(), next: .answer)))
        case .answer:
            return perform(context.handle(.bodyEnd(work: false)))
        case .work, .tus:
            return perform(context.handle(.bodyEnd(work: true)))
        case .share(let receiver):
            do {
                phase = .received(receiver, try receiver.finish())
            } catch {
                _ = refuse(error)
                return perform(context.handle(.bodyEnd(work: false)))
            }
            return perform(context.handle(.bodyEnd(work: true)))
        case .received, .answered:
            return .YES
        }
    }

    /// The work of a received share: loaded and published off the I/O thread, its receipt stored under its
    /// idempotency key.
    private func ingest(_ receiver: ShareBodyReceiver, _ body: ReceivedBody) -> @Sendable () async -> HTTPResponse {
        let server = server
        let loader = ShareLoader(
            spool: server.spool, registry: server.registry, configuration: server.loaderConfiguration())
        let ingest = HTTPIngest(loader: loader, activation: server.activation, spareSink: server.receiving)
        let key = head["idempotency-key"]
        let scope = sourceApp ?? ""
        let sourceApp = sourceApp
        let want = head["want-repr-digest"]
        // Announced now, while the work waits for a server thread, so that the publish batch this share will join
        // waits for it (uploads that arrive together are published together).
        let arrival = server.spool.expectPublish()
        return { [self] in
            let receipt = await ingest.ingest(
                ingest.providers(body), sourceApp: sourceApp ?? body.sourceApp, details: body.details,
                arrival: arrival)
            receiver.discard()
            self.noteShare(receipt.shareId)
            var response = HTTPIngest.response(for: receipt)
            response.headers += DigestFields.answer(want: want, sha256Hex: DigestFields.stored(receipt))
            if let key, [201, 422].contains(response.status) {
                let stored = HTTPIngest.storedAnswer(for: receipt, response)
                do {
                    try server.idempotency.store(stored, scope: scope, key: key)
                } catch {
                    server.logger.warning("http.idempotency_store_failed", [
                        ("share", .string(receipt.shareId)), ("message", .string("\(error)")),
                    ])
                }
            }
            return response
        }
    }

    /// The work is done (on the server's threads): the answer is kept, and the connection resumed; libmicrohttpd
    /// then calls `called()`, where it is queued (or, for an admission, the body is read).
    func complete(_ response: HTTPResponse?) {
        answer.withLock { $0 = response }
        for action in context.handle(.workFinished) where action == .resume {
            MHD_resume_connection(connection)
        }
    }

    /// libmicrohttpd is done with the request (answered, or cut off): what was received and not ingested is
    /// removed, locks are released, and the request's log line is written.
    func ended(cleanly: Bool) {
        switch phase {
        case .share(let receiver), .received(let receiver, _): receiver.discard()
        case .tus(let receiver): receiver.abandon()
        default: break
        }
        phase = .answered
        _ = context.handle(.requestCompleted(at: System.monotonicNanoseconds()))
        releaseHeld()
        if countsAsUpload { server.metrics.uploadEnded() }
        let milliseconds = Int64((System.monotonicNanoseconds() - started) / 1_000_000)
        var fields: [(String, Logger.Value)] = [
            ("listener", .string(listener)), ("method", .string(head.method)), ("path", .string(head.path)),
            ("token", .string(sourceApp ?? "-")), ("status", .int(Int64(status))), ("bytes", .int(bodyBytes)),
            ("duration_ms", .int(milliseconds)),
        ]
        if let shareID = shareID.withLock({ $0 }) { fields.append(("share", .string(shareID))) }
        if !cleanly { fields.append(("aborted", "yes")) }
        server.logger.info("http.request", fields)
    }

    private func noteShare(_ id: String) {
        shareID.withLock { $0 = id }
    }

    private func refuse(_ error: ShareError) -> MHD_Result {
        let response: HTTPResponse
        switch phase {
        case .share(let receiver), .received(let receiver, _):
            receiver.discard()
            response = .error(error)
        case .tus(let receiver):
            response = receiver.refused(error)
        default:
            response = .error(error)
        }
        phase = .answer(response)
        // In the middle of a body libmicrohttpd takes the answer only once the body is read: the rest is dropped
        // as it arrives (up to `discardLimit`) and the answer goes out at its end.
        return .YES
    }

    private func queue(_ response: HTTPResponse) -> MHD_Result {
        let result = response.body.withUnsafeBytes { bytes in
            guard let mhd = MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
            else { return MHD_Result.NO }
            defer { MHD_destroy_response(mhd) }
            for (name, value) in response.headers { _ = MHD_add_response_header(mhd, name, value) }
            return MHD_queue_response(connection, UInt32(response.status), mhd)
        }
        if result == .YES {
            phase = .answered
            status = response.status
            server.metrics.responded(response.status)
        }
        return result
    }

    // MARK: Routes

    private func phase(for route: HTTPExchange.Route, body: HTTPExchange.ShareBody?) -> Phase {
        let server = server
        let owner = sourceApp
        let now = System.wallClockNanoseconds() / 1_000_000
        switch route {
        case .health:
            return .work { server.health() }
        case .showShare(let id):
            return .work { server.show(id, owner: owner) }
        case .createShare:
            return createShare(body ?? .single)
        case .tusOptions:
            return .answer(TusProtocol.options(maxSize: server.loaderConfiguration().maxFileSize))
        case .tusHead(let id):
            return .answer(TusProtocol.head(try? server.uploads.load(id), head, owner: owner, now: now))
        case .tusDelete(let id):
            guard claimUpload(id) else { return .answer(busy()) }
            let actions = TusProtocol.delete(try? server.uploads.load(id), head, owner: owner, now: now)
            var response = HTTPResponse(status: 500)
            for action in actions {
                switch action {
                case .remove:
                    do {
                        try server.uploads.remove(id)
                    } catch {
                        return .answer(TusProtocol.refusal(error as? ShareError ?? ShareError(.io, "\(error)")))
                    }
                case .respond(let answer): response = answer
                default: continue
                }
            }
            return .answer(response)
        case .tusCreate:
            let limits = server.loaderConfiguration()
            let created = TusProtocol.create(
                head, id: UUID.random().uuidString, now: now, expiry: server.configuration.uploadExpiry,
                maxSize: limits.maxFileSize, owner: owner)
            var upload: TusUpload
            switch created {
            case .failure(let response): return .answer(response)
            case .success(let new): upload = new
            }
            if case .failure(let error) = DigestFields.parse(head["repr-digest"], name: "Repr-Digest") {
                return .answer(TusProtocol.refusal(error))
            }
            upload.metadata[DigestFields.reprKey] = head["repr-digest"]
            upload.metadata[DigestFields.wantKey] = head["want-repr-digest"]
            let withBody = HeaderValue(head["content-type"] ?? "").value.lowercased() == TusProtocol.offsetContentType
            if withBody, let refusal = capacityRefusal(limits, tus: true) { return .answer(refusal) }
            do {
                try server.uploads.create(upload)
            } catch {
                return .answer(TusProtocol.refusal(error as? ShareError ?? ShareError(.io, "\(error)")))
            }
            server.logger.info("http.upload_created", [("upload", .string(upload.id)), ("length", .int(upload.length))])
            guard withBody else { return .answer(TusProtocol.created(upload)) }
            var patch = head
            patch.headers["upload-offset"] = "0"
            return tusPatch(upload.id, head: patch, creation: true)
        case .tusPatch(let id):
            return tusPatch(id, head: head, creation: false)
        case .resumableOffset(let id):
            return resumable { version in
                .work {
                    _ = await server.takeOver(id)
                    return ResumableProtocol.offset(
                        try? server.uploads.load(id), version, owner: owner,
                        now: System.wallClockNanoseconds() / 1_000_000,
                        maxSize: server.loaderConfiguration().maxFileSize)
                }
            }
        case .resumableCancel(let id):
            return resumable { version in
                .work {
                    _ = await server.takeOver(id)
                    let actions = ResumableProtocol.cancel(
                        try? server.uploads.load(id), version, owner: owner,
                        now: System.wallClockNanoseconds() / 1_000_000)
                    var response = HTTPResponse(status: 500)
                    for action in actions {
                        switch action {
                        case .remove:
                            do {
                                try server.uploads.remove(id)
                            } catch {
                                return ResumableProtocol.refusal(
                                    error as? ShareError ?? ShareError(.io, "\(error)"), version)
                            }
                            server.logger.info("http.upload_cancelled", [("upload", .string(id))])
                        case .respond(let answer): response = answer
                        default: continue
                        }
                    }
                    return response
                }
            }
        case .resumableAppend(let id):
            return resumable { version in
                .admitting(check: {
                    await server.takeOver(id) ? nil : ResumableProtocol.refusal(
                        ShareError(.badRequest, "another request is writing this upload"), status: 409, version)
                }, receive: { [self] in resumableAppend(id, version) })
            }
        }
    }

    /// A request to an upload resource of `ResumableProtocol`, in its version (a version not spoken here: 400).
    private func resumable(_ serve: (ResumableProtocol.Version) -> Phase) -> Phase {
        switch ResumableProtocol.version(head) {
        case .success(let version)?: return serve(version)
        case .failure(let error)?: return .answer(.error(error))
        case nil: return .answer(.error(ShareError(.badRequest, "Upload-Draft-Interop-Version is required")))
        }
    }

    /// The limits of a new upload of `ResumableProtocol`.
    private func resumableLimits() -> ResumableProtocol.Limits {
        let (seconds, _) = server.configuration.uploadExpiry.components
        return ResumableProtocol.Limits(maxSize: server.loaderConfiguration().maxFileSize, secondsLeft: seconds)
    }

    /// A refusal before the body of a request that speaks `ResumableProtocol` carries its version, and a 413 the
    /// limits.
    private func resumableRefusal(_ response: HTTPResponse) -> HTTPResponse {
        guard case .success(let version)? = ResumableProtocol.version(head) else { return response }
        var response = response
        response.headers.append(("Upload-Draft-Interop-Version", String(version.rawValue)))
        if response.status == 413 { response.headers += ResumableProtocol.limitHeaders(resumableLimits(), version) }
        return response
    }

    /// The absolute URI of an upload resource, as the interim response gives it: this listener's scheme and the
    /// request's `Host` (the path alone when there is no usable `Host`).
    private func uploadLocation(_ id: String) -> String {
        let path = TusProtocol.location(id)
        guard let host = head["host"], !host.isEmpty,
            host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") })
        else { return path }
        return (context.tls ? "https://" : "http://") + host + path
    }

    /// A creation of `ResumableProtocol`, admitted and its upload created: the interim response goes out before
    /// anything else on the connection (libmicrohttpd has written nothing for the request yet), then the body is
    /// received as the upload's first append.
    private func resumableCreation(
        _ upload: TusUpload, _ version: ResumableProtocol.Version, _ append: ResumableProtocol.Append
    ) -> Phase {
        guard claimUpload(upload.id) else {
            return .answer(ResumableProtocol.refusal(ShareError(.io, "the new upload is busy"), version))
        }
        let location = uploadLocation(upload.id)
        let interim = ResumableProtocol.interim(
            upload, version, location: location, maxSize: server.loaderConfiguration().maxFileSize,
            now: System.wallClockNanoseconds() / 1_000_000)
        let sent = interim.withUnsafeBytes { bytes in
            sharepipe_mhd_send_interim(connection, bytes.baseAddress, bytes.count, 5000)
        }
        guard sent == 0 else {
            let error = ShareError(.io, "the interim response could not be sent")
            return .answer(ResumableProtocol.refusal(error, version))
        }
        return resumableReceive(upload, version, append, location: location, creation: true)
    }

    /// A PATCH of `ResumableProtocol`, after any request in progress on the upload ended.
    private func resumableAppend(_ id: String, _ version: ResumableProtocol.Version) -> Phase {
        guard claimUpload(id) else {
            return .answer(ResumableProtocol.refusal(
                ShareError(.badRequest, "another request is writing this upload"), status: 409, version))
        }
        let upload = try? server.uploads.load(id)
        let start = ResumableProtocol.beginAppend(
            upload, head, version, owner: sourceApp, now: System.wallClockNanoseconds() / 1_000_000,
            maxSize: server.loaderConfiguration().maxFileSize)
        switch start {
        case .refuse(let response):
            return .answer(response)
        case .actions(let actions):
            guard let upload else { return .answer(ResumableProtocol.refusal(ShareError(.notFound, "no such upload"),
                status: 404, version)) }
            let append = ResumableProtocol.Append(limit: 0, complete: true, length: upload.length)
            let receiver = TusReceiver(
                server: server, upload: upload, file: nil, checksum: nil, creation: false,
                resumable: (version, append, uploadLocation(id)))
            return .work { await receiver.perform(actions) }
        case .receive(let append):
            guard let upload else { return .answer(ResumableProtocol.refusal(ShareError(.notFound, "no such upload"),
                status: 404, version)) }
            return resumableReceive(upload, version, append, location: uploadLocation(id), creation: false)
        }
    }

    private func resumableReceive(
        _ upload: TusUpload, _ version: ResumableProtocol.Version, _ append: ResumableProtocol.Append,
        location: String, creation: Bool
    ) -> Phase {
        do {
            let digest = try DigestFields.parse(head["content-digest"], name: "Content-Digest").get()
            let file = try server.uploads.openForAppend(upload.id, at: upload.offset)
            countsAsUpload = true
            server.metrics.uploadStarted()
            return .tus(TusReceiver(
                server: server, upload: upload, file: file, checksum: nil, creation: creation, limit: append.limit,
                contentDigest: digest, resumable: (version, append, location)))
        } catch {
            return .answer(ResumableProtocol.refusal(error as? ShareError ?? ShareError(.io, "\(error)"), version))
        }
    }

    private func capacityRefusal(_ limits: LoaderConfiguration, tus: Bool) -> HTTPResponse? {
        do {
            try server.spool.checkCapacity(limits)
            return nil
        } catch {
            let failure = error as? ShareError ?? ShareError(.io, "\(error)")
            // The spool is full, or the ledger cannot be asked: both mean "try again later".
            let refusal = failure.code == .spoolFull ? failure : ShareError(.containerUnavailable, failure.message)
            return tus ? TusProtocol.refusal(refusal, status: 503) : .error(refusal, status: 503)
        }
    }

    /// `POST /v1/shares`: admitted off the I/O thread (its idempotency key's first answer, the spool's capacity:
    /// both read the ledger), then its body is received. A second request with a key in progress is refused at once.
    private func createShare(_ kind: HTTPExchange.ShareBody) -> Phase {
        let limits = server.loaderConfiguration()
        let server = server
        var creation: (upload: TusUpload, version: ResumableProtocol.Version, append: ResumableProtocol.Append)?
        if kind == .single {
            let decided = ResumableProtocol.create(
                head, id: UUID.random().uuidString, now: System.wallClockNanoseconds() / 1_000_000,
                expiry: server.configuration.uploadExpiry, maxSize: limits.maxFileSize, owner: sourceApp)
            switch decided {
            case .plain: break
            case .refuse(let response): return .answer(response)
            case .create(let upload, let version, let append): creation = (upload, version, append)
            }
        }
        let resumable = creation
        // The content the body will be, when it says so: a single body's `Repr-Digest` or `Content-Digest`, a
        // resumable upload's `Repr-Digest` (its first request may carry only part of it).
        let named: DigestFields?
        let digests = resumable == nil
            ? DigestFields.expected(head) : DigestFields.parse(head["repr-digest"], name: "Repr-Digest")
        switch digests {
        case .success(let digests): named = kind == .single ? digests : nil
        case .failure(let error): return .answer(.error(error))
        }
        let key = head["idempotency-key"]
        let scope = sourceApp ?? ""
        if let key {
            let busyKey = scope + "\u{0}" + key
            guard server.busyKeys.withLock({ $0.insert(busyKey).inserted }) else {
                return .answer(.error(
                    ShareError(.badRequest, "a request with this Idempotency-Key is in progress"), status: 409))
            }
            releases.withLock { $0.append { _ = server.busyKeys.withLock { $0.remove(busyKey) } } }
        }
        let check: @Sendable () -> HTTPResponse? = { [self] in
            if let key {
                do {
                    if let stored = try server.idempotency.answer(
                        scope: scope, key: key, maxAge: HTTPServer.idempotencyWindow)
                    {
                        noteShare(stored.shareId)
                        return HTTPResponse(status: 200, headers: [
                            ("Content-Type", "application/json"), ("Location", "/v1/shares/" + stored.shareId),
                            ("Idempotent-Replayed", "true"),
                        ], body: stored.body)
                    }
                } catch {
                    return .error(ShareError(.containerUnavailable, "the idempotency record cannot be read"))
                }
            }
            if let refusal = capacityRefusal(limits, tus: false) { return refusal }
            if let refusal = duplicateRefusal(named, limits) { return refusal }
            guard let resumable else { return nil }
            do {
                try server.uploads.create(resumable.upload)
            } catch {
                return ResumableProtocol.refusal(error as? ShareError ?? ShareError(.io, "\(error)"), resumable.version)
            }
            server.logger.info("http.upload_created", [
                ("upload", .string(resumable.upload.id)), ("length", .int(resumable.upload.length)),
                ("interop", .int(Int64(resumable.version.rawValue))),
            ])
            return nil
        }
        let receive = { [self] () -> Phase in
            if let resumable { return resumableCreation(resumable.upload, resumable.version, resumable.append) }
            do {
                let receiver = try ShareBodyReceiver(
                    directory: server.receiving, kind: kind, head: head, limits: limits)
                countsAsUpload = true
                server.metrics.uploadStarted()
                return .share(receiver)
            } catch {
                return .answer(.error(error as? ShareError ?? ShareError(.io, "\(error)")))
            }
        }
        // A small body that asks for nothing of the ledger before it is read (no key, no digest, no upload to
        // create) is read at once: the loader admits it exactly, with the same 503, once it is in, and the check
        // before the body would cost it a trip to the server's threads and back (a tenth of a small upload's time).
        if key == nil, named == nil, resumable == nil, let length = head.contentLength,
            length <= Self.readAtOnceLimit
        {
            return receive()
        }
        return .admitting(check: check, receive: receive)
    }

    /// The largest body read without its admission checked first (see `createShare`).
    static let readAtOnceLimit: Int64 = 64 << 10

    /// `--duplicates reject`: a body whose digest names content stored within the window is refused before it is read
    /// (422 `ERR_DUPLICATE` naming the original), from the ledger every daemon on it shares.
    private func duplicateRefusal(_ named: DigestFields?, _ limits: LoaderConfiguration) -> HTTPResponse? {
        guard limits.duplicates == .reject, let sha256 = named?.sha256 else { return nil }
        let hex = sha256.map { String(format: "%02x", $0) }.joined()
        let now = LedgerClock.now()
        do {
            guard let origin = try server.spool.ledger.original(
                ofContent: hex, windowStart: now - limits.duplicateWindow.milliseconds,
                reservationsSince: now - ShareLoader.reservationLifetime.milliseconds)
            else { return nil }
            return HTTPIngest.duplicate(of: origin)
        } catch {
            return .error(ShareError(.containerUnavailable, "the ledger cannot be asked for duplicates"), status: 503)
        }
    }

    private func claimUpload(_ id: String) -> Bool {
        let context = context
        let claimed = server.busyUploads.withLock { busy in
            guard busy[id] == nil else { return false }
            busy[id] = context
            return true
        }
        guard claimed else { return false }
        let server = server
        releases.withLock { $0.append { _ = server.busyUploads.withLock { $0.removeValue(forKey: id) } } }
        return true
    }

    private func busy() -> HTTPResponse {
        TusProtocol.refusal(ShareError(.badRequest, "another request is writing this upload"), status: 409)
    }

    private func tusPatch(_ id: String, head: HTTPRequestHead, creation: Bool) -> Phase {
        guard claimUpload(id) else { return .answer(busy()) }
        let now = System.wallClockNanoseconds() / 1_000_000
        let upload = try? server.uploads.load(id)
        switch TusProtocol.beginPatch(upload, head, owner: sourceApp, now: now) {
        case .refuse(let response):
            return .answer(response)
        case .actions(let actions):
            guard let upload else { return .answer(TusProtocol.refusal(ShareError(.notFound, "no such upload"), status: 404)) }
            let receiver = TusReceiver(server: server, upload: upload, file: nil, checksum: nil, creation: creation)
            return .work { await receiver.perform(actions) }
        case .receive(let offset, let limit, let checksum):
            guard let upload else { return .answer(TusProtocol.refusal(ShareError(.notFound, "no such upload"), status: 404)) }
            do {
                let digest = try DigestFields.parse(head["content-digest"], name: "Content-Digest").get()
                let file = try server.uploads.openForAppend(id, at: offset)
                countsAsUpload = true
                server.metrics.uploadStarted()
                return .tus(TusReceiver(
                    server: server, upload: upload, file: file, checksum: checksum, creation: creation, limit: limit,
                    contentDigest: digest))
            } catch {
                return .answer(TusProtocol.refusal(error as? ShareError ?? ShareError(.io, "\(error)")))
            }
        }
    }
}

// MARK: - Work off the connection threads

extension HTTPServer {
    /// `GET /healthz`: the state directory is writable and the ledger answers.
    func health() -> HTTPResponse {
        struct Healthy: Encodable {
            var status = "ok"
        }
        guard System.isWritableDirectory(spool.path(.staging)) else {
            return .error(ShareError(.containerUnavailable, "the state directory is not writable"), status: 503)
        }
        do {
            _ = try spool.ledger.pending()
        } catch {
            return .error(ShareError(.containerUnavailable, "the ledger does not answer"), status: 503)
        }
        return .json(200, Healthy())
    }

    /// `GET /v1/shares/ID`: the share's timeline; a token sees only the shares it uploaded.
    func show(_ id: String, owner: String?) -> HTTPResponse {
        guard let uuid = UUID(uuidString: id), let timeline else {
            return .error(ShareError(.notFound, "no such share"), status: 404)
        }
        do {
            let report = try timeline(spool, uuid.uuidString)
            if configuration.tokens != nil, report.sourceApp != owner {
                return .error(ShareError(.notFound, "no such share"), status: 404)
            }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: report.json)
        } catch let error as ShareError {
            return .error(error, status: error.code == .notFound ? 404 : 503)
        } catch {
            return .error(ShareError(.io, "\(error)"))
        }
    }
}
