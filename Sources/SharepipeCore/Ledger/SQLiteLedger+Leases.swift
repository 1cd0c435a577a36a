/// The embedded ledger has no leases: its daemons share one host, where a claim's `flock` alone tells a dead
/// claimer from a live one.
extension SQLiteLedger {
    var leaseDuration: Duration? { nil }

    var reconnections: Int { 0 }

    func pickExpiredClaims(limit: Int) throws -> [String] { [] }
}
