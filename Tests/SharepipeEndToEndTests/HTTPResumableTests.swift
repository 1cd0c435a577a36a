import Foundation
import Glibc
import Testing

/// tus 1.0.0 under `/v1/uploads/` with curl and the tus project's own Python client, and Python's `requests`:
/// every header and status of the protocol, and an upload that survives a kill -9 of the daemon.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct HTTPResumableTests {
    @Test func tusOverCurlAnswersEveryStatusOfTheProtocol() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start()
            let uploads = daemon.baseURL + "/v1/uploads/"
            let tus = ["-H", "Tus-Resumable: 1.0.0"]
            let options = try await curlResponse(["-X", "OPTIONS", uploads])
            #expect(options.status == 204)
            #expect(options.headers["tus-version"] == "1.0.0")
            #expect(options.headers["tus-extension"] == "creation,creation-with-upload,termination,checksum,expiration")
            #expect(options.headers["tus-checksum-algorithm"] == "sha1,sha256")
            #expect(try await curlResponse(["-X", "POST", "-H", "Upload-Length: 10", uploads]).status == 412)

            let bytes = Array("0123456789abcdefghij".utf8)
            let created = try await curlResponse(tus + [
                "-X", "POST", "-H", "Upload-Length: 20",
                "-H", "Upload-Metadata: filename bm90ZS50eHQ=,filetype dGV4dC9wbGFpbg==", uploads,
            ])
            #expect(created.status == 201)
            #expect(created.headers["upload-expires"]?.hasSuffix("GMT") == true)
            let location = daemon.baseURL + (try #require(created.headers["location"]))
            let first = try writeFile(dir + "/first", Array(bytes[..<8]))
            let patch = tus + ["-X", "PATCH", "-H", "Content-Type: application/offset+octet-stream"]
            let wrongOffset = try await curlResponse(patch + ["-H", "Upload-Offset: 3", "--data-binary", "@" + first, location])
            #expect(wrongOffset.status == 409)
            let sent = try await curlResponse(patch + ["-H", "Upload-Offset: 0", "--data-binary", "@" + first, location])
            #expect(sent.status == 204)
            #expect(sent.headers["upload-offset"] == "8")
            let rest = try writeFile(dir + "/rest", Array(bytes[8...]))
            let badSum = try await curlResponse(patch + [
                "-H", "Upload-Offset: 8", "-H", "Upload-Checksum: sha1 " + Data(repeating: 0, count: 20).base64EncodedString(),
                "--data-binary", "@" + rest, location,
            ])
            #expect(badSum.status == 460)
            #expect((try badSum.json["error"] as? [String: Any])?["code"] as? String == "ERR_BAD_REQUEST")
            let head = try await curlResponse(tus + ["-I", location])
            #expect(head.status == 200)
            #expect(head.headers["upload-offset"] == "8")
            #expect(head.headers["upload-length"] == "20")
            #expect(head.headers["cache-control"] == "no-store")
            let digest = try await ToolProcess("/usr/bin/openssl", ["dgst", "-sha256", "-binary", "-out", dir + "/sum", rest])
                .result()
            #expect(digest.status == 0)
            let sum = try #require(FileManager.default.contents(atPath: dir + "/sum")).base64EncodedString()
            let last = try await curlResponse(patch + [
                "-H", "Upload-Offset: 8", "-H", "Upload-Checksum: sha256 " + sum, "--data-binary", "@" + rest, location,
            ])
            #expect(last.status == 204)
            #expect(last.headers["upload-offset"] == "20")
            let shareID = try #require(last.headers["sharepipe-share-id"])
            #expect(last.headers["location"] == "/v1/shares/" + shareID)
            let shown = try await curlResponse([daemon.baseURL + "/v1/shares/" + shareID])
            #expect(shown.status == 200)
            #expect(try await eventually(.seconds(30)) { sandbox.storedFiles.values.contains(bytes) })

            // creation-with-upload, then termination.
            let whole = try writeFile(dir + "/whole", Array(bytes[..<5]))
            let direct = try await curlResponse(tus + [
                "-X", "POST", "-H", "Upload-Length: 10", "-H", "Content-Type: application/offset+octet-stream",
                "--data-binary", "@" + whole, uploads,
            ])
            #expect(direct.status == 201)
            #expect(direct.headers["upload-offset"] == "5")
            let partial = daemon.baseURL + (try #require(direct.headers["location"]))
            #expect(try await curlResponse(tus + ["-X", "DELETE", partial]).status == 204)
            #expect(try await curlResponse(tus + ["-I", partial]).status == 404)
            #expect(try await curlResponse(["-X", "PUT", partial]).status == 405)
            _ = try await daemon.stop()
        }
    }

    @Test func anExpiredUploadIsGoneAndRemovedFromTheStateDirectory() async throws {
        try await withTemporaryDirectory { dir in
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start(["--upload-expiry", "2s"])
            let created = try await curlResponse([
                "-H", "Tus-Resumable: 1.0.0", "-X", "POST", "-H", "Upload-Length: 100", daemon.baseURL + "/v1/uploads/",
            ])
            #expect(created.status == 201)
            let id = try #require(created.headers["location"]?.split(separator: "/").last.map(String.init))
            #expect(httpDirectoryNames(sandbox.state + "/uploads") == [id])
            #expect(try await eventually(.seconds(30)) { httpDirectoryNames(sandbox.state + "/uploads").isEmpty })
            let head = try await curlResponse(["-H", "Tus-Resumable: 1.0.0", "-I", daemon.baseURL + "/v1/uploads/" + id])
            #expect(head.status == 404)
            _ = try await daemon.stop()
        }
    }

    @Test func tuspyResumesAfterAKillNineAndTheStoredFileIsIntact() async throws {
        try await withTemporaryDirectory { dir in
            let python = try await pythonWithClients()
            let sandbox = HTTPSandbox(root: dir)
            var daemon = try await sandbox.start()
            let address = daemon.addresses[0]
            let file = try writeFile(dir + "/large.bin", randomBytes(6 << 20))
            let script = """
                import os, sys, time
                from tusclient import client
                path, endpoint, urlfile, phase = sys.argv[1:5]
                paused, go = urlfile + ".paused", urlfile + ".go"
                tus = client.TusClient(endpoint)
                if phase == "start":
                    uploader = tus.uploader(path, chunk_size=256 * 1024, metadata={"filename": "large.bin"},
                                            upload_checksum=True)
                    uploader.set_url(uploader.create_url())
                    open(urlfile, "w").write(uploader.url)
                    while uploader.offset < uploader.get_file_size():
                        uploader.upload_chunk()
                        print(uploader.offset, flush=True)
                        if uploader.offset >= 1 << 20 and not os.path.exists(paused):
                            # Hold still until the test has killed the daemon, so the kill lands mid-upload.
                            open(paused, "w").close()
                            deadline = time.time() + 120
                            while not os.path.exists(go) and time.time() < deadline:
                                time.sleep(0.02)
                else:
                    uploader = tus.uploader(path, url=open(urlfile).read(), chunk_size=1024 * 1024,
                                            upload_checksum=True)
                    print("resumed-at", uploader.offset, flush=True)
                    uploader.upload()
                    print("share", uploader.request.response_headers.get("sharepipe-share-id"), flush=True)
                """
            let scriptPath = try writeFile(dir + "/client.py", script)
            let endpoint = "http://\(address)/v1/uploads/"
            let urlFile = dir + "/upload-url"
            let first = try ToolProcess(python, [scriptPath, file, endpoint, urlFile, "start"])
            var id = ""
            let progressed = try await eventually(.seconds(60)) {
                guard let url = try? String(contentsOfFile: urlFile, encoding: .utf8), !url.isEmpty else { return false }
                id = String(url.split(separator: "/").last ?? "")
                let info = sandbox.state + "/uploads/" + id + "/info.json"
                guard let data = FileManager.default.contents(atPath: info),
                    let record = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                    let offset = record["offset"] as? Int
                else { return false }
                return offset >= 1 << 20 && FileManager.default.fileExists(atPath: urlFile + ".paused")
            }
            #expect(progressed, "client: \(first.stdoutSoFar)\ndaemon: \(daemon.process.stderrSoFar.suffix(4000))")
            daemon.process.signal(SIGKILL)
            _ = try await daemon.process.waitForExit(timeout: .seconds(10))
            _ = try writeFile(urlFile + ".go", "")
            let interrupted = try await first.result()
            #expect(interrupted.status != 0)

            daemon = try await sandbox.start(listen: [address])
            let second = try await ToolProcess(python, [scriptPath, file, endpoint, urlFile, "resume"]).result()
            #expect(second.status == 0, "\(second.stderr)")
            let resumedAt = second.stdout.split(separator: "\n").first { $0.hasPrefix("resumed-at") }
                .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            #expect(resumedAt >= 1 << 20)
            #expect(resumedAt % (256 * 1024) == 0)
            let shareLine = second.stdout.split(separator: "\n").first { $0.hasPrefix("share ") }
            #expect(shareLine.map { UUID(uuidString: String($0.dropFirst(6))) != nil } == true)
            let expected = try await sha256(ofFile: file)
            #expect(try await eventually(.seconds(60)) { sandbox.storedFiles.count == 1 })
            let stored = try #require(sandbox.storedFiles.keys.first)
            #expect(try await sha256(ofFile: sandbox.output + "/" + stored) == expected)
            _ = try await daemon.stop()
        }
    }

    /// Two daemons (two state directories, as on two hosts) on one PostgreSQL ledger: `status` on either counts the
    /// resumable uploads of both, a finished or terminated upload no longer counts, and the files in each state
    /// directory stay the uploads' own.
    @Test(.enabled(
        if: DuplicateCommandTests.postgres != nil || DuplicateCommandTests.postgresRequired, "SHAREPIPE_TEST_PG is unset"))
    func statusCountsTheUploadsInFlightOfEveryDaemonOnTheLedger() async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try ClusterTests.freshDatabase()
            let sandboxes = [HTTPSandbox(root: dir + "/a"), HTTPSandbox(root: dir + "/b")]
            var daemons: [HTTPDaemon] = []
            for sandbox in sandboxes { daemons.append(try await sandbox.start(["--ledger", ledger])) }
            let tus = ["-H", "Tus-Resumable: 1.0.0"]
            var locations: [String] = []
            for daemon in daemons {
                let created = try await curlResponse(
                    tus + ["-X", "POST", "-H", "Upload-Length: 5", daemon.baseURL + "/v1/uploads/"])
                #expect(created.status == 201)
                locations.append(daemon.baseURL + (try #require(created.headers["location"])))
            }
            func resumable(_ sandbox: HTTPSandbox) async throws -> Int? {
                let result = try await runSharepipe(["status", "--state", sandbox.state, "--ledger", ledger, "--json"])
                #expect(result.status == 0, "\(result.stderr)")
                return (try result.jsonObject["uploads"] as? [String: Int])?["resumable"]
            }
            #expect(try await resumable(sandboxes[0]) == 2)
            #expect(try await resumable(sandboxes[1]) == 2)

            let body = try writeFile(dir + "/body", Array("hello".utf8))
            let finished = try await curlResponse(tus + [
                "-X", "PATCH", "-H", "Content-Type: application/offset+octet-stream", "-H", "Upload-Offset: 0",
                "--data-binary", "@" + body, locations[0],
            ])
            #expect(finished.status == 204)
            #expect(try await resumable(sandboxes[1]) == 1)
            #expect(try await curlResponse(tus + ["-X", "DELETE", locations[1]]).status == 204)
            #expect(try await resumable(sandboxes[0]) == 0)
            for daemon in daemons { _ = try await daemon.stop() }
        }
    }

    @Test func pythonRequestsUploadsAMultipartShare() async throws {
        try await withTemporaryDirectory { dir in
            let python = try await pythonWithClients()
            let sandbox = HTTPSandbox(root: dir)
            let daemon = try await sandbox.start()
            let script = """
                import json, sys, requests
                base, photo, notes = sys.argv[1:4]
                with open(photo, "rb") as p, open(notes, "rb") as n:
                    r = requests.post(base + "/v1/shares", files=[
                        ("photo", ("photo.jpg", p, "image/jpeg")), ("notes", ("notes.txt", n, "text/plain"))])
                print(json.dumps({"status": r.status_code, "location": r.headers.get("Location"), "receipt": r.json()}))
                """
            let result = try await ToolProcess(python, [
                "-c", script, daemon.baseURL, fixturePath("files/photo.jpg"), fixturePath("files/notes.txt"),
            ]).result()
            #expect(result.status == 0, "\(result.stderr)")
            let output = try result.json
            #expect(output["status"] as? Int == 201)
            let receipt = try #require(output["receipt"] as? [String: Any])
            #expect(receipt["status"] as? String == "complete")
            let types = (receipt["attachments"] as? [[String: Any]])?.map { $0["typeIdentifier"] as? String }
            #expect(types == ["public.jpeg", "public.plain-text"])
            #expect(output["location"] as? String == "/v1/shares/" + (receipt["shareId"] as? String ?? ""))
            _ = try await daemon.stop()
        }
    }
}
