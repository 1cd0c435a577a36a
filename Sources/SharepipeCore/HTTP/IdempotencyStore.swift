import Foundation
import Glibc

/// The first answer to a `POST /v1/shares` with an `Idempotency-Key`, kept for 24 hours per (token NAME, key), so a
/// retried request gets it again (`200`) and nothing is ingested twice.
protocol IdempotencyStore: Sendable {
    /// The stored answer, when one younger than `maxAge` exists.
    func answer(scope: String, key: String, maxAge: Duration) throws -> StoredAnswer?
    /// Stores the answer (durably) once its share is published.
    func store(_ answer: StoredAnswer, scope: String, key: String) throws
    /// Removes answers older than `maxAge`.
    func expire(maxAge: Duration) throws
}

/// A stored first answer: its share and its body.
struct StoredAnswer: Codable, Sendable, Equatable {
    var shareId: String
    var status: Int
    var body: [UInt8]
}

/// The idempotency store in the state directory: `STATE/http/idempotency/<sha256 of scope and key>.json`, written
/// atomically. Daemons that share one state directory share it.
struct FileIdempotencyStore: IdempotencyStore {
    let directory: String

    init(stateDirectory: String) throws {
        directory = stateDirectory + "/http/idempotency"
        try System.makeDirectories(directory, mode: 0o700)
    }

    private func name(scope: String, key: String) -> String {
        SHA256.hash(Array((scope + "\u{0}" + key).utf8)) + ".json"
    }

    func answer(scope: String, key: String, maxAge: Duration) throws -> StoredAnswer? {
        let path = directory + "/" + name(scope: scope, key: key)
        guard let status = try System.lstatIfPresent(path) else { return nil }
        guard !Self.isOlder(status, than: maxAge) else { return nil }
        return try JSONDecoder().decode(StoredAnswer.self, from: Data(System.readFile(path)))
    }

    func store(_ answer: StoredAnswer, scope: String, key: String) throws {
        try System.writeAtomically(
            Array(try JSONEncoder().encode(answer)), to: directory, name: name(scope: scope, key: key))
    }

    func expire(maxAge: Duration) throws {
        for entry in try System.listDirectory(directory) where entry.hasSuffix(".json") {
            let path = directory + "/" + entry
            if let status = try System.lstatIfPresent(path), Self.isOlder(status, than: maxAge) {
                try? System.unlink(path)
            }
        }
    }

    private static func isOlder(_ status: FileStatus, than maxAge: Duration) -> Bool {
        let (seconds, _) = maxAge.components
        return System.wallClockNanoseconds() - status.modificationTime > seconds * 1_000_000_000
    }
}
