import Foundation
import Glibc
import Testing

/// `daemon --listen` driven by curl: multipart with several representations, raw and chunked bodies, slow clients,
/// limits, tokens, TLS, unix sockets, idempotency, back-pressure, and a kill -9 in the middle of an upload.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct HTTPIngestTests {
    @Test func multipartWithSeveralRepresentationsFallsBackInFidelityOrderAndIsStored() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start()
            let png = fixturePath("files/image.png")
            let share = #"{"sourceApp": "com.example.scanner", "attachments": {"photo": {"types": ["public.jpeg", "public.png"], "suggestedName": "IMG_1.png"}}}"#
            let response = try await curlResponse([
                "-F", "share=\(share);type=application/json",
                "-F", "photo=@\(png);filename=a.jpg", "-F", "photo=@\(png);filename=a.png;type=image/png",
                "-F", "notes=@\(fixturePath("files/notes.txt"))",
                "-F", "comment=not a file",
                daemon.baseURL + "/v1/shares",
            ])
            #expect(response.status == 201, "\(response.body)")
            let receipt = try response.json
            let shareID = try #require(receipt["shareId"] as? String)
            #expect(response.headers["location"] == "/v1/shares/" + shareID)
            #expect(receipt["status"] as? String == "complete")
            let attachments = try #require(receipt["attachments"] as? [[String: Any]])
            #expect(attachments.count == 2)
            #expect(attachments[0]["declaredTypes"] as? [String] == ["public.jpeg", "public.png"])
            #expect(attachments[0]["typeIdentifier"] as? String == "public.png")
            #expect(attachments[0]["suggestedName"] as? String == "IMG_1.png")
            let attempts = try #require(attachments[0]["attempts"] as? [[String: Any]])
            #expect(attempts.map { $0["type"] as? String } == ["public.jpeg", "public.png"])
            #expect(attempts.first?["code"] as? String == "ERR_TYPE_MISMATCH")
            #expect(attachments[1]["typeIdentifier"] as? String == "public.plain-text")

            let shown = try await curlResponse([daemon.baseURL + "/v1/shares/" + shareID])
            #expect(shown.status == 200)
            #expect(try shown.json["shareId"] as? String == shareID)
            #expect(try shown.json["sourceApp"] as? String == "com.example.scanner")
            let expected = [try fixtureData("files/image.png"), try fixtureData("files/notes.txt")]
            #expect(try await eventually(.seconds(30)) { Set(sandbox.storedFiles.values) == Set(expected) })
            #expect(sandbox.stagingEntries.isEmpty)
            _ = try await daemon.stop()
        }
    }

    @Test func rawBodyTakesItsTypeAndNameFromTheHeadersAsABackgroundURLSessionSendsIt() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start()
            let photo = fixturePath("files/photo.jpg")
            let named = try await curlResponse([
                "--data-binary", "@" + photo, "-H", "Content-Type: image/jpeg",
                "-H", "Content-Disposition: attachment; filename=\"x.jpg\"; filename*=UTF-8''%C3%A9t%C3%A9.jpg",
                daemon.baseURL + "/v1/shares",
            ])
            #expect(named.status == 201, "\(named.body)")
            let attachment = try #require((try named.json["attachments"] as? [[String: Any]])?.first)
            #expect(attachment["typeIdentifier"] as? String == "public.jpeg")
            #expect(attachment["suggestedName"] as? String == "été.jpg")
            #expect(attachment["sha256"] as? String == (try await sha256(ofFile: photo)))

            let typed = try await curlResponse([
                "--data-binary", "@" + fixturePath("files/document.pdf"), "-H", "Sharepipe-Type: com.adobe.pdf",
                daemon.baseURL + "/v1/shares",
            ])
            #expect(typed.status == 201)
            #expect((try typed.json["attachments"] as? [[String: Any]])?.first?["typeIdentifier"] as? String
                == "com.adobe.pdf")

            // Chunked: no Content-Length, counted as it arrives.
            let bytes = randomBytes(3 << 20)
            let file = try writeFile(dir + "/random.bin", bytes)
            let chunked = try await curlResponse([
                "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + file, daemon.baseURL + "/v1/shares",
            ])
            #expect(chunked.status == 201)
            let copied = try #require((try chunked.json["attachments"] as? [[String: Any]])?.first)
            #expect(copied["bytes"] as? Int == bytes.count)
            #expect(copied["sha256"] as? String == (try await sha256(ofFile: file)))
            _ = try await daemon.stop()
        }
    }

    /// A share published over HTTP is processed at once, not when the daemon's consumer next looks at `incoming`
    /// by itself (every 5 s): the publish wakes it, as an inbox publish does. Measured on the file system's clock:
    /// the stored file is the copy (a second link, so its mtime is when the body was written), its output folder's
    /// mtime is when the processor stored it.
    @Test func aShareUploadedOverHTTPIsProcessedAtOnce() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start()
            let response = try await curlResponse([
                "--data-binary", "@" + fixturePath("files/photo.jpg"), "-H", "Content-Type: image/jpeg",
                "-H", "Content-Disposition: attachment; filename=\"now.jpg\"", daemon.baseURL + "/v1/shares",
            ])
            #expect(response.status == 201, "\(response.body)")
            #expect(try await eventually(.seconds(30)) { sandbox.storedFiles.count == 1 })
            let stored = try #require(sandbox.storedFiles.keys.first)
            let group = sandbox.output + "/" + stored.split(separator: "/")[0]
            let latency = try modificationTime(group).timeIntervalSince(modificationTime(sandbox.output + "/" + stored))
            #expect(latency < 2, "stored \(latency) s after the body was written")
            _ = try await daemon.stop()
        }
    }

    /// The received body is adopted as the share's copy: the digest computed while receiving is the stored file's,
    /// the stored file has a single name, and a fallback to the body's next declared type still finds the bytes.
    @Test func aReceivedBodyIsTheCopyWithItsDigestFromTheReceiveAndFallsBackLikeAnyProvider() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start()
            let bytes = randomBytes(20 << 20 + 12345)
            let file = try writeFile(dir + "/large.bin", bytes)
            let large = try await curlResponse([
                "--data-binary", "@" + file, "-H", "Content-Type: application/octet-stream",
                "-H", "Content-Disposition: attachment; filename=large.bin", daemon.baseURL + "/v1/shares",
            ])
            #expect(large.status == 201, "\(large.body)")
            let copied = try #require((try large.json["attachments"] as? [[String: Any]])?.first)
            #expect(copied["bytes"] as? Int == bytes.count)
            #expect(copied["sha256"] as? String == (try await sha256(ofFile: file)))

            let fallback = try await curlResponse([
                "--data-binary", "plain text, not a JPEG", "-H", "Sharepipe-Type: public.jpeg, public.plain-text",
                daemon.baseURL + "/v1/shares",
            ])
            #expect(fallback.status == 201, "\(fallback.body)")
            let text = try #require((try fallback.json["attachments"] as? [[String: Any]])?.first)
            #expect(text["typeIdentifier"] as? String == "public.plain-text")
            #expect((text["attempts"] as? [[String: Any]])?.first?["code"] as? String == "ERR_TYPE_MISMATCH")

            let expected: Set<[UInt8]> = [bytes, Array("plain text, not a JPEG".utf8)]
            #expect(try await eventually(.seconds(60)) { Set(sandbox.storedFiles.values) == expected })
            for name in sandbox.storedFiles.keys {
                var status = stat()
                #expect(lstat(sandbox.output + "/" + name, &status) == 0)
                #expect(status.st_nlink == 1, "\(name) has \(status.st_nlink) links")
            }
            #expect(sandbox.stagingEntries.isEmpty)
            _ = try await daemon.stop()
        }
    }

    /// A body is received into an emptied file kept from an earlier HTTP share (no new inode, none freed), and its
    /// copy holds exactly its own bytes even when that file was longer: the third of three uploads in a row is
    /// written into the first one's inode (the first share's copy, emptied and kept once processed, then left
    /// unused by the second share's adopted copy).
    @Test func aBodyIsWrittenIntoAKeptEmptiedFileAndHoldsOnlyItsOwnBytes() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let log = dir + "/exec.log"
            let daemon = try await sandbox.start([
                "--processor", "exec", "--exec",
                #"printf '%s %s %s\n' "$(stat -c '%i %s' "$SHAREPIPE_FILE")" "$(sha256sum < "$SHAREPIPE_FILE" | cut -c1-64)" "$SHAREPIPE_SHARE_ID" >> "#
                    + log,
            ])
            let bodies = [randomBytes(6000), randomBytes(50), randomBytes(100)]
            var lines: [[Substring]] = []
            for (index, body) in bodies.enumerated() {
                let file = try writeFile(dir + "/body-\(index).bin", body)
                let response = try await curlResponse([
                    "--data-binary", "@" + file, "-H", "Content-Type: application/octet-stream",
                    daemon.baseURL + "/v1/shares",
                ])
                #expect(response.status == 201, "\(response.body)")
                let shareID = try #require(try response.json["shareId"] as? String)
                // Processed (and its directory emptied and kept) before the next upload.
                #expect(try await eventually(.seconds(30)) {
                    let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                    return text.contains(shareID)
                        && httpDirectoryNames(sandbox.state + "/processing").isEmpty
                })
                lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
                    .map { $0.split(separator: " ") }
                #expect(lines.count == index + 1)
                let fields = try #require(lines.last)
                #expect(fields.count == 4)
                #expect(fields[1] == "\(body.count)", "the copy holds \(fields[1]) bytes, not \(body.count)")
                #expect(fields[2] == (try await sha256(ofFile: file)))
            }
            #expect(lines.count == 3)
            if lines.count == 3 {
                #expect(lines[2][0] == lines[0][0], "the third body got a new inode: \(lines)")
            }
            #expect(sandbox.stagingEntries.isEmpty)
            _ = try await daemon.stop()
        }
    }

    @Test func aRejectedShareIs422WithItsReceiptAndTheLimitsAre413BeforeOrWhileReceiving() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start(["--max-file-size", "64K", "--max-attachments", "2"])
            let lie = try await curlResponse([
                "--data-binary", "plain text, not a JPEG", "-H", "Sharepipe-Type: public.jpeg",
                daemon.baseURL + "/v1/shares",
            ])
            #expect(lie.status == 422)
            #expect(try lie.json["status"] as? String == "rejected")
            #expect(((try lie.json["attachments"] as? [[String: Any]])?.first?["error"] as? [String: Any])?["code"]
                as? String == "ERR_TYPE_MISMATCH")
            #expect(lie.headers["location"]?.hasPrefix("/v1/shares/") == true)

            let big = try writeFile(dir + "/big.bin", randomBytes(1 << 20))
            let early = try await curlResponse(
                ["--data-binary", "@" + big, daemon.baseURL + "/v1/shares"], refusedWhileSending: true)
            #expect(early.status == 413)
            #expect((try early.json["error"] as? [String: Any])?["code"] as? String == "ERR_TOO_LARGE")
            let whileReceiving = try await curlResponse([
                "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + big, daemon.baseURL + "/v1/shares",
            ], refusedWhileSending: true)
            #expect(whileReceiving.status == 413)
            #expect((try whileReceiving.json["error"] as? [String: Any])?["code"] as? String == "ERR_TOO_LARGE")
            let notes = fixturePath("files/notes.txt")
            let many = try await curlResponse([
                "-F", "a=@" + notes, "-F", "b=@" + notes, "-F", "c=@" + notes, daemon.baseURL + "/v1/shares",
            ])
            #expect(many.status == 413)
            #expect((try many.json["error"] as? [String: Any])?["code"] as? String == "ERR_TOO_MANY_ATTACHMENTS")
            let malformed = try await curlResponse([
                "-H", "Content-Type: multipart/form-data; boundary=XYZ", "--data-binary",
                "--XYZ\r\nContent-Disposition: form-data; name=\"a\"; filename=\"a.txt\"\r\n\r\nhello",
                daemon.baseURL + "/v1/shares",
            ])
            #expect(malformed.status == 400)
            #expect((try malformed.json["error"] as? [String: Any])?["code"] as? String == "ERR_BAD_REQUEST")

            let missing = try await curlResponse([daemon.baseURL + "/v1/shares/" + UUID().uuidString])
            #expect(missing.status == 404)
            #expect((try missing.json["error"] as? [String: Any])?["code"] as? String == "ERR_NOT_FOUND")
            #expect(try await curlResponse([daemon.baseURL + "/nowhere"]).status == 404)
            let wrongMethod = try await curlResponse(["-X", "DELETE", daemon.baseURL + "/v1/shares"])
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.headers["allow"] == "POST")
            #expect(try await eventually(.seconds(10)) { sandbox.stagingEntries.isEmpty })
            _ = try await daemon.stop()
        }
    }

    @Test func aFullSpoolIs503WithRetryAfterBeforeTheBodyAndHealthzSaysOK() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start(["--min-free", "1000T"])
            let health = try await curlResponse([daemon.baseURL + "/healthz"])
            #expect(health.status == 200)
            let full = try await curlResponse([
                "--data-binary", "@" + fixturePath("files/notes.txt"), daemon.baseURL + "/v1/shares",
            ])
            #expect(full.status == 503)
            #expect(full.headers["retry-after"] == "5")
            #expect((try full.json["error"] as? [String: Any])?["code"] as? String == "ERR_SPOOL_FULL")
            #expect(httpDirectoryNames(sandbox.state + "/incoming").isEmpty)
            _ = try await daemon.stop()
        }
    }

    @Test func tokensNameTheSourceAppAndAreRequiredAndNeverLogged() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let tokens = try writeFile(dir + "/tokens", "# who may upload\nphone TOPSECRET-token-1\nscanner TOPSECRET-2\n")
            chmod(tokens, 0o644)
            let loose = try await runSharepipe([
                "daemon", "--inbox", sandbox.inbox, "--state", sandbox.state, "--listen", "127.0.0.1:0",
                "--tokens", tokens,
            ])
            #expect(loose.status == 2)
            #expect(loose.stderr.contains("mode 644"))
            let open = try await runSharepipe([
                "daemon", "--inbox", sandbox.inbox, "--state", sandbox.state, "--listen", "0.0.0.0:0", "--json",
            ])
            #expect(open.status == 2)
            #expect(open.stdout.contains("ERR_USAGE"))
            chmod(tokens, 0o600)
            let daemon = try await sandbox.start(["--tokens", tokens], listen: ["0.0.0.0:0"])
            let url = "http://127.0.0.1:" + String(daemon.addresses[0].split(separator: ":").last!)
            let note = fixturePath("files/notes.txt")
            let anonymous = try await curlResponse(["--data-binary", "@" + note, url + "/v1/shares"])
            #expect(anonymous.status == 401)
            #expect((try anonymous.json["error"] as? [String: Any])?["code"] as? String == "ERR_UNAUTHORIZED")
            let wrong = try await curlResponse([
                "-H", "Authorization: Bearer TOPSECRET-token-2", "--data-binary", "@" + note, url + "/v1/shares",
            ])
            #expect(wrong.status == 401)
            #expect(try await curlResponse([url + "/healthz"]).status == 200)
            let sent = try await curlResponse([
                "-H", "Authorization: Bearer TOPSECRET-token-1", "--data-binary", "@" + note, url + "/v1/shares",
            ])
            #expect(sent.status == 201)
            let shareID = try #require(try sent.json["shareId"] as? String)
            let shown = try await curlResponse([
                "-H", "Authorization: Bearer TOPSECRET-token-1", url + "/v1/shares/" + shareID,
            ])
            #expect(try shown.json["sourceApp"] as? String == "phone")
            let otherToken = try await curlResponse([
                "-H", "Authorization: Bearer TOPSECRET-2", url + "/v1/shares/" + shareID,
            ])
            #expect(otherToken.status == 404)
            let log = try await daemon.stop().stderr
            #expect(log.contains("event=http.request") && log.contains("token=phone") && log.contains("status=201"))
            #expect(!log.contains("TOPSECRET"))
        }
    }

    @Test func theSameIdempotencyKeyGivesTheFirstReceiptAgainAndIngestsOnce() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start(["--processor", "discard"])
            let arguments = [
                "-H", "Idempotency-Key: upload-42", "--data-binary", "@" + fixturePath("files/notes.txt"),
                daemon.baseURL + "/v1/shares",
            ]
            let first = try await curlResponse(arguments)
            let second = try await curlResponse(arguments)
            #expect(first.status == 201)
            #expect(second.status == 200)
            #expect(second.body == first.body)
            #expect(second.headers["location"] == first.headers["location"])
            let other = try await curlResponse([
                "-H", "Idempotency-Key: upload-43", "--data-binary", "@" + fixturePath("files/notes.txt"),
                daemon.baseURL + "/v1/shares",
            ])
            #expect(other.status == 201)
            #expect(try other.json["shareId"] as? String != (try first.json["shareId"] as? String))
            _ = try await daemon.stop()
            let listed = try await runSharepipe(["ls", "--state", sandbox.state, "--json"])
            #expect(listed.stdout.components(separatedBy: "\"shareId\"").count - 1 <= 2)
        }
    }

    @Test func tlsWithASelfSignedCertificateAndAUnixSocketListenerServeTheSameAPI() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let made = try await ToolProcess("/usr/bin/openssl", [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/key.pem", "-out",
                dir + "/cert.pem", "-days", "1", "-subj", "/CN=localhost", "-addext",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ]).result()
            #expect(made.status == 0, "\(made.stderr)")
            let socket = dir + "/http.sock"
            let daemon = try await sandbox.start(
                ["--tls-cert", dir + "/cert.pem", "--tls-key", dir + "/key.pem"],
                listen: ["127.0.0.1:0", "unix:" + socket])
            let port = String(daemon.addresses[0].split(separator: ":").last!)
            let secure = try await curlResponse([
                "--cacert", dir + "/cert.pem", "--data-binary", "@" + fixturePath("files/notes.txt"),
                "https://localhost:\(port)/v1/shares",
            ])
            #expect(secure.status == 201)
            let plain = try await curl(["http://127.0.0.1:\(port)/healthz"])
            #expect(plain.status != 0 || !plain.stdout.contains("\"ok\""))
            let local = try await curlResponse([
                "--unix-socket", socket, "--cacert", dir + "/cert.pem", "https://localhost/healthz",
            ])
            #expect(local.status == 200)
            _ = try await daemon.stop()
            #expect(!FileManager.default.fileExists(atPath: socket))
        }
    }

    @Test func aSlowClientDoesNotHoldUpOthersAndConnectionsAreKeptAlive() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start(["--processor", "discard"])
            // 1 MiB at 64 KiB/s: the slow upload lasts 16 s, far longer than three small requests take even on a
            // loaded CI machine (a 4 s upload was outlasted once by fsyncs queued behind a parallel test run).
            let file = try writeFile(dir + "/slow.bin", randomBytes(1 << 20))
            let slow = try ToolProcess("/usr/bin/curl", [
                "-sS", "--limit-rate", "64K", "--data-binary", "@" + file, daemon.baseURL + "/v1/shares",
            ])
            let started = ContinuousClock.now
            let note = fixturePath("files/notes.txt")
            let keepAlive = try await curl([
                "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n", "--data-binary", "@" + note,
                daemon.baseURL + "/v1/shares", "--next", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
                daemon.baseURL + "/healthz", "--next", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
                "--data-binary", "@" + note, daemon.baseURL + "/v1/shares",
            ])
            #expect(keepAlive.stdout == "201 1\n200 0\n201 0\n")
            #expect(slow.isRunning, "the fast requests finished after the slow upload")
            #expect(ContinuousClock.now - started < .seconds(12))
            let slowResult = try await slow.result()
            #expect(slowResult.status == 0)
            #expect(try slowResult.json["status"] as? String == "complete")
            _ = try await daemon.stop()
        }
    }

    @Test func killNineDuringAMultipartUploadLeavesNothingInStagingAndNoReceipt() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start()
            let file = try writeFile(dir + "/part.bin", randomBytes(2 << 20))
            let upload = try ToolProcess("/usr/bin/curl", [
                "-sS", "--limit-rate", "256K", "-F", "a=@" + file, daemon.baseURL + "/v1/shares",
            ])
            let receiving = try await eventually(.seconds(30)) {
                sandbox.stagingEntries.contains { name in
                    name.hasPrefix("http-") && !sandbox.receivedFiles(inReceiveDirectory: name).isEmpty
                }
            }
            #expect(receiving)
            daemon.process.signal(SIGKILL)
            _ = try await daemon.process.waitForExit(timeout: .seconds(10))
            let cut = try await upload.result()
            #expect(cut.status != 0)
            #expect(!cut.stdout.contains("shareId"))
            let again = try await sandbox.start()
            #expect(sandbox.stagingEntries.isEmpty)
            #expect(httpDirectoryNames(sandbox.state + "/incoming").isEmpty)
            #expect(sandbox.storedFiles.isEmpty)
            let log = try await again.stop().stderr
            #expect(log.contains("staging_removed=1"))
        }
    }

    @Test func systemdSocketActivationServesThePassedSocket() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            try FileManager.default.createDirectory(atPath: sandbox.inbox, withIntermediateDirectories: true)
            // What systemd does for a socket unit: bind, pass the socket as fd 3 with LISTEN_FDS and LISTEN_PID of
            // the process that then becomes the daemon.
            let activate = """
                import os, socket, sys
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                listener.bind(("127.0.0.1", 0))
                listener.listen(16)
                open(sys.argv[1], "w").write(str(listener.getsockname()[1]))
                if listener.fileno() != 3:
                    os.dup2(listener.fileno(), 3)
                os.set_inheritable(3, True)
                os.environ["LISTEN_FDS"] = "1"
                os.environ["LISTEN_PID"] = str(os.getpid())
                os.execv(sys.argv[2], sys.argv[2:])
                """
            let portFile = dir + "/port"
            let activated = try SharepipeProcess(
                ["daemon", "--inbox", sandbox.inbox, "--state", sandbox.state, "--output", sandbox.output],
                launcher: ["/usr/bin/python3", "-c", activate, portFile])
            let listening = try await eventually(.seconds(60)) { activated.stderrSoFar.contains("event=http.listening") }
            #expect(listening, "\(activated.stderrSoFar)")
            let port = try String(contentsOfFile: portFile, encoding: .utf8)
            #expect(activated.stderrSoFar.contains("listener=127.0.0.1:\(port)"))
            let sent = try await curlResponse([
                "--data-binary", "@" + fixturePath("files/notes.txt"), "http://127.0.0.1:\(port)/v1/shares",
            ])
            #expect(sent.status == 201)
            activated.signal(SIGTERM)
            #expect(try await activated.waitForExit(timeout: .seconds(30)).status == 0)
        }
    }
}

func fixtureData(_ name: String) throws -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: fixturePath(name)) else {
        throw SupportError("missing fixture \(name)")
    }
    return Array(data)
}
