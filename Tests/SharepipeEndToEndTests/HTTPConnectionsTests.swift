import Foundation
import Glibc
import Testing

/// The front door under hostile and bursty clients: slow headers and slow bodies are cut while other clients upload,
/// one address holds at most its share of connections, the pending limits hold under a burst, and every multipart
/// part is a representation.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct HTTPConnectionsTests {
    /// Trickles heads and bodies from 127.0.0.1 while uploads run from 127.0.0.2 (curl and Python requests);
    /// prints one JSON line: the answers the slow connections got and the uploads' statuses.
    static let flood = #"""
        import json, select, socket, sys, threading, time
        import requests
        from requests.adapters import HTTPAdapter

        host, port, slow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        results = {"slowHeads": [], "slowBodies": [], "uploads": []}
        lock = threading.Lock()

        def answer(sock):
            sock.settimeout(60)
            data = b""
            try:
                while True:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            line = data.split(b"\r\n", 1)[0].decode("latin-1")
            return line.split(" ")[1] if line.startswith("HTTP/") else "closed"

        def trickle(sock, piece):
            # One piece a second until the server says something (or closes), for at most a minute.
            try:
                for i in range(60):
                    readable, _, _ = select.select([sock], [], [], 1.0)
                    if readable:
                        return
                    sock.sendall(piece(i))
            except OSError:
                pass

        def slow_head():
            sock = socket.create_connection((host, port), source_address=("127.0.0.1", 0))
            sock.sendall(b"POST /v1/shares HTTP/1.1\r\nHost: x\r\n")
            trickle(sock, lambda i: b"X-Slow-%d: 1\r\n" % i)
            with lock:
                results["slowHeads"].append(answer(sock))

        def slow_body():
            sock = socket.create_connection((host, port), source_address=("127.0.0.1", 0))
            sock.sendall(b"POST /v1/shares HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                         b"Content-Length: 1000000\r\n\r\n")
            trickle(sock, lambda i: b"x" * 10)
            with lock:
                results["slowBodies"].append(answer(sock))

        class FromSecondAddress(HTTPAdapter):
            def init_poolmanager(self, *args, **kwargs):
                kwargs["source_address"] = ("127.0.0.2", 0)
                super().init_poolmanager(*args, **kwargs)

        def uploads():
            session = requests.Session()
            session.mount("http://", FromSecondAddress())
            for i in range(6):
                started = time.monotonic()
                response = session.post("http://%s:%d/v1/shares" % (host, port), data=b"note %d\n" % i,
                                        headers={"Content-Type": "text/plain"}, timeout=60)
                with lock:
                    results["uploads"].append([response.status_code, time.monotonic() - started])
                time.sleep(1)

        threads = [threading.Thread(target=slow_head) for _ in range(slow)]
        threads += [threading.Thread(target=slow_body) for _ in range(slow)]
        for thread in threads:
            thread.start()
        time.sleep(1)
        uploader = threading.Thread(target=uploads)
        uploader.start()
        for thread in threads + [uploader]:
            thread.join()
        print(json.dumps(results))
        """#

    @Test func slowHeadsAndSlowBodiesAreCutWith408WhileOtherClientsUpload() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            // Fewer connections than the per-client cap; more than the two threads that serve them.
            let daemon = try await sandbox.start(["--processor", "discard", "--header-timeout", "3s"])
            let port = String(daemon.addresses[0].split(separator: ":").last!)
            let python = try await pythonWithClients()
            let script = try writeFile(dir + "/flood.py", Self.flood)
            let flood = try ToolProcess(python, [script, "127.0.0.1", port, "40"])
            // curl uploads from the second address meanwhile, one after the other.
            try await Task.sleep(for: .seconds(2))
            for index in 0..<4 {
                let note = try writeFile(dir + "/note\(index).txt", "curl note \(index)\n")
                let sent = try await curlResponse([
                    "--interface", "127.0.0.2", "--max-time", "60", "-H", "Content-Type: text/plain",
                    "--data-binary", "@" + note, daemon.baseURL + "/v1/shares",
                ])
                #expect(sent.status == 201, "\(sent.body)")
            }
            let result = try await flood.result(timeout: .seconds(180))
            #expect(result.status == 0, "\(result.stderr)")
            let report = try result.json
            let uploads = try #require(report["uploads"] as? [[Double]])
            #expect(uploads.count == 6)
            #expect(uploads.allSatisfy { $0[0] == 201 }, "\(uploads)")
            #expect(uploads.allSatisfy { $0[1] < 20 }, "\(uploads)")
            // Every slow connection is cut; it is told 408 first (a client still sending as the socket closes may see
            // the reset before the answer).
            for kind in ["slowHeads", "slowBodies"] {
                let answers = try #require(report[kind] as? [String])
                #expect(answers.count == 40)
                #expect(answers.allSatisfy { $0 == "408" || $0 == "closed" }, "\(kind): \(answers)")
                #expect(answers.filter { $0 == "408" }.count > 20, "\(kind): \(answers)")
            }
            #expect(try await eventually(.seconds(10)) { sandbox.stagingEntries.isEmpty }, "\(sandbox.stagingEntries)")
            let stopped = try await daemon.stop()
            #expect(stopped.stderr.contains("event=http.deadline_cut"))
        }
    }

    @Test func aSlowHeadOverTLSIsCutAndTLSUploadsGoOn() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let made = try await ToolProcess("/usr/bin/openssl", [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/key.pem", "-out",
                dir + "/cert.pem", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
            ]).result()
            #expect(made.status == 0, "\(made.stderr)")
            let daemon = try await sandbox.start([
                "--processor", "discard", "--tls-cert", dir + "/cert.pem", "--tls-key", dir + "/key.pem",
                "--header-timeout", "2s",
            ])
            let port = String(daemon.addresses[0].split(separator: ":").last!)
            // A TLS client sends half a head and waits (up to a minute) for the server to end the connection.
            let script = try writeFile(dir + "/slow_tls.py", """
                import socket, ssl, sys
                context = ssl.create_default_context(cafile=sys.argv[2])
                raw = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
                sock = context.wrap_socket(raw, server_hostname="localhost")
                sock.sendall(b"POST /v1/shares HTTP/1.1\\r\\nHost: localhost\\r\\n")
                sock.settimeout(60)
                try:
                    print("closed" if sock.recv(4096) == b"" else "answered")
                except TimeoutError:
                    print("still open")
                except (OSError, ssl.SSLError):
                    print("closed")
                """)
            let python = try await pythonWithClients()
            let slow = try ToolProcess(python, [script, port, dir + "/cert.pem"])
            let sent = try await curlResponse([
                "--cacert", dir + "/cert.pem", "--data-binary", "@" + fixturePath("files/notes.txt"),
                "https://localhost:\(port)/v1/shares",
            ])
            #expect(sent.status == 201, "\(sent.body)")
            let result = try await slow.result(timeout: .seconds(120))
            #expect(result.stdout == "closed\n", "\(result.stdout) \(result.stderr)")
            let stopped = try await daemon.stop()
            #expect(stopped.stderr.contains("event=http.deadline_cut"))
        }
    }

    @Test func oneAddressHoldsAtMostItsShareOfConnectionsAndAnIdleOneIsClosed() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start([
                "--processor", "discard", "--max-connections-per-client", "4", "--connection-timeout", "3s",
            ])
            let port = UInt16(daemon.addresses[0].split(separator: ":").last!)!
            var held: [Int32] = []
            defer { for fd in held { close(fd) } }
            for _ in 0..<4 { held.append(try connectLoopback(port: port, from: "127.0.0.1")) }
            let fifth = try connectLoopback(port: port, from: "127.0.0.1")
            held.append(fifth)
            #expect(readUntilClosed(fifth, seconds: 30) != 1, "the fifth connection is closed at once, unanswered")
            let note = fixturePath("files/notes.txt")
            let other = try await curlResponse([
                "--interface", "127.0.0.2", "--data-binary", "@" + note, daemon.baseURL + "/v1/shares",
            ])
            #expect(other.status == 201, "\(other.body)")
            // The four idle ones are closed after --connection-timeout; then the first address is served again.
            #expect(readUntilClosed(held[0], seconds: 30) != 1)
            let again = try await curlResponse(["--data-binary", "@" + note, daemon.baseURL + "/v1/shares"])
            #expect(again.status == 201, "\(again.body)")
            _ = try await daemon.stop()
        }
    }

    /// Many requests on kept-alive connections from two Python threads (GET /healthz and small uploads).
    static let churn = #"""
        import sys, threading
        import requests

        url, rounds = sys.argv[1], int(sys.argv[2])
        bad = []

        def client(index):
            session = requests.Session()
            for i in range(rounds):
                if i % 10 == 0:
                    status = session.post(url + "/v1/shares", data=b"churn %d %d\n" % (index, i)).status_code
                    ok = status == 201
                else:
                    ok = session.get(url + "/healthz").status_code == 200
                if not ok:
                    bad.append(i)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(len(bad))
        """#

    /// The daemon's resident memory in KiB.
    private static func residentKiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
        }
        return 0
    }

    /// A request holds nothing once it is answered: after a warm-up, a second batch of 12,000 requests leaves the
    /// daemon's memory where the first one took it (every finished request was kept for the daemon's life once:
    /// 1.3 KB a request, 20 KB an upload, some 40 MB a batch). The first batch may still grow caches and the
    /// allocator's arenas (by 10 MiB in a loaded CI run); the second must not.
    @Test func servedRequestsLeaveNoMemoryBehind() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start(["--processor", "discard"])
            let python = try await pythonWithClients()
            let script = try writeFile(dir + "/churn.py", Self.churn)
            var resident: [Int] = []
            for rounds in ["2000", "6000", "6000"] {
                let batch = try await ToolProcess(python, [script, daemon.baseURL, rounds])
                    .result(timeout: .seconds(240))
                #expect(batch.stdout == "0\n", "\(batch.stdout) \(batch.stderr)")
                resident.append(Self.residentKiB(daemon.process.pid))
            }
            #expect(
                resident[1] > 0 && resident[2] - resident[1] < 8 << 10, "resident KiB after each batch: \(resident)")
            _ = try await daemon.stop()
        }
    }

    /// Each request right after the answer to the one before, on a new connection: a repeated `Idempotency-Key`
    /// is replayed (200), never "in progress" (409), and a tus upload's next `PATCH` is taken, never "busy" (409).
    static let backToBack = #"""
        import sys, uuid
        import requests

        base, rounds = sys.argv[1], int(sys.argv[2])
        seen = []
        for i in range(rounds):
            key = str(uuid.uuid4())
            for _ in range(2):
                seen.append(requests.post(base + "/v1/shares", data=b"once %d\n" % i,
                                          headers={"Idempotency-Key": key}).status_code)
        size = 64 * 1024
        made = requests.post(base + "/v1/uploads/", headers={
            "Tus-Resumable": "1.0.0", "Upload-Length": str(size * rounds), "Upload-Metadata": "filename YS5iaW4="})
        seen.append(made.status_code)
        location = made.headers["Location"]
        url = location if location.startswith("http") else base + location
        for i in range(rounds):
            seen.append(requests.patch(url, data=b"x" * size, headers={
                "Tus-Resumable": "1.0.0", "Upload-Offset": str(i * size),
                "Content-Type": "application/offset+octet-stream"}).status_code)
        print(" ".join(str(status) for status in seen))
        """#

    @Test func theNextRequestRightAfterAnAnswerFindsNothingInProgress() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start(["--processor", "discard"])
            let python = try await pythonWithClients()
            let script = try writeFile(dir + "/back-to-back.py", Self.backToBack)
            let rounds = 100
            let result = try await ToolProcess(python, [script, daemon.baseURL, String(rounds)])
                .result(timeout: .seconds(240))
            let statuses = result.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { Int($0) ?? 0 }
            let expected = Array(repeating: [201, 200], count: rounds).flatMap { $0 } + [201]
                + Array(repeating: 204, count: rounds - 1) + [204]
            #expect(statuses == expected, "\(result.stdout) \(result.stderr)")
            _ = try await daemon.stop()
        }
    }

    @Test func theMaxPendingSharesLimitHoldsExactlyUnderABurst() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            // The processor holds each share, so a published share stays pending.
            let daemon = try await sandbox.start([
                "--max-pending-shares", "2", "--processor", "exec", "--exec", "sleep 30", "--exec-timeout", "60000",
            ])
            let note = fixturePath("files/notes.txt")
            let burst = try (0..<10).map { _ in
                try ToolProcess("/usr/bin/curl", [
                    "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary", "@" + note,
                    daemon.baseURL + "/v1/shares",
                ])
            }
            var statuses: [String] = []
            for upload in burst { statuses.append(try await upload.result().stdout) }
            #expect(statuses.filter { $0 == "201" }.count == 2, "\(statuses)")
            #expect(statuses.filter { $0 == "503" }.count == 8, "\(statuses)")
            _ = try await daemon.stop()
        }
    }

    @Test func twoPartsOfOneFieldWithTheSameTypeAreTwoRepresentationsTheSecondTheFallback() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start()
            let png = fixturePath("files/image.png")
            let notPNG = try writeFile(dir + "/broken.png", "this is text, not a PNG\n")
            let response = try await curlResponse([
                "-F", "photo=@\(notPNG);type=image/png", "-F", "photo=@\(png);type=image/png",
                daemon.baseURL + "/v1/shares",
            ])
            #expect(response.status == 201, "\(response.body)")
            let attachment = try #require((try response.json["attachments"] as? [[String: Any]])?.first)
            #expect(attachment["declaredTypes"] as? [String] == ["public.png", "public.png"])
            #expect(attachment["typeIdentifier"] as? String == "public.png")
            let attempts = try #require(attachment["attempts"] as? [[String: Any]])
            #expect(attempts.map { $0["code"] as? String } == ["ERR_TYPE_MISMATCH", nil])
            let expected = try fixtureData("files/image.png")
            #expect(try await eventually(.seconds(30)) { Array(sandbox.storedFiles.values) == [expected] })
            #expect(sandbox.stagingEntries.isEmpty)
            _ = try await daemon.stop()
        }
    }
}

/// A TCP connection to the loopback port from a given source address.
private func connectLoopback(port: UInt16, from source: String) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SupportError("socket: errno \(errno)") }
    func address(_ host: String, _ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        return address
    }
    var local = address(source, 0)
    var remote = address("127.0.0.1", port)
    let bound = withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    let connected = withUnsafePointer(to: &remote) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0, connected == 0 else {
        close(fd)
        throw SupportError("connect from \(source): errno \(errno)")
    }
    return fd
}

/// Reads until the peer closes (0), an error (-1), or `seconds` pass with the connection open (1).
private func readUntilClosed(_ fd: Int32, seconds: Int) -> Int {
    var timeout = timeval(tv_sec: seconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count == 0 { return 0 }
        if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1 }
    }
}
