import Foundation

/// A task executor with one dedicated thread: a consumer worker runs on it, so the worker's blocking file system
/// calls (rename, fsync, unlink) never hold a thread of the cooperative pool.
package final class WorkerThread: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var stopping = false
    private let name: String

    package init(name: String) {
        self.name = name
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
