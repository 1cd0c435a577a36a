/// The spool's stage directories, as the ledger records a share's place (`SpoolStage`).
package enum SpoolStage: String, Sendable, CaseIterable {
    case staging, incoming, processing, quarantine
}
