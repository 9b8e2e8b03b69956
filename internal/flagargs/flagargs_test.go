package flagargs

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args    []string
		pos     []string
		surface string
	}{
		{[]string{"curl *", "--surface", "bash"}, []string{"curl *"}, "bash"},
		{[]string{"--surface", "bash", "curl *"}, []string{"curl *"}, "bash"},
		{[]string{"--", "--surface"}, []string{"--surface"}, ""},
		{[]string{"a", "--", "-x", "b"}, []string{"a", "-x", "b"}, ""},
		{nil, nil, ""},
	}
	for _, tc := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		surface := fs.String("surface", "", "")
		pos, err := Parse(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *surface != tc.surface {
			t.Errorf("Parse(%q) = %q, surface %q, %v; want %q, %q", tc.args, pos, *surface, err, tc.pos, tc.surface)
		}
	}
}
