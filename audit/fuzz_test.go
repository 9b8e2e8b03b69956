package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/iotest"
)

// FuzzCensus feeds arbitrary bytes to the census, with the real limits and
// with limits small enough that long lines and split reads are common. The
// census must never fail or panic on its input, every line must be
// accounted for exactly once, and the report must add up.
func FuzzCensus(f *testing.F) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "pi-review.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	for _, s := range []string{
		"",
		"\n",
		"\r\n\r\n",
		"{",
		"null\n[]\n\"x\"\n",
		`{"event":"permission_request.approved","requestId":"a","approved":true}` + "\n" +
			`{"event":"forwarded_permission.response_received","requestId":"a","decidedBy":{"kind":"forwarded","responderSessionId":null,"decision":{"kind":"user","via":"dialog"}}}`,
		`{"event":"permission_request.denied","decidedBy":{"kind":"authorizer","name":"x","verdict":"deny","reason":null}}`,
		`{"event":"forwarded_permission.approved","requestId":"b","decidedBy":{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"forwarded","responderSessionId":"q","decision":{"kind":"forwarded","responderSessionId":"r","decision":{"kind":"forwarded","responderSessionId":"s","decision":{"kind":"forwarded","responderSessionId":"t","decision":null}}}}}}`,
		`{"event":"permission_request.blocked","requestId":"c","approved":null,"resolution":"policy_deny"}` + "\n" + `{"event":"x"}`,
		`{"event":"x"}` + "\n" + `{"timestamp":"2026-07-15T08:11:12.345Z","event":"review_log_rotated","previousSize":14}` + "\n" + `{"event":"review_log_rotated","previousSize":"x"}`,
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		want := bytes.Count(data, []byte("\n"))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			want++
		}
		for _, limits := range []struct{ maxLine, bufSize int }{
			{MaxLineBytes, readBufferSize},
			{40, 16},
		} {
			r, err := census(bytes.NewReader(data), limits.maxLine, limits.bufSize)
			if err != nil {
				t.Fatalf("census(%+v): %v", limits, err)
			}
			checkReport(t, r, want)

			// Split reads must not change a thing.
			split, err := census(iotest.OneByteReader(bytes.NewReader(data)), limits.maxLine, limits.bufSize)
			if err != nil {
				t.Fatalf("census one byte at a time: %v", err)
			}
			if !reflect.DeepEqual(split, r) {
				t.Fatalf("one-byte reads changed the report:\n%+v\n%+v", split, r)
			}
		}
	})
}

func checkReport(t *testing.T, r Report, lines int) {
	t.Helper()
	l := r.Lines
	if l.Read != lines {
		t.Fatalf("read %d lines, input has %d", l.Read, lines)
	}
	if l.Blank+l.Bad+l.Entries != l.Read {
		t.Fatalf("lines do not add up: %+v", l)
	}
	if len(r.RotatedAway) > MaxBadLineExamples || r.RotatedAwayMore > 0 && len(r.RotatedAway) < MaxBadLineExamples || len(r.RotatedAway)+r.RotatedAwayMore > l.Entries {
		t.Fatalf("%d markers listed and %d more, of %d entries", len(r.RotatedAway), r.RotatedAwayMore, l.Entries)
	}
	if l.Terminal > l.Entries || r.Total.Decisions > l.Terminal || r.UndecodableDecidedBy > l.Terminal {
		t.Fatalf("more decisions than lines: %+v, total %+v, undecodable %d", l, r.Total, r.UndecodableDecidedBy)
	}
	if want := min(l.Bad, MaxBadLineExamples); len(r.BadLines) != want {
		t.Fatalf("%d bad lines listed, want %d", len(r.BadLines), want)
	}
	prev := 0
	for _, b := range r.BadLines {
		if b.Line <= prev || b.Line > l.Read || b.Reason == "" {
			t.Fatalf("bad line list %+v", r.BadLines)
		}
		prev = b.Line
	}
	var sum Counts
	for _, row := range r.Deciders {
		if row.Approved+row.Denied > row.Decisions || row.Approved < 0 || row.Denied < 0 {
			t.Fatalf("row does not add up: %+v", row)
		}
		sum.Decisions += row.Decisions
		sum.Approved += row.Approved
		sum.Denied += row.Denied
	}
	if sum != r.Total {
		t.Fatalf("rows sum to %+v, total says %+v", sum, r.Total)
	}
	f := r.Forwarded
	if f.Decisions > r.Total.Decisions || f.Approved > r.Total.Approved || f.Denied > r.Total.Denied || f.Approved+f.Denied > f.Decisions {
		t.Fatalf("forwarded %+v exceeds total %+v", f, r.Total)
	}

	var table, js bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON report does not parse: %v", err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Fatalf("JSON report does not round-trip")
	}
}
