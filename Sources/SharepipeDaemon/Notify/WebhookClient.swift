import CCurl
import Foundation
import SharepipeLedger
import SharepipeSystem

/// One lane's HTTP client: a libcurl easy handle, kept between requests so that connections to a receiver are
/// reused. TLS is verified (the system's CA store); no redirects are followed; every request is bounded by the
/// connect timeout and the total timeout, so a receiver that hangs holds this lane for `timeout` at most.
final class WebhookClient {
    /// What became of a request: the response status, or libcurl's reason for having none.
    enum Outcome {
        case status(Int)
        case failed(String)

        var delivered: Bool { if case .status(let code) = self { (200..<300).contains(code) } else { false } }
    }

    private static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    private let handle: UnsafeMutableRawPointer?

    init() {
        _ = Self.initialized
        handle = curl_easy_init()
    }

    deinit {
        if let handle { curl_easy_cleanup(handle) }
    }

    /// POSTs a JSON body with the given extra headers.
    func post(url: String, body: String, headers: [(String, String)], connectTimeout: Duration, timeout: Duration)
        -> Outcome
    {
        guard let handle else { return .failed("libcurl could not start") }
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in [("Content-Type", "application/json"), ("User-Agent", "sharepipe"), ("Expect", "")]
            + headers
        {
            list = curl_slist_append(list, "\(name): \(value)")
        }
        defer { curl_slist_free_all(list) }
        var status = 0
        let bytes = Array(body.utf8)
        let code = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { characters in
                sp_curl_post(
                    handle, url, list, characters.baseAddress, bytes.count, Int(connectTimeout.milliseconds),
                    Int(timeout.milliseconds), &status)
            }
        }
        guard code == CURLE_OK else { return .failed(String(cString: curl_easy_strerror(code))) }
        return .status(status)
    }
}
