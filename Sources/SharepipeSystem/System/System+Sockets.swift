import Glibc

/// Listening sockets for the HTTP server: TCP over IPv4 or IPv6, Unix domain sockets, and the sockets systemd
/// passes under socket activation.
extension System {
    /// What a listening socket is bound to.
    package enum SocketAddress: Sendable, Equatable {
        case inet(host: String, port: UInt16, loopback: Bool)
        case unix(path: String)

        /// Whether only this host can connect: loopback addresses and Unix sockets.
        package var isLocal: Bool {
            switch self {
            case .inet(_, _, let loopback): loopback
            case .unix: true
            }
        }

        /// `127.0.0.1:8080`, `[::1]:8080`, `unix:/run/x.sock`.
        package var description: String {
            switch self {
            case .inet(let host, let port, _): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            case .unix(let path): "unix:" + path
            }
        }
    }

    /// Creates, binds and listens on a TCP socket for a numeric address or a host name (its first address).
    package static func listenTCP(host: String, port: UInt16, backlog: Int32 = 511) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let info = result else {
            throw ShareError(.io, "cannot resolve the listen address: \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        let family = info.pointee.ai_family
        let fd = try call("socket") { socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            var one: Int32 = 1
            _ = try call("setsockopt") {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            if family == AF_INET6 {
                _ = try call("setsockopt") {
                    setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
                }
            }
            _ = try call("bind") { bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
            _ = try call("listen") { listen(fd, backlog) }
            return fd
        } catch {
            _ = close(fd)
            throw error
        }
    }

    /// Creates, binds and listens on a Unix domain socket at `path`; a stale socket left there by a dead daemon is
    /// replaced, anything else at the path is an error. The socket is made group-accessible (0660).
    package static func listenUnix(path: String, backlog: Int32 = 511) throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw ShareError(.io, "a unix socket path must be 1 to \(capacity - 1) bytes", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        if let existing = try lstatIfPresent(path) {
            guard existing.kind == .socket else {
                throw ShareError(.io, "the unix socket path exists and is not a socket", errno: EEXIST)
            }
            try unlink(path)
        }
        let fd = try call("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            _ = try withUnsafePointer(to: &address) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                    try call("bind") { bind(fd, generic, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
            _ = try call("chmod") { chmod(path, 0o660) }
            _ = try call("listen") { listen(fd, backlog) }
            return fd
        } catch {
            _ = close(fd)
            throw error
        }
    }

    /// The address a socket is bound to (the real port when 0 was asked for).
    package static func boundAddress(of fd: Int32) throws -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                try call("getsockname") { getsockname(fd, generic, &length) }
            }
        }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return inetAddress(
                storage, as: sockaddr_in.self, family: AF_INET, textLength: Int(INET_ADDRSTRLEN),
                address: \.sin_addr, port: \.sin_port)
        case AF_INET6:
            return inetAddress(
                storage, as: sockaddr_in6.self, family: AF_INET6, textLength: Int(INET6_ADDRSTRLEN),
                address: \.sin6_addr, port: \.sin6_port)
        case AF_UNIX:
            return withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_un.self, capacity: 1) { unix in
                    let path = withUnsafeBytes(of: unix.pointee.sun_path) { raw in
                        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                    }
                    return .unix(path: path)
                }
            }
        default:
            throw ShareError(.io, "a passed socket is neither TCP nor a unix socket", errno: EAFNOSUPPORT)
        }
    }

    /// The numeric host and port of an IPv4 (`sockaddr_in`) or IPv6 (`sockaddr_in6`) address. Loopback is
    /// 127.0.0.0/8, `::1`, and 127.0.0.0/8 mapped into IPv6 (`::ffff:127.…`); as text, an IPv4 host never
    /// contains a colon and an IPv6 one never starts with `127.`, so one rule serves both families.
    private static func inetAddress<Address, Host>(
        _ storage: sockaddr_storage, as type: Address.Type, family: Int32, textLength: Int,
        address: KeyPath<Address, Host>, port: KeyPath<Address, in_port_t>
    ) -> SocketAddress {
        withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: Address.self, capacity: 1) { inet in
                var text = [CChar](repeating: 0, count: textLength)
                withUnsafeBytes(of: inet.pointee[keyPath: address]) { raw in
                    _ = inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count))
                }
                let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let loopback = host.hasPrefix("127.") || host == "::1" || host.hasPrefix("::ffff:127.")
                return .inet(host: host, port: UInt16(bigEndian: inet.pointee[keyPath: port]), loopback: loopback)
            }
        }
    }

    /// The listening sockets systemd passed (`LISTEN_PID` is this process, `LISTEN_FDS` of them from fd 3); each is
    /// checked to be a listening stream socket.
    package static func activationSockets(environment: [String: String]) throws -> [Int32] {
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
            let count = environment["LISTEN_FDS"].flatMap(Int32.init), count > 0
        else { return [] }
        return try (0..<count).map { offset in
            let fd = 3 + offset
            var accepting: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = try call("getsockopt") { getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) }
            guard accepting == 1 else {
                throw ShareError(.io, "passed descriptor \(fd) is not a listening socket", errno: EINVAL)
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            return fd
        }
    }

    /// Closes a socket this process owns (a listener that failed to start).
    package static func closeSocket(_ fd: Int32) {
        _ = close(fd)
    }

    /// Ends both directions of a connected socket without closing its descriptor (its owner closes it when it
    /// sees the end).
    package static func shutdownSocket(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Writes what the socket takes at once, never waiting and never raising SIGPIPE (a last word before a cut).
    package static func sendNow(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
    }
}

/// File calls of the HTTP receivers: a tus upload's data file is cut back to its durable offset and appended to.
extension System {
    /// Cuts (or extends) an open file to `length` bytes.
    package static func truncate(descriptor: Int32, length: Int64) throws {
        _ = try call("ftruncate") { ftruncate(descriptor, off_t(length)) }
    }

    /// Moves an open file's position to its end.
    package static func seekToEnd(descriptor: Int32) throws {
        _ = try call("lseek") { lseek(descriptor, 0, SEEK_END) }
    }
}
