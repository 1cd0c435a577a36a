import Foundation

/// A named thread for blocking work (STYLE 15: the one way sharepipe makes threads). As a task executor it runs the
/// tasks that prefer it — a consumer worker, an ingest task, a batch lane — so their blocking file-system calls
/// (rename, fsync, unlink) never hold a thread of the cooperative pool; `detached` runs one blocking loop instead.
package final class Lane: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var stopping = false
    private let name: String

    package init(name: String) {
        self.name = name
    }

    /// Runs `body`, a loop that blocks (inotify, a heartbeat, a sync pool's worker), on a thread of its own named
    /// `name`, which ends when `body` returns.
    package static func detached(_ name: String, _ body: @escaping @Sendable () -> Void) {
        Thread {
            System.nameCurrentThread(name)
            body()
        }.start()
    }

    /// Starts the thread.
    package func start() {
        Thread { [self] in
            System.nameCurrentThread(name)
            loop()
        }.start()
    }

    /// Lets the thread finish the jobs it has and end; call once nothing runs on it any more.
    package func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            let batch = jobs
            jobs = []
            condition.unlock()
            if batch.isEmpty { return }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}
