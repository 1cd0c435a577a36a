import Foundation
import Testing

/// RFC 9530 digests on every upload route: a body that does not match its `Repr-Digest`/`Content-Digest` is refused
/// with nothing ingested, `Want-Repr-Digest` is answered, and `--duplicates reject` refuses a known digest before
/// the body is read (also from a second daemon on one PostgreSQL ledger).
@Suite(.serialized, .timeLimit(.minutes(10)))
struct HTTPDigestTests {
    /// `sha-256=:BASE64:` of a file.
    static func reprDigest(_ path: String) async throws -> String {
        let out = path + ".sum"
        let made = try await ToolProcess("/usr/bin/openssl", ["dgst", "-sha256", "-binary", "-out", out, path]).result()
        #expect(made.status == 0)
        return "sha-256=:" + (try #require(FileManager.default.contents(atPath: out))).base64EncodedString() + ":"
    }

    static let wrong = "sha-256=:" + Data(repeating: 7, count: 32).base64EncodedString() + ":"

    static func code(_ response: CurlResponse) throws -> String? {
        (try response.json["error"] as? [String: Any])?["code"] as? String
    }

    @Test func everyRouteVerifiesDigestsAndAnswersWantReprDigest() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start()
            let file = try writeFile(dir + "/photo.bin", randomBytes(300_000))
            let digest = try await Self.reprDigest(file)
            let shares = daemon.baseURL + "/v1/shares"

            let plain = try await curlResponse([
                "-H", "Repr-Digest: " + digest, "-H", "Want-Repr-Digest: sha-256=5", "--data-binary", "@" + file,
                shares,
            ])
            #expect(plain.status == 201)
            #expect(plain.headers["repr-digest"] == digest)
            let body = ["--data-binary", "@" + file, shares]
            let badPlain = try await curlResponse(["-H", "Content-Digest: " + Self.wrong] + body)
            #expect(badPlain.status == 400)
            #expect(try Self.code(badPlain) == "ERR_BAD_REQUEST")
            let malformed = try await curlResponse(["-H", "Repr-Digest: sha-256=abc"] + body)
            #expect(malformed.status == 400)
            let badForm = try await curlResponse(
                ["-H", "Content-Digest: " + Self.wrong, "-F", "photo=@" + file, shares])
            #expect(badForm.status == 400)

            // tus: a PATCH whose Content-Digest does not match appends nothing.
            let tus = ["-H", "Tus-Resumable: 1.0.0"]
            let created = try await curlResponse(tus + [
                "-X", "POST", "-H", "Upload-Length: 300000", "-H", "Repr-Digest: " + digest, "-H",
                "Want-Repr-Digest: sha-256=1", daemon.baseURL + "/v1/uploads/",
            ])
            #expect(created.status == 201)
            let location = daemon.baseURL + (try #require(created.headers["location"]))
            let patch = tus + [
                "-X", "PATCH", "-H", "Content-Type: application/offset+octet-stream", "-H", "Upload-Offset: 0",
                "--data-binary", "@" + file,
            ]
            let badPatch = try await curlResponse(patch + ["-H", "Content-Digest: " + Self.wrong, location])
            #expect(badPatch.status == 400)
            #expect(try await curlResponse(tus + ["-I", location]).headers["upload-offset"] == "0")
            let goodPatch = try await curlResponse(patch + ["-H", "Content-Digest: " + digest, location])
            #expect(goodPatch.status == 204)
            #expect(goodPatch.headers["repr-digest"] == digest)

            // Resumable: the Repr-Digest of the whole upload is checked when it completes.
            let resumable = ["-H", "Upload-Draft-Interop-Version: 8", "-H", "Upload-Complete: ?1"]
            let good = try await curlResponse(resumable + [
                "-H", "Repr-Digest: " + digest, "-H", "Want-Repr-Digest: sha-256=1",
            ] + body)
            #expect(good.status == 201)
            #expect(good.headers["repr-digest"] == digest)
            #expect(good.headers["upload-complete"] == "?1")
            let stored = Self.storedCount(sandbox)
            let bad = try await curlResponse(resumable + ["-H", "Repr-Digest: " + Self.wrong] + body)
            #expect(bad.status == 400)
            #expect(try Self.code(bad) == "ERR_BAD_REQUEST")
            try await Task.sleep(for: .seconds(2))
            #expect(Self.storedCount(sandbox) == stored)
            _ = try await daemon.stop()
        }
    }

    static func storedCount(_ sandbox: HTTPSandbox) -> Int {
        httpDirectoryNames(sandbox.output).reduce(0) { $0 + httpDirectoryNames(sandbox.output + "/" + $1).count }
    }

    /// Sends a request's head only (its body is never sent) and returns the status line and the response: a
    /// refusal before the body comes back although the client sent nothing of it.
    static func headOnly(_ address: String, _ headers: [String]) async throws -> String {
        let python = try await pythonWithClients()
        let script = """
            import socket, sys
            host, port = sys.argv[1].rsplit(":", 1)
            s = socket.create_connection((host, int(port)), timeout=60)
            s.sendall(("POST /v1/shares HTTP/1.1\\r\\nHost: x\\r\\n" + "".join(h + "\\r\\n" for h in sys.argv[2:])
                       + "\\r\\n").encode())
            data = b""
            while b"\\r\\n\\r\\n" not in data or data.startswith(b"HTTP/1.1 1"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                if data.startswith(b"HTTP/1.1 1") and data.count(b"\\r\\n\\r\\n") >= 2:
                    break
            s.settimeout(2)
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except socket.timeout:
                pass
            print(data.decode("latin-1"))
            """
        let result = try await ToolProcess(python, ["-c", script, address] + headers).result()
        return result.stdout
    }

    @Test func aKnownDigestIsRefusedBeforeItsBodyWithDuplicatesReject() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start(["--duplicates", "reject"])
            let file = try writeFile(dir + "/video.bin", randomBytes(2 << 20))
            let digest = try await Self.reprDigest(file)
            let first = try await curlResponse(["--data-binary", "@" + file, daemon.baseURL + "/v1/shares"])
            #expect(first.status == 201)
            let original = try #require(try first.json["shareId"] as? String)
            for extra in [[String](), ["Upload-Draft-Interop-Version: 6", "Upload-Complete: ?1"]] {
                let answer = try await Self.headOnly(
                    daemon.addresses[0], ["Content-Length: \(2 << 20)", "Repr-Digest: " + digest] + extra)
                #expect(answer.hasPrefix("HTTP/1.1 422"), "\(answer)")
                #expect(answer.contains("ERR_DUPLICATE"))
                #expect(answer.contains(original), "\(answer)")
                #expect(!answer.contains("104 Upload Resumption Supported"))
            }
            #expect(httpDirectoryNames(sandbox.state + "/uploads").isEmpty)
            _ = try await daemon.stop()
        }
    }

    @Test(.enabled(
        if: DuplicateCommandTests.postgres != nil || DuplicateCommandTests.postgresRequired,
        "SHAREPIPE_TEST_PG is unset"))
    func aDigestKnownToAnotherDaemonOnTheLedgerIsRefusedBeforeItsBody() async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try ClusterTests.freshDatabase()
            let sandboxes = [HTTPSandbox(root: dir + "/a"), HTTPSandbox(root: dir + "/b")]
            var daemons: [HTTPDaemon] = []
            for sandbox in sandboxes {
                daemons.append(try await sandbox.start(["--ledger", ledger, "--duplicates", "reject"]))
            }
            let file = try writeFile(dir + "/video.bin", randomBytes(1 << 20))
            let first = try await curlResponse(["--data-binary", "@" + file, daemons[0].baseURL + "/v1/shares"])
            #expect(first.status == 201)
            let original = try #require(try first.json["shareId"] as? String)
            let answer = try await Self.headOnly(
                daemons[1].addresses[0],
                ["Content-Length: \(1 << 20)", "Repr-Digest: " + (try await Self.reprDigest(file))])
            #expect(answer.hasPrefix("HTTP/1.1 422"), "\(answer)")
            #expect(answer.contains(original), "\(answer)")
            for daemon in daemons { _ = try await daemon.stop() }
        }
    }
}
