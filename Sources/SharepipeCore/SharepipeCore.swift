// The library teams and the CLI import: every floor of the engine, lowest first (docs/architecture.md). A floor
// shows the floors above it only `package` declarations; what users may rely on is `public`.
@_exported import SharepipeSystem
@_exported import SharepipeLedger
@_exported import SharepipeSpool
@_exported import SharepipeIngest
@_exported import SharepipeDaemon
