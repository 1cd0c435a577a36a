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
/// connection with epoll, so a slow client costs a connection slot (`--max-connections`) and at most one read
/// buffer, never a thread; a connection idle past `--connection-timeout` is closed. Bodies are written to files as
/// they arrive (nothing is buffered whole). When a request needs work that waits (loading and publishing a
/// share, fsyncing a tus upload, reading the ledger) its connection is suspended and the work runs on the
/// server's own threads; the connection is resumed with the answer. The protocol decisions are the pure
/// `HTTPExchange`, `MultipartParser` and `TusProtocol`; this type only moves bytes and performs their actions.
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
    /// Uploads with a PATCH in progress: a second one at the same time is refused (409).
    let busyUploads = Mutex<Set<String>>([])
    /// Idempotency keys whose first request is in progress.
    let busyKeys = Mutex<Set<String>>([])
    private let work: AsyncStream<Job>
    private let submit: AsyncStream<Job>.Continuation
    private let threads: [WorkerThread]

    /// Work for the server's threads: the request, and what to do for it.
    struct Job: Sendable {
        let request: RequestContext
        let task: @Sendable () async -> HTTPResponse
    }

    /// How long an idempotency key is remembered.
    static let idempotencyWindow: Duration = .seconds(24 * 3600)
    /// libmicrohttpd's memory per connection, the most one connection holds; it reads a body up to half of it at a
    /// time. 512 KiB (256 KiB reads) receives a large body with a quarter of the calls of 128 KiB (64 KiB reads),
    /// and costs 16 concurrent uploads 6 MiB more (measured: 55 MiB peak for 16 × 256 MiB).
    static let connectionBuffer = 512 << 10

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
        (work, submit) = AsyncStream.makeStream(of: Job.self)
        threads = (0..<2).map { WorkerThread(name: "sp-http-\($0)") }
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
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.expireLoop() }
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

    /// Hands work to the server's threads and suspends the request's connection until it is done.
    func enqueue(_ request: RequestContext, _ task: @escaping @Sendable () async -> HTTPResponse) {
        request.suspend()
        if case .terminated = submit.yield(Job(request: request, task: task)) {
            request.complete(.error(ShareError(.spoolFull, "the daemon is stopping")))
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
                    !busyUploads.withLock({ $0.contains(id) })
                else { continue }
                try? uploads.remove(id)
                logger.info("http.upload_expired", [("upload", .string(id))])
            }
            try? idempotency.expire(maxAge: Self.idempotencyWindow)
            try? await Task.sleep(for: interval)
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
                UInt32(max(1, server.configuration.maxConnections)), UInt32(max(0, timeout)),
                HTTPServer.connectionBuffer,
                key, certificate,
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
                nil)
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
            let head = HTTPRequestHead(method: method, path: url, headers: Self.headers(of: connection))
            let request = RequestContext(server: self, connection: connection, listener: listener.name, head: head)
            slot.pointee = Unmanaged.passRetained(request).toOpaque()
            return request.begin()
        }
        let request = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        if size.pointee > 0 {
            let count = size.pointee
            size.pointee = 0
            return request.body(UnsafeRawBufferPointer(start: data, count: count))
        }
        return request.bodyEnded()
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
/// `state` are touched only from those callbacks. The answer of suspended work crosses threads through `answer`.
final class RequestContext: @unchecked Sendable {
    private enum Phase {
        /// An answer is ready to queue at the next callback.
        case answer(HTTPResponse)
        /// Work to start when the (empty) body ends.
        case work(@Sendable () async -> HTTPResponse)
        /// Receiving a share's body.
        case share(ShareBodyReceiver)
        /// Receiving a PATCH (or a creation's) body into a tus upload.
        case tus(TusReceiver)
        /// Suspended while work runs.
        case waiting
        /// The response is queued.
        case answered
    }

    private let server: HTTPServer
    private let connection: OpaquePointer
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
    private var releases: [@Sendable () -> Void] = []
    private let answer = Mutex<HTTPResponse?>(nil)

    init(server: HTTPServer, connection: OpaquePointer, listener: String, head: HTTPRequestHead) {
        self.server = server
        self.connection = connection
        self.listener = listener
        self.head = head
    }

    /// The head arrived: decide how the request goes on.
    func begin() -> MHD_Result {
        switch HTTPExchange.begin(head, settings: server.settings) {
        case .respond(let response):
            phase = .answer(response)
        case .serve(let route, let sourceApp, let body):
            self.sourceApp = sourceApp
            phase = phase(for: route, body: body)
        }
        // An answer decided before a body that is on its way goes out now, and the body is not read (the connection
        // then closes); a request without a body is answered after its end, keeping the connection alive.
        let hasBody = head.contentLength.map { $0 > 0 } ?? (head["transfer-encoding"] != nil)
        if hasBody, case .answer(let response) = phase { return queue(response) }
        return .YES
    }

    func body(_ bytes: UnsafeRawBufferPointer) -> MHD_Result {
        bodyBytes += Int64(bytes.count)
        do {
            switch phase {
            case .share(let receiver):
                try receiver.receive(bytes)
            case .tus(let receiver):
                try receiver.receive(bytes)
            default:
                // A body nobody reads (a GET's, or the rest of a refused one): discarded, up to a point.
                discarded += Int64(bytes.count)
                if discarded > Self.discardLimit { return .NO }
            }
        } catch {
            return refuse(error)
        }
        return .YES
    }

    func bodyEnded() -> MHD_Result {
        switch phase {
        case .answer(let response):
            return queue(response)
        case .work(let task):
            phase = .waiting
            server.enqueue(self, task)
            return .YES
        case .share(let receiver):
            let body: ReceivedBody
            do {
                body = try receiver.finish()
            } catch {
                _ = refuse(error)
                return bodyEnded()
            }
            let ingest = HTTPIngest(
                loader: ShareLoader(spool: server.spool, registry: server.registry,
                configuration: server.loaderConfiguration()),
                activation: server.activation)
            let sourceApp = sourceApp ?? body.sourceApp
            let key = head["idempotency-key"]
            let scope = self.sourceApp ?? ""
            let server = server
            phase = .waiting
            let task: @Sendable () async -> HTTPResponse = { [self] in
                let receipt = await ingest.ingest(ingest.providers(body), sourceApp: sourceApp)
                receiver.discard()
                self.noteShare(receipt.shareId)
                let response = HTTPIngest.response(for: receipt)
                if let key, [201, 422].contains(response.status) {
                    let stored = StoredAnswer(shareId: receipt.shareId, status: response.status, body: response.body)
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
            server.enqueue(self, task)
            return .YES
        case .tus(let receiver):
            phase = .waiting
            server.enqueue(self) { [self] in
                let response = await receiver.finish()
                if let shareID = receiver.shareID { self.noteShare(shareID) }
                return response
            }
            return .YES
        case .waiting:
            guard let response = answer.withLock({ $0 }) else { return .YES }
            return queue(response)
        case .answered:
            return .YES
        }
    }

    /// Suspends the connection while work runs (called from the connection's callback).
    func suspend() {
        MHD_suspend_connection(connection)
    }

    /// The work is done: the answer is queued at the callback that follows the resume.
    func complete(_ response: HTTPResponse) {
        answer.withLock { $0 = response }
        MHD_resume_connection(connection)
    }

    /// libmicrohttpd is done with the request (answered, or cut off): what was received and not ingested is
    /// removed, locks are released, and the request's log line is written.
    func ended(cleanly: Bool) {
        switch phase {
        case .share(let receiver): receiver.discard()
        case .tus(let receiver): receiver.abandon()
        default: break
        }
        phase = .answered
        for release in releases { release() }
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
        switch phase {
        case .share(let receiver): receiver.discard()
        case .tus(let receiver): receiver.abandon()
        default: break
        }
        let response: HTTPResponse
        if case .tus = phase {
            response = TusProtocol.refusal(error)
        } else {
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
            let upload: TusUpload
            switch created {
            case .failure(let response): return .answer(response)
            case .success(let new): upload = new
            }
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

    private func createShare(_ kind: HTTPExchange.ShareBody) -> Phase {
        let limits = server.loaderConfiguration()
        if let key = head["idempotency-key"] {
            let scope = sourceApp ?? ""
            do {
                if let stored = try server.idempotency.answer(
                    scope: scope, key: key, maxAge: HTTPServer.idempotencyWindow)
                {
                    noteShare(stored.shareId)
                    return .answer(HTTPResponse(status: 200, headers: [
                        ("Content-Type", "application/json"), ("Location", "/v1/shares/" + stored.shareId),
                        ("Idempotent-Replayed", "true"),
                    ], body: stored.body))
                }
            } catch {
                return .answer(.error(ShareError(.containerUnavailable, "the idempotency record cannot be read")))
            }
            let busyKey = scope + "\u{0}" + key
            guard server.busyKeys.withLock({ $0.insert(busyKey).inserted }) else {
                return .answer(.error(
                    ShareError(.badRequest, "a request with this Idempotency-Key is in progress"), status: 409))
            }
            let server = server
            releases.append { _ = server.busyKeys.withLock { $0.remove(busyKey) } }
        }
        if let refusal = capacityRefusal(limits, tus: false) { return .answer(refusal) }
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

    private func claimUpload(_ id: String) -> Bool {
        guard server.busyUploads.withLock({ $0.insert(id).inserted }) else { return false }
        let server = server
        releases.append { _ = server.busyUploads.withLock { $0.remove(id) } }
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
                let file = try server.uploads.openForAppend(id, at: offset)
                countsAsUpload = true
                server.metrics.uploadStarted()
                return .tus(TusReceiver(
                    server: server, upload: upload, file: file, checksum: checksum, creation: creation, limit: limit))
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
