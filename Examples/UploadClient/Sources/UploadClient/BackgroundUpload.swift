#if os(iOS) || os(macOS)
import Foundation

/// What a share extension does with a large attachment on iOS: it copies the file into the app group container and
/// hands it to a background `URLSession`, which uploads it after the extension is gone. Since iOS 17 / macOS 14 that
/// session resumes an interrupted upload by itself (a network change, a suspended app, a daemon restart) when the
/// server speaks the IETF resumable-upload protocol, as `sharepipe daemon --listen` does on `POST /v1/shares`: the
/// system adds `Upload-Draft-Interop-Version` and `Upload-Complete` (or `Upload-Incomplete`) to the request, reads
/// the `104 Upload Resumption Supported` and later resumes with `HEAD` and `PATCH`. Nothing here asks for it; the
/// final response is the share's receipt, exactly as for an upload that was never interrupted.
///
/// In the extension:
///
///     let uploader = BackgroundUpload.shared
///     try uploader.upload(copyInAppGroup, to: URL(string: "https://nas.example:8443/v1/shares")!,
///                         type: "public.heic", token: token)
///     extensionContext?.completeRequest(returningItems: nil)
///
/// and in the app's delegate, `application(_:handleEventsForBackgroundURLSession:completionHandler:)` keeps the
/// handler for `urlSessionDidFinishEvents(forBackgroundURLSession:)`.
final class BackgroundUpload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    static let shared = BackgroundUpload()
    /// The app group both the extension and the app belong to: the session's files live there.
    static let appGroup = "group.example.sharepipe"

    private lazy var session: URLSession = {
        let configuration = URLSessionConfiguration.background(withIdentifier: "example.sharepipe.upload")
        configuration.sharedContainerIdentifier = Self.appGroup
        configuration.sessionSendsLaunchEvents = true
        configuration.isDiscretionary = false
        return URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }()
    private var receipts: [Int: Data] = [:]
    var finishedEvents: (() -> Void)?

    /// Starts the upload of a file (a background session uploads from a file only, never from memory).
    func upload(_ file: URL, to endpoint: URL, type: String?, token: String?) throws {
        var request = URLRequest(url: endpoint)
        request.httpMethod = "POST"
        if let type { request.setValue(type, forHTTPHeaderField: "Sharepipe-Type") }
        let name = file.lastPathComponent.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "upload"
        request.setValue("attachment; filename*=UTF-8''\(name)", forHTTPHeaderField: "Content-Disposition")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        // Optional: let the daemon refuse content it already has before the body is sent (`--duplicates reject`)
        // and verify what it stored: `Repr-Digest: sha-256=:BASE64:` (CryptoKit's SHA256 of the file) and
        // `Want-Repr-Digest: sha-256=1`.
        session.uploadTask(with: request, fromFile: file).resume()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        receipts[dataTask.taskIdentifier, default: Data()].append(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let status = (task.response as? HTTPURLResponse)?.statusCode ?? 0
        let receipt = receipts.removeValue(forKey: task.taskIdentifier) ?? Data()
        // 201: the share's receipt (`shareId`, `status`, each attachment's `sha256`); 422: rejected (the receipt
        // says why); 413: too large; 503: try again later. `error` is set only when the system gave up.
        let failure = error.map { "\($0)" } ?? "none"
        print("sharepipe upload: HTTP \(status), \(receipt.count) bytes of receipt, error: \(failure)")
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        DispatchQueue.main.async { self.finishedEvents?() }
    }
}
#endif
