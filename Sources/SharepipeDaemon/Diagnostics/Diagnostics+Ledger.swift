import SharepipeLedger
import SharepipeSpool

extension Diagnostics {
    /// Checks of a PostgreSQL ledger: the connection, the schema version, and the clock skew between this host and
    /// the server. Nothing is created or migrated. None for the embedded ledger, which the state checks cover.
    package static func ledger(_ location: LedgerLocation) -> [DiagnosticCheck] {
        guard case .postgresql(let url, let lease) = location else { return [] }
        let connection: PostgresDriver
        do {
            connection = try PostgresDriver(url: url, setting: "--ledger")
        } catch {
            return [DiagnosticCheck(
                name: "ledger", status: .failure, detail: "\(error)",
                hint: "check the URL, the password (PGPASSWORD or ~/.pgpass) and that the server lets this host in")]
        }
        var checks = [DiagnosticCheck(name: "ledger", status: .ok, detail: "connected to \(connection.target)")]
        let latest = LedgerStore.migrations(connection.dialect).count
        do {
            let version = try LedgerStore.schemaVersion(connection)
            if version == latest {
                checks.append(DiagnosticCheck(name: "ledger schema", status: .ok, detail: "version \(version)"))
            } else if version < latest {
                checks.append(DiagnosticCheck(
                    name: "ledger schema", status: .warning,
                    detail: "version \(version); the first daemon to start migrates it to \(latest)"))
            } else {
                checks.append(DiagnosticCheck(
                    name: "ledger schema", status: .failure,
                    detail: "version \(version) is newer than this sharepipe's \(latest)",
                    hint: "upgrade sharepipe on this host to the version the other hosts run"))
            }
            let skew = try LedgerStore.clockSkew(connection)
            let detail = "this host's clock is \(abs(skew)) ms \(skew > 0 ? "behind" : "ahead of") the server's"
            let hint = "keep every host in NTP sync: leases use the server's clock, recorded times each host's"
            let status: DiagnosticCheck.Status =
                abs(skew) < 1000 ? .ok : abs(skew) < lease.milliseconds / 2 ? .warning : .failure
            checks.append(DiagnosticCheck(
                name: "ledger clock", status: status, detail: detail, hint: status == .ok ? nil : hint))
        } catch {
            checks.append(DiagnosticCheck(name: "ledger schema", status: .failure, detail: "\(error)"))
        }
        return checks
    }
}
