import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// What `System.boundAddress` reports for the TCP listeners `daemon --listen` makes: the numeric host, the port the
/// kernel chose for port 0, and whether only this host can connect (which decides whether `--tokens` is required).
@Suite struct ListeningSocketTests {
    @Test(arguments: [("127.0.0.1", true), ("0.0.0.0", false), ("::1", true), ("::", false)])
    func aTCPListenerReportsItsHostPortAndWhetherItIsLoopback(host: String, loopback: Bool) throws {
        let fd = try System.listenTCP(host: host, port: 0)
        defer { System.closeSocket(fd) }
        let bound = try System.boundAddress(of: fd)
        guard case .inet(let boundHost, let port, let isLoopback) = bound else {
            Issue.record("a TCP listener reported \(bound.description)")
            return
        }
        #expect(boundHost == host)
        #expect(port != 0)
        #expect(isLoopback == loopback)
        #expect(bound.isLocal == loopback)
    }

    @Test func aUnixListenerIsLocal() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/listen.sock"
            let fd = try System.listenUnix(path: path)
            defer { System.closeSocket(fd) }
            let bound = try System.boundAddress(of: fd)
            #expect(bound == .unix(path: path))
            #expect(bound.isLocal)
        }
    }
}
