import Foundation
import SharepipeCore

extension CommandLineTool {
    /// The `sharepipe` command line. The version is written here and nowhere else; every top-level command is one
    /// line in `commands`, in the order `sharepipe help` lists them.
    static let sharepipe = CommandLineTool(
        name: "sharepipe",
        version: "0.1.0",
        abstract: "A share-extension ingest pipeline: load shared attachments safely, spool them, process them.",
        commands: [
            DaemonCommand.self,
            ShareCommand.self,
            ActivationCommand.self,
            TypesCommand.self,
            ConsumeCommand.self,
            StatusCommand.self,
            LsCommand.self,
            ShowCommand.self,
            EventsCommand.self,
            RequeueCommand.self,
            PurgeCommand.self,
            NotificationsCommand.self,
            DoctorCommand.self,
            MatrixCommand.self,
            CompletionsCommand.self,
            ManpageCommand.self,
        ])
}

CommandLineProcess.exit(await CommandLineTool.sharepipe.run(Array(CommandLine.arguments.dropFirst())))
