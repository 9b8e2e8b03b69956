package bench

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestPercentileNearestRank(t *testing.T) {
	ten := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample is every percentile", ms(7), 99, 7 * time.Millisecond},
		{"p0 is the minimum", ten, 0, 1 * time.Millisecond},
		{"negative clamps to the minimum", ten, -5, 1 * time.Millisecond},
		{"p100 is the maximum", ten, 100, 10 * time.Millisecond},
		{"above 100 clamps to the maximum", ten, 250, 10 * time.Millisecond},
		// ceil(0.5*10) = 5: the 5th smallest, never an interpolation
		// between the 5th and the 6th.
		{"p50 of ten", ten, 50, 5 * time.Millisecond},
		{"p90 of ten", ten, 90, 9 * time.Millisecond},
		// ceil(0.99*10) = 10: with ten samples p99 is the maximum.
		{"p99 of ten", ten, 99, 10 * time.Millisecond},
		{"p91 of ten rounds the rank up", ten, 91, 10 * time.Millisecond},
		// 0.99*100 is 98.99999… in floating point; the rank must still
		// be exactly 99.
		{"p99 of a hundred", hundred, 99, 99 * time.Millisecond},
		{"p50 of a hundred", hundred, 50, 50 * time.Millisecond},
		{"p1 of a hundred", hundred, 1, 1 * time.Millisecond},
		{"p99.9 of a hundred", hundred, 99.9, 100 * time.Millisecond},
		{"small p is the first sample", ten, 0.01, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%d samples, %v) = %v, want %v", len(tt.sorted), tt.p, got, tt.want)
			}
		})
	}
}

// A percentile is always a sample, and at least p percent of the samples
// are at or below it while fewer than p percent are strictly below it.
func TestPercentileDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + r.IntN(500)
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(r.IntN(50)) * time.Microsecond // ties on purpose
		}
		slices.Sort(s)
		for _, p := range []float64{1, 10, 50, 90, 99, 99.9} {
			got := Percentile(s, p)
			if !slices.Contains(s, got) {
				t.Fatalf("p%v = %v is not a sample", p, got)
			}
			atOrBelow, below := 0, 0
			for _, v := range s {
				if v <= got {
					atOrBelow++
				}
				if v < got {
					below++
				}
			}
			if float64(atOrBelow) < p/100*float64(n)-1e-9 {
				t.Fatalf("n=%d p%v = %v: only %d samples at or below", n, p, got, atOrBelow)
			}
			if float64(below) >= p/100*float64(n) {
				t.Fatalf("n=%d p%v = %v: %d samples already below, a smaller one would do", n, p, got, below)
			}
		}
	}
}

func TestSummarize(t *testing.T) {
	in := ms(30, 10, 20, 40, 50, 60, 70, 80, 90, 100)
	orig := slices.Clone(in)
	s := Summarize(in)
	want := Summary{N: 10, P50: 50 * time.Millisecond, P90: 90 * time.Millisecond, P99: 100 * time.Millisecond, Max: 100 * time.Millisecond, Mean: 55 * time.Millisecond}
	if s != want {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	if !slices.Equal(in, orig) {
		t.Errorf("Summarize reordered its input: %v", in)
	}
	if got := Summarize(nil); got != (Summary{}) {
		t.Errorf("Summarize(nil) = %+v, want the zero Summary", got)
	}
}

func TestSummaryJSONIsMicroseconds(t *testing.T) {
	s := Summary{N: 3, P50: 1500 * time.Nanosecond, P90: 2499 * time.Nanosecond, P99: 2500 * time.Nanosecond, Max: time.Second, Mean: 0}
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"n":3,"p50_us":2,"p90_us":2,"p99_us":3,"max_us":1000000,"mean_us":0}`
	if string(got) != want {
		t.Errorf("json = %s, want %s", got, want)
	}
}

func TestRateAndRatio(t *testing.T) {
	if got := Rate(4000, 2*time.Second); got != 2000 {
		t.Errorf("Rate = %v, want 2000", got)
	}
	if got := Rate(10, 0); got != 0 {
		t.Errorf("Rate over no time = %v, want 0", got)
	}
	if got := Ratio(250*time.Millisecond, 500*time.Microsecond); got != 500 {
		t.Errorf("Ratio = %v, want 500", got)
	}
	if got := Ratio(time.Second, 0); got != 0 {
		t.Errorf("Ratio against a missing baseline = %v, want 0", got)
	}
}
