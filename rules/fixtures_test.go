package rules

import "github.com/seed6639df8c/courier/mailbox"

var intentFixture = mailbox.AccessIntent{
	Surface:      "bash",
	MatchValues:  []string{"git status"},
	RequesterCwd: "/worktree",
	Principal:    mailbox.Principal{SessionID: "child", AgentName: "Explore"},
	Floor:        "<opaque-bash-wrapper>",
	AskingUnits:  []mailbox.AskingUnit{{Command: "git status", Floor: "<indirection-bash-wrapper>"}},
}
