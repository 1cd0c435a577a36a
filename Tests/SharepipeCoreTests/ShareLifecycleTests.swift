import Testing

@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// The lifecycle state machine without a disk or a ledger: each transition's actions in order, each failure's
/// compensation, the guards of every ledger change, and recovery from every state in every directory.
@Suite struct ShareLifecycleTests {
    /// Drives a run to its end, answering each action with `answer` (default: done); returns the crash points
    /// passed and the outcome.
    func drive(
        _ run: inout ShareLifecycle,
        answer: (ShareLifecycle.Action) -> ShareLifecycle.Event = { _ in .done }
    ) -> (points: [String], actions: [ShareLifecycle.Action], outcome: ShareLifecycle.Outcome) {
        var points: [String] = []
        var actions: [ShareLifecycle.Action] = []
        var step = run.start()
        while case .perform(let action) = step {
            points.append(run.crashPoint(action))
            actions.append(action)
            step = run.handle(answer(action), after: action)
        }
        guard case .finish(let outcome) = step else { Issue.record("the run did not finish"); return (points, actions, .finished(failed: [:])) }
        #expect(run.phase == .finished)
        return (points, actions, outcome)
    }

    func record(_ id: String) -> StagedRecord {
        StagedRecord(
            manifest: Manifest(shareId: id, sourceApp: nil, createdAt: "", policy: .keepSuccessful, attachments: []),
            sources: [])
    }

    func failed(_ outcome: ShareLifecycle.Outcome) -> Set<String> {
        if case .finished(let failed) = outcome { return Set(failed.keys) }
        return []
    }

    let error = ShareError(.io, "boom", errno: 5)

    @Test func publishPassesEveryStepInDesignOrder() {
        var run = ShareLifecycle.publish([record("a"), record("b")])
        let (points, actions, outcome) = drive(&run)
        #expect(points == [
            "publish.barrier", "publish.record-staged", "publish.move-incoming", "publish.sync-incoming",
            "publish.remove-sources", "publish.record-published",
        ])
        #expect(failed(outcome).isEmpty)
        guard case .record(.published(let ids, let done)) = actions.last else { Issue.record("no publish record"); return }
        #expect(ids == ["a", "b"] && done == ["a", "b"])
    }

    @Test func whereTheBarrierCommitsTheLedgerTheStagedRowsAreWrittenFirstWithoutAFlushOfTheirOwn() {
        var run = ShareLifecycle.publish([record("a"), record("b")], barrierCommitsLedger: true)
        let (points, actions, outcome) = drive(&run)
        #expect(points == [
            "publish.record-staged", "publish.barrier", "publish.move-incoming", "publish.sync-incoming",
            "publish.remove-sources", "publish.record-published",
        ])
        #expect(failed(outcome).isEmpty)
        guard case .record(.staged(let records, let durable)) = actions.first else { Issue.record("no staged"); return }
        #expect(records.map(\.manifest.shareId) == ["a", "b"] && !durable)

        // Elsewhere the staged commit is durable on its own, after the barrier.
        var elsewhere = ShareLifecycle.publish([record("a")])
        guard case .record(.staged(_, let flushed)) = drive(&elsewhere).actions[1] else { Issue.record("no staged"); return }
        #expect(flushed)
    }

    @Test func aBarrierFailingAfterTheLedgerHasTheStagedRowsUnpublishes() {
        var run = ShareLifecycle.publish([record("a"), record("b")], barrierCommitsLedger: true)
        let (points, _, outcome) = drive(&run) { action in
            if case .barrier = action { return .failed(error) }
            return .done
        }
        #expect(failed(outcome) == ["a", "b"])
        #expect(points == ["publish.record-staged", "publish.barrier", "publish.remove-staging", "publish.record-unpublished"])

        var first = ShareLifecycle.publish([record("c")], barrierCommitsLedger: true)
        let (firstPoints, _, firstOutcome) = drive(&first) { action in
            if case .record(.staged) = action { return .failed(error) }
            return .done
        }
        #expect(failed(firstOutcome) == ["c"])
        #expect(firstPoints == ["publish.record-staged", "publish.remove-staging", "publish.record-rolled-back"])
    }

    @Test(arguments: ["publish.barrier", "publish.record-staged"])
    func aPublishFailingBeforeTheLedgerKnowsItRollsBack(point: String) {
        var run = ShareLifecycle.publish([record("a"), record("b")])
        var failedOnce = false
        let (points, _, outcome) = drive(&run) { action in
            if "publish." + action.name == point && !failedOnce {
                failedOnce = true
                return .failed(error)
            }
            return .done
        }
        #expect(failed(outcome) == ["a", "b"])
        let tail = Array(points.drop { $0 != point }.dropFirst())
        #expect(tail == ["publish.remove-staging", "publish.record-rolled-back", "publish.record-rolled-back"])
    }

    @Test func aShareWhoseRenameFailsIsUnpublishedAndTheOthersGoOn() {
        var run = ShareLifecycle.publish([record("a"), record("b")])
        let (points, actions, outcome) = drive(&run) { action in
            if case .move = action { return .partly(done: ["b"]) }
            return .done
        }
        #expect(failed(outcome) == ["a"])
        #expect(points.suffix(5) == [
            "publish.remove-staging", "publish.record-unpublished", "publish.sync-incoming", "publish.remove-sources",
            "publish.record-published",
        ])
        guard case .record(.published(let ids, _)) = actions.last else { Issue.record("no publish record"); return }
        #expect(ids == ["b"])
    }

    @Test func sourcesThatCouldNotBeRemovedStayRecordedStaged() {
        var run = ShareLifecycle.publish([record("a"), record("b")])
        let (_, actions, outcome) = drive(&run) { action in
            if case .removeSources = action { return .partly(done: ["b"]) }
            return .done
        }
        #expect(failed(outcome).isEmpty)
        guard case .record(.published(let ids, let done)) = actions.last else { Issue.record("no record"); return }
        #expect(ids == ["a", "b"] && done == ["b"])

        var failing = ShareLifecycle.publish([record("c")])
        let (_, failingActions, _) = drive(&failing) { action in
            if case .removeSources = action { return .failed(error) }
            return .done
        }
        guard case .record(.published(_, let none)) = failingActions.last else { Issue.record("no record"); return }
        #expect(none.isEmpty)
    }

    @Test func aClaimKeepsOnlyWhatItWonLockedAndRecorded() {
        var run = ShareLifecycle.claim(["a", "b", "c", "d"])
        let (points, actions, outcome) = drive(&run) { action in
            switch action {
            case .lock: return .partly(done: ["a", "b", "c"])
            case .move(let ids, .incoming, .processing):
                #expect(ids == ["a", "b", "c"], "only what it locked is moved")
                return .partly(done: ["a", "b"])
            case .record(.claimed): return .claimed(["a": .init(attempts: 2, deaths: 1)])
            default: return .done
            }
        }
        #expect(points == ["claim.lock", "claim.move-processing", "claim.record-claimed", "claim.move-incoming"])
        // "b" was in a state a claim does not start from: it goes back for recovery.
        guard case .move(let back, .processing, .incoming) = actions.last else { Issue.record("no move back"); return }
        #expect(back == ["b"])
        guard case .claimed(let histories) = outcome else { Issue.record("not a claim outcome"); return }
        #expect(histories == ["a": .init(attempts: 2, deaths: 1)])
    }

    @Test func aClaimWhoseRecordFailsMovesItsSharesBack() {
        var run = ShareLifecycle.claim(["a", "b"])
        let (points, actions, outcome) = drive(&run) { action in
            switch action {
            case .record(.claimed): return .failed(error)
            default: return .done
            }
        }
        #expect(points == ["claim.lock", "claim.move-processing", "claim.record-claimed", "claim.move-incoming"])
        guard case .move(let back, .processing, .incoming) = actions.last else { Issue.record("no move back"); return }
        #expect(back == ["a", "b"])
        guard case .claimed(let histories) = outcome else { Issue.record("not a claim outcome"); return }
        #expect(histories.isEmpty)
    }

    @Test func completeRecordsBeforeItRemoves() {
        var run = ShareLifecycle.complete([.init(shareID: "a", durationMilliseconds: 3)])
        #expect(drive(&run).points == ["complete.record-processed", "complete.remove-processing"])
        var failing = ShareLifecycle.complete([.init(shareID: "a", durationMilliseconds: 3)])
        let (points, _, outcome) = drive(&failing) { _ in .failed(error) }
        // Not recorded: nothing is removed, and the share runs again after recovery.
        #expect(points == ["complete.record-processed"])
        #expect(failed(outcome) == ["a"])
    }

    @Test func failedAttemptsRetryWithADoublingDelayThenQuarantine() {
        let policy = ShareLifecycle.RetryPolicy(maxAttempts: 3, retryDelayMilliseconds: 100)
        for (attempt, delay) in [(1, 100), (2, 200)] {
            var run = ShareLifecycle.failed(
                "a", attempt: attempt, error: error, durationMilliseconds: 5, policy: policy, now: 1_000,
                firstAttemptAt: nil)
            #expect(run.transition == .retry)
            let (points, actions, _) = drive(&run)
            #expect(points == ["retry.record-retry", "retry.move-incoming"])
            guard case .record(.retry(_, _, _, let notBefore)) = actions.first else { Issue.record("no retry"); return }
            #expect(notBefore == 1_000 + Int64(delay))
        }
        var last = ShareLifecycle.failed(
            "a", attempt: 3, error: error, durationMilliseconds: 5, policy: policy, now: 9_000, firstAttemptAt: 1_000)
        #expect(last.transition == .quarantine)
        let (points, actions, _) = drive(&last)
        #expect(points == [
            "quarantine.write-reason", "quarantine.record-quarantined", "quarantine.move-quarantine",
            "quarantine.sync-quarantine",
        ])
        guard case .writeReason(_, let reason) = actions.first else { Issue.record("no reason"); return }
        #expect(reason.attempts == 3 && reason.code == .processorFailed && reason.message == "ERR_IO: boom")
    }

    /// A run's start is recorded before its processor runs, so that a death charges only a share whose processor
    /// was running; a share whose processor was running at `maxAttempts` consecutive deaths is quarantined instead
    /// of run again, with a reason that says it takes its daemon down.
    @Test func aRunStartIsRecordedUnlessTheShareTookItsDaemonDownEveryTime() {
        for deaths in 0..<3 {
            var run = ShareLifecycle.start(
                "a", history: .init(attempts: 1, deaths: deaths), maxAttempts: 3, now: 9_000, firstAttemptAt: nil)
            #expect(run.transition == .start)
            let (points, actions, outcome) = drive(&run)
            #expect(points == ["start.record-started"])
            guard case .record(.started(let id, let succeeded)) = actions.first else {
                Issue.record("no start"); return
            }
            #expect(id == "a" && succeeded.isEmpty && failed(outcome).isEmpty)
        }
        // The worker's earlier successes ride on the same commit; without a next start they are recorded alone.
        var carrying = ShareLifecycle.start(
            "a", history: .init(attempts: 0, deaths: 0), maxAttempts: 3, now: 9_000, firstAttemptAt: nil,
            succeeded: ["b", "c"])
        guard case .record(.started("a", let succeeded)) = drive(&carrying).actions.first else {
            Issue.record("no start"); return
        }
        #expect(succeeded == ["b", "c"])
        var alone = ShareLifecycle.succeed(["b"])
        #expect(drive(&alone).points == ["succeed.record-succeeded"])
        var poison = ShareLifecycle.start(
            "a", history: .init(attempts: 1, deaths: 3), maxAttempts: 3, now: 9_000, firstAttemptAt: 1_000)
        #expect(poison.transition == .quarantine)
        let (points, actions, _) = drive(&poison)
        #expect(points == [
            "quarantine.write-reason", "quarantine.record-quarantined", "quarantine.move-quarantine",
            "quarantine.sync-quarantine",
        ])
        guard case .writeReason(_, let reason) = actions.first else { Issue.record("no reason"); return }
        #expect(reason.code == .processorFailed && reason.attempts == 4)
        #expect(reason.message.hasPrefix("ERR_PROCESSOR_FAILED: the processor was running at 3 consecutive deaths"))
        #expect(reason.message.hasSuffix("the share takes its daemon down"))
        // Quarantined without a run: no attempt is counted.
        guard case .record(.quarantined(_, let code, nil)) = actions.dropFirst().first else {
            Issue.record("no quarantine without a duration"); return
        }
        #expect(code == .processorFailed)
        // A share with a death on its record runs alone, so that the next death is its own.
        #expect(!ShareLifecycle.runsAlone(.init(attempts: 2, deaths: 0)))
        #expect(ShareLifecycle.runsAlone(.init(attempts: 0, deaths: 1)))
        // Attempts used up (made before --max-attempts was lowered): quarantined without a run too.
        var exhausted = ShareLifecycle.start(
            "a", history: .init(attempts: 5, deaths: 0), maxAttempts: 3, now: 9_000, firstAttemptAt: nil)
        #expect(exhausted.transition == .quarantine)
        guard case .writeReason(_, let counted) = drive(&exhausted).actions.first else {
            Issue.record("no reason"); return
        }
        #expect(counted.attempts == 5 && counted.message == "ERR_PROCESSOR_FAILED: 5 attempts made, 3 allowed")
    }

    /// A death (the claimer's lock free, its row claimed) is charged only when the share's processor was running:
    /// a share merely claimed (or queued behind the running ones) goes back to `incoming` charged nothing, and one
    /// whose run had succeeded is completed (not run again).
    @Test func aDeathChargesOnlyAShareWhoseProcessorWasRunning() {
        for state in [RunState.notStarted, .started] {
            var (run, kind) = ShareLifecycle.recovery(
                of: "a", foundIn: .processing, recorded: .claimed, run: state, hasReason: false, reason: nil)
            let (points, actions, outcome) = drive(&run)
            #expect(kind == .returnedToIncoming && failed(outcome).isEmpty)
            let charged = actions.filter { if case .record(.crashed("a")) = $0 { true } else { false } }.count
            let uncharged = actions.filter { if case .record(.recovered("a")) = $0 { true } else { false } }.count
            #expect(charged == (state == .started ? 1 : 0), "\(state)")
            #expect(uncharged == (state == .started ? 0 : 1), "\(state)")
            let record = state == .started ? "recover.record-crashed" : "recover.record-recovered"
            #expect(points == [record, "recover.move-incoming"])
        }
        var (succeeded, kind) = ShareLifecycle.recovery(
            of: "a", foundIn: .processing, recorded: .claimed, run: .succeeded, hasReason: false, reason: nil)
        #expect(kind == .completed)
        #expect(drive(&succeeded).points == [
            "recover.record-finished", "recover.remove-processing", "recover.sync-processing",
        ])
        // Only a claimed row can have a run: in any other state the run state changes nothing.
        for recorded in ShareState.allCases where recorded != .claimed {
            for stage in Spool.Stage.allCases {
                let points = RunState.allCases.map { state in
                    var run = ShareLifecycle.recovery(
                        of: "a", foundIn: stage, recorded: recorded, run: state, hasReason: false, reason: nil).run
                    return drive(&run).points
                }
                #expect(Set(points).count == 1, "\(recorded) in \(stage)")
            }
        }
    }

    @Test func singleShareTransitionsInOrder() {
        var release = ShareLifecycle.release("a")
        #expect(drive(&release).points == ["release.record-released", "release.move-incoming"])
        var requeue = ShareLifecycle.requeue("a")
        #expect(drive(&requeue).points == [
            "requeue.record-requeued", "requeue.remove-reason", "requeue.move-incoming", "requeue.sync-incoming",
        ])
        var purge = ShareLifecycle.purge("a")
        #expect(drive(&purge).points == ["purge.record-purged", "purge.remove-quarantine", "purge.sync-quarantine"])
        var rollBack = ShareLifecycle.rollBack(record("a").manifest, code: .typeMismatch)
        #expect(drive(&rollBack).points == ["roll-back.remove-staging", "roll-back.record-rolled-back"])
        // A record that fails ends the run before its rename: the ledger is never behind the directories.
        var failing = ShareLifecycle.release("a")
        #expect(drive(&failing) { _ in .failed(error) }.points == ["release.record-released"])
    }

    /// Every ledger change names the states it starts from; a change from any other state is refused by the ledger
    /// (a precondition violation), so these are the legal transitions.
    @Test func everyChangeStartsFromItsStates() {
        let table: [(ShareLifecycle.Record, [ShareState], ShareState?)] = [
            (.published(["a"], sourcesDone: []), [.staged], .published),
            (.unpublished(["a"], code: nil), [.staged], .rejected),
            (.claimed(["a"]), [.published], .claimed),
            (.started("a", succeeded: ["b"]), [.claimed], .claimed),
            (.succeeded(["a"]), [.claimed], .claimed),
            (.processed([.init(shareID: "a", durationMilliseconds: 1)]), [.claimed], .processed),
            (.retry("a", code: .io, durationMilliseconds: 1, notBefore: 0), [.claimed], .published),
            (.quarantined("a", code: .io, durationMilliseconds: nil), [.claimed], .quarantined),
            (.released("a"), [.claimed], .published),
            (.recovered("a"), [.claimed], .published),
            (.crashed("a"), [.claimed], .published),
            (.finished("a"), [.claimed], .processed),
            (.requeued("a"), [.quarantined], .published),
            (.purged("a"), [.quarantined], .purged),
        ]
        for (record, from, to) in table {
            #expect(record.from == from, "\(record.name)")
            #expect(record.to == to, "\(record.name)")
            // Terminal states are never left.
            #expect(!record.from.contains { $0.isTerminal }, "\(record.name)")
        }
    }

    @Test func recoveryHasAPlanForEveryStateInEveryDirectory() {
        let states: [ShareState?] = ShareState.allCases.map { $0 } + [nil]
        for stage in Spool.Stage.allCases {
            for recorded in states {
                for hasReason in [false, true] {
                    var (run, kind) = ShareLifecycle.recovery(
                        of: "a", foundIn: stage, recorded: recorded, run: .notStarted, hasReason: hasReason,
                        reason: QuarantineReason(
                            code: .processorFailed, message: "m", attempts: 1, firstAttemptAt: "", lastAttemptAt: ""))
                    let (_, actions, outcome) = drive(&run)
                    #expect(failed(outcome).isEmpty)
                    // A recovered share ends in exactly one stage, never in `processing` or `staging`.
                    let moves = actions.compactMap { action -> Spool.Stage? in
                        if case .move(_, _, let to) = action { return to }
                        return nil
                    }
                    #expect(moves.count <= 1)
                    #expect(!moves.contains(.processing) && !moves.contains(.staging))
                    switch (stage, recorded) {
                    case (.staging, _):
                        #expect(kind == .stagingRemoved)
                    case (.processing, .processed), (.processing, .purged):
                        #expect(kind == .completed)
                    case (.processing, .quarantined):
                        #expect(moves == [.quarantine] && kind == .rolledForward)
                        let writes = actions.contains { if case .writeReason = $0 { return true } else { return false } }
                        #expect(writes == !hasReason)
                    case (.processing, .claimed):
                        // The dead claim's processor was not running: nothing is charged.
                        #expect(moves == [.incoming] && kind == .returnedToIncoming)
                        #expect(actions.contains { if case .record(.recovered) = $0 { return true } else { return false } })
                    case (.processing, _):
                        #expect(moves == [.incoming] && kind == .returnedToIncoming)
                    case (.quarantine, .published):
                        #expect(moves == [.incoming] && kind == .rolledForward)
                    default:
                        #expect(actions.isEmpty && kind == .none)
                    }
                }
            }
        }
    }

    @Test func reconciliationMakesEveryRowFollowItsDirectory() {
        let live: [ShareState] = [.staged, .published, .claimed, .quarantined]
        let found: [Spool.Stage?] = Spool.Stage.allCases.map { $0 } + [nil]
        let home: [ShareState: Spool.Stage] = [
            .staged: .staging, .published: .incoming, .claimed: .processing, .quarantined: .quarantine,
        ]
        for state in live {
            for stage in found {
                let result = ShareLifecycle.reconciliation(of: "a", recorded: state, foundIn: stage)
                if stage == home[state] || stage == .processing {
                    #expect(result == nil, "\(state) in \(String(describing: stage))")
                    continue
                }
                guard let (record, isRepair) = result else {
                    Issue.record("no reconciliation for \(state) in \(String(describing: stage))")
                    continue
                }
                if state == .staged && stage == .incoming {
                    #expect(!isRepair && record.to == .published)
                } else {
                    #expect(isRepair)
                    let expected: ShareState = switch stage {
                    case .incoming: .published
                    case .quarantine: .quarantined
                    case .staging: .staged
                    case .processing: .claimed
                    case nil: state == .staged ? .rejected : .purged
                    }
                    #expect(record.to == expected)
                }
            }
        }
        for terminal in [ShareState.processed, .rejected, .purged] {
            #expect(ShareLifecycle.reconciliation(of: "a", recorded: terminal, foundIn: .incoming) == nil)
        }
    }

    @Test func aReserveBatchAnswersEachSharesOriginsOrFailsEveryShare() {
        func reservation(_ id: String) -> ContentReservation {
            ContentReservation(
                shareID: id, createdAt: 1, claims: [], policy: .flag, allOrNothing: false, windowStart: 0,
                reservationsSince: 0)
        }
        let origin = DuplicateOrigin(shareId: "o", fileId: "f", createdAt: "2026-12-01T00:00:00.000Z")
        var run = ShareLifecycle.reserve([reservation("a"), reservation("b")])
        let (points, actions, outcome) = drive(&run) { _ in .reserved([[nil, origin], [origin]]) }
        #expect(points == ["reserve.record-reserved"])
        guard case .record(.reserved(let batch)) = actions.first else { Issue.record("no reservation"); return }
        #expect(batch.map(\.shareID) == ["a", "b"])
        guard case .reserved(let origins) = outcome else { Issue.record("not a reservation"); return }
        #expect(origins == [[nil, origin], [origin]])
        var failing = ShareLifecycle.reserve([reservation("a"), reservation("b")])
        #expect(failed(drive(&failing) { _ in .failed(error) }.outcome) == ["a", "b"])
    }

    @Test func crashPointsAreTheDocumentedOnes() {
        #expect(ShareLifecycle.crashPoints.count == Set(ShareLifecycle.crashPoints).count)
        for point in ShareLifecycle.crashPoints {
            #expect(ShareLifecycle.Transition(rawValue: String(point.prefix { $0 != "." })) != nil, "\(point)")
        }
    }
}
