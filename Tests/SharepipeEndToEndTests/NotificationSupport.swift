import Foundation
import Glibc

/// A webhook receiver for the notification tests (issue 33): Python's standard HTTP server on 127.0.0.1, which checks
/// each request's Standard Webhooks signature with the key itself and logs one JSON line per request (event id,
/// whether the signature held, the status it answered, when the exchange began and ended, the payload). With
/// `failPerID` it answers 500 to the first that many requests of each event id; with `delay` it takes that long
/// (seconds) before answering.
final class WebhookReceiver: @unchecked Sendable {
    /// One request as the receiver saw it.
    struct Delivery {
        var id: String
        var valid: Bool
        var status: Int
        var start: Double
        var end: Double
        var type: String
        var shareID: String
        var payload: [String: Any]
    }

    static let script = #"""
        import base64, hashlib, hmac, http.server, json, os, sys, threading, time
        port_file, log_path, key_b64, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        fail = int(os.environ.get("FAIL_PER_ID", "0"))
        delay = float(os.environ.get("DELAY", "0"))
        key = base64.b64decode(key_b64)
        lock = threading.Lock()
        seen = {}
        log = open(log_path, "a")

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                start = time.time()
                body = self.rfile.read(int(self.headers["Content-Length"]))
                event = self.headers.get("webhook-id", "")
                stamp = self.headers.get("webhook-timestamp", "")
                digest = hmac.new(key, event.encode() + b"." + stamp.encode() + b"." + body, hashlib.sha256).digest()
                expected = "v1," + base64.b64encode(digest).decode()
                offered = self.headers.get("webhook-signature", "").split()
                valid = any(hmac.compare_digest(expected, item) for item in offered)
                valid = valid and abs(time.time() - int(stamp or 0)) < 300
                with lock:
                    count = seen.get(event, 0) + 1
                    seen[event] = count
                if delay:
                    time.sleep(delay)
                status = 500 if count <= fail else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.wfile.flush()
                record = {"id": event, "valid": valid, "status": status, "start": start, "end": time.time(),
                          "payload": json.loads(body)}
                with lock:
                    log.write(json.dumps(record) + "\n")
                    log.flush()

            def log_message(self, *arguments):
                pass

        class Server(http.server.ThreadingHTTPServer):
            allow_reuse_address = True
            daemon_threads = True

        server = Server(("127.0.0.1", port), Handler)
        with open(port_file + ".tmp", "w") as out:
            out.write(str(server.server_address[1]))
        os.rename(port_file + ".tmp", port_file)
        server.serve_forever()
        """#

    let directory: String
    let key: [UInt8]
    private(set) var port = 0
    private var process: ToolProcess?

    /// The secret file's text: `whsec_` and the key in base64.
    var secretText: String { "whsec_" + Data(key).base64EncodedString() }
    var url: String { "http://127.0.0.1:\(port)/hook" }
    var logPath: String { directory + "/receiver.log" }

    init(directory: String) throws {
        self.directory = directory
        key = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = try writeFile(directory + "/receiver.py", Self.script)
    }

    /// Starts the server (on its former port after a stop) and waits until it listens.
    func start(failPerID: Int = 0, delay: Double = 0) async throws {
        let portFile = directory + "/port"
        try? FileManager.default.removeItem(atPath: portFile)
        process = try ToolProcess(
            "/usr/bin/python3",
            [directory + "/receiver.py", portFile, logPath, Data(key).base64EncodedString(), String(port)],
            environment: ["FAIL_PER_ID": String(failPerID), "DELAY": String(delay)])
        let up = try await eventually(.seconds(60)) { FileManager.default.fileExists(atPath: portFile) }
        guard up, let text = try? String(contentsOfFile: portFile, encoding: .utf8), let bound = Int(text) else {
            throw SupportError("the webhook receiver did not start")
        }
        port = bound
    }

    /// Stops the server.
    func stop() async throws {
        guard let process else { return }
        process.signal(SIGKILL)
        _ = try? await process.result(timeout: .seconds(30))
        self.process = nil
    }

    /// Every request logged so far.
    var deliveries: [Delivery] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let payload = object["payload"] as? [String: Any], let share = payload["share"] as? [String: Any]
            else { return nil }
            return Delivery(
                id: object["id"] as? String ?? "", valid: object["valid"] as? Bool ?? false,
                status: object["status"] as? Int ?? 0, start: object["start"] as? Double ?? 0,
                end: object["end"] as? Double ?? 0, type: payload["type"] as? String ?? "",
                shareID: share["shareId"] as? String ?? "", payload: payload)
        }
    }

    /// The acknowledged requests (2xx).
    var acknowledged: [Delivery] { deliveries.filter { (200..<300).contains($0.status) } }

    /// Writes the secret file (mode 600) and returns its path.
    func writeSecretFile() throws -> String {
        let path = try writeFile(directory + "/secret", secretText + "\n")
        chmod(path, 0o600)
        return path
    }
}
