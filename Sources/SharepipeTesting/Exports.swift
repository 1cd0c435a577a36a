// The harnesses run scripted shares: their users get `ScriptedItemProvider` and `Scenario` with `SharepipeTesting`.
@_exported import SharepipeScenario
