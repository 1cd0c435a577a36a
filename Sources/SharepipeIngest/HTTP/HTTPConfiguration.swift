import SharepipeSystem

/// What `daemon --listen` is told: where to listen, who may upload, TLS and the limits of the connections.
package struct HTTPConfiguration: Sendable {
    /// `--listen ADDR`, repeatable: `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:8443`, `unix:/run/sharepipe/http.sock`.
    package var listen: [ListenAddress] = []
    /// Use the sockets systemd passes (`LISTEN_FDS`), in addition to `listen`.
    package var socketActivation = false
    /// `--tokens FILE`, loaded; nil: no authentication (only local listeners are allowed then).
    package var tokens: HTTPTokens?
    /// `--tls-cert` and `--tls-key`, PEM text.
    package var tls: (certificate: String, key: String)?
    /// `--max-connections`: connections held at once, per listener.
    package var maxConnections = 10000
    /// `--max-connections-per-client`: connections held at once from one peer address.
    package var maxConnectionsPerClient = 256
    /// `--header-timeout`: a request's head must be complete this long after its first line.
    package var headerTimeout: Duration = .seconds(10)
    /// `--min-body-rate`: bytes per second a body must keep up over each 20 s (0: no minimum).
    package var minBodyRate: Int64 = 1024
    /// `--connection-timeout`: a connection idle (nothing received, nothing sendable) this long is closed.
    package var connectionTimeout: Duration = .seconds(60)
    /// `--upload-expiry`: a tus upload not finished this long after its creation is removed.
    package var uploadExpiry: Duration = .seconds(24 * 3600)
    /// Threads of the HTTP server per listener (libmicrohttpd's pool); uploads never wait for one another on them.
    package var threads = 2

    /// No listeners.
    package init() {}
}

/// One `--listen` value.
package enum ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// A TCP address: a numeric IPv4 or IPv6 address or a host name, and a port (0: any free port).
    case tcp(host: String, port: UInt16)
    /// A Unix domain socket.
    case unix(path: String)

    /// Parses `HOST:PORT`, `[IPV6]:PORT` or `unix:PATH`.
    package init(parsing text: String) throws {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            guard path.hasPrefix("/") || path.hasPrefix(".") || !path.isEmpty else {
                throw ShareError(.io, "unix: needs a socket path")
            }
            self = .unix(path: path)
            return
        }
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ShareError(.io, "expected [IPV6]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw ShareError(.io, "expected HOST:PORT, [IPV6]:PORT or unix:PATH")
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let number = UInt16(port) else { throw ShareError(.io, "expected a port number 0-65535") }
        self = .tcp(host: String(host), port: number)
    }

    /// Whether only this host can reach the address, judged from the text alone: loopback literals, `localhost`,
    /// unix sockets. The bound address is checked again at start.
    package var isLocal: Bool {
        switch self {
        case .unix: true
        case .tcp(let host, _): host == "localhost" || host == "::1" || host.hasPrefix("127.")
        }
    }

    package var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): "unix:" + path
        }
    }
}
