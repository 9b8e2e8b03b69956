package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// broker audit --shadow reads the log it is given (a file with its
// rotation, or stdin) and prints the shadow report; --list with it is a
// usage error, not one report quietly preferred.
func TestAuditShadowCommand(t *testing.T) {
	fixture := filepath.Join("..", "..", "audit", "testdata", "shadow-review.jsonl")
	table, err := os.ReadFile(filepath.Join("..", "..", "audit", "testdata", "shadow-review.table.golden"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "review.jsonl")
	if err := os.WriteFile(log, data, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string // exact, when set
		wantInOut  string
		wantErr    string
	}{
		{name: "a file", args: []string{"--shadow", "--log", log},
			wantStdout: strings.Replace(string(table), "lines read:", "files read: "+log+"\nlines read:", 1)},
		{name: "stdin", args: []string{"--shadow", "--log", "-"}, stdin: string(data), wantStdout: string(table)},
		{name: "JSON", args: []string{"--shadow", "--json", "--log", log}, wantInOut: `"humanOtherwise": 2`},
		{name: "with --list", args: []string{"--shadow", "--list", "--log", log}, wantCode: exitUsage, wantErr: "drop --list or --shadow"},
		{name: "a filter without --list", args: []string{"--shadow", "--agent", "x", "--log", log}, wantCode: exitUsage, wantErr: "add --list"},
		{name: "no such log", args: []string{"--shadow", "--log", filepath.Join(dir, "none")}, wantCode: exitUsage, wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"audit"}, tt.args...), strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if tt.wantStdout != "" && stdout.String() != tt.wantStdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stdout.String(), tt.wantInOut) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantInOut, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, stderr.String())
			}
			if tt.name == "JSON" && !json.Valid(stdout.Bytes()) {
				t.Errorf("not JSON:\n%s", stdout.String())
			}
		})
	}
}
