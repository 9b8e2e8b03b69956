package rules

import "github.com/seed6639df8c/courier/wire"

var intentFixture = wire.AccessIntent{
	Surface:      "bash",
	MatchValues:  []string{"git status"},
	RequesterCwd: "/worktree",
	Principal:    wire.Principal{SessionID: "child", AgentName: "Explore"},
	Floor:        "<opaque-bash-wrapper>",
	AskingUnits:  []wire.AskingUnit{{Command: "git status", Floor: "<indirection-bash-wrapper>"}},
}
