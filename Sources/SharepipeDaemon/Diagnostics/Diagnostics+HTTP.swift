import Foundation
import SharepipeIngest
import SharepipeSystem

extension Diagnostics {
    /// `doctor`'s checks of HTTP ingest (issue 19): the listeners (one beyond loopback needs tokens; a unix
    /// socket's directory must take the socket), the tokens file (its mode, its lines) and the TLS certificate
    /// (parses, matches its key, not expired; a warning within 30 days of its end).
    package static func http(
        listen: [ListenAddress], tokensPath: String?, certificatePath: String?, keyPath: String?,
        now: Date = Date()
    ) -> [DiagnosticCheck] {
        guard !listen.isEmpty || tokensPath != nil || certificatePath != nil else { return [] }
        var checks: [DiagnosticCheck] = []
        var problems: [String] = []
        for address in listen {
            if !address.isLocal && tokensPath == nil {
                problems.append("\(address) is reachable from other hosts and there is no tokens file")
            }
            if case .unix(let path) = address {
                let directory = (path as NSString).deletingLastPathComponent
                if !System.isWritableDirectory(directory.isEmpty ? "." : directory) {
                    problems.append("the directory of \(address) is missing or not writable")
                }
            }
        }
        let described = listen.map { "\($0) (\($0.isLocal ? "local" : "network"))" }.joined(separator: ", ")
        checks.append(problems.isEmpty
            ? DiagnosticCheck(name: "http-listeners", status: .ok, detail: described.isEmpty ? "none" : described)
            : DiagnosticCheck(
                name: "http-listeners", status: .failure, detail: problems.joined(separator: "; "),
                hint: "give --tokens FILE for a network listener; create the socket's directory (RuntimeDirectory=)"))
        if let tokensPath {
            do {
                let tokens = try HTTPTokens.load(path: tokensPath)
                checks.append(DiagnosticCheck(
                    name: "http-tokens", status: .ok,
                    detail: "\(tokens.names.count) token(s): \(tokens.names.joined(separator: ", ")); mode 600 or stricter"))
            } catch {
                let message = (error as? ShareError)?.message ?? "\(error)"
                checks.append(DiagnosticCheck(
                    name: "http-tokens", status: .failure, detail: message,
                    hint: "one \"NAME TOKEN\" per line; chmod 600 and chown it to the daemon's user"))
            }
        }
        if let certificatePath, let keyPath {
            checks.append(certificateCheck(certificatePath: certificatePath, keyPath: keyPath, now: now))
        }
        return checks
    }

    private static func certificateCheck(certificatePath: String, keyPath: String, now: Date) -> DiagnosticCheck {
        let hint = "PEM files: the certificate (chain) for --tls-cert, its unencrypted private key for --tls-key"
        guard let certificate = try? String(contentsOfFile: certificatePath, encoding: .utf8),
            let key = try? String(contentsOfFile: keyPath, encoding: .utf8)
        else {
            return DiagnosticCheck(
                name: "http-certificate", status: .failure, detail: "cannot read the certificate or the key", hint: hint)
        }
        switch CertificateSummary.read(certificatePEM: certificate, keyPEM: key) {
        case .failure(let error):
            return DiagnosticCheck(name: "http-certificate", status: .failure, detail: error.message, hint: hint)
        case .success(let summary):
            let until = summary.notAfter.formatted(Date.ISO8601FormatStyle())
            if !summary.keyMatches {
                return DiagnosticCheck(
                    name: "http-certificate", status: .failure, detail: "the key is not the certificate's", hint: hint)
            }
            if summary.notAfter <= now {
                return DiagnosticCheck(
                    name: "http-certificate", status: .failure, detail: "\(summary.subject) expired \(until)",
                    hint: "renew the certificate, then reload or restart the daemon")
            }
            let status: DiagnosticCheck.Status = summary.notAfter.timeIntervalSince(now) < 30 * 86_400 ? .warning : .ok
            return DiagnosticCheck(
                name: "http-certificate", status: status, detail: "\(summary.subject), valid until \(until)",
                hint: status == .ok ? nil : "renew the certificate within the month")
        }
    }
}
