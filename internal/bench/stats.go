package bench

import (
	"encoding/json"
	"math"
	"slices"
	"time"
)

// Summary is the distribution of one set of round-trip latencies.
type Summary struct {
	N    int
	P50  time.Duration
	P90  time.Duration
	P99  time.Duration
	Max  time.Duration
	Mean time.Duration
}

// Summarize describes samples. It sorts a copy, so the caller's order (the
// order the asks ran in) is kept. No samples give the zero Summary.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	var sum time.Duration
	for _, s := range sorted {
		sum += s
	}
	return Summary{
		N:    len(sorted),
		P50:  Percentile(sorted, 50),
		P90:  Percentile(sorted, 90),
		P99:  Percentile(sorted, 99),
		Max:  sorted[len(sorted)-1],
		Mean: sum / time.Duration(len(sorted)),
	}
}

// Percentile is the nearest-rank p-th percentile of sorted (ascending):
// the smallest sample that at least p percent of the samples are less than
// or equal to. Nearest rank never interpolates, so every figure reported is
// a latency that was actually measured; with 100 samples p99 is the 99th
// smallest, not a blend of the two largest. p is clamped to [0, 100]; p 0
// gives the minimum. An empty slice gives 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if math.IsNaN(p) || p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	// The rank is computed in integer hundredths of a percent so that
	// float rounding (0.99*100 = 98.99999…) cannot move it by one.
	hundredths := int64(math.Round(p * 100))
	rank := (hundredths*int64(n) + 9999) / 10000 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// micros is a duration as whole microseconds, rounded to nearest.
func micros(d time.Duration) int64 {
	return (int64(d) + int64(time.Microsecond)/2) / int64(time.Microsecond)
}

// summaryJSON is Summary on the wire: microseconds, which is the unit of
// the headline and of the table.
type summaryJSON struct {
	N      int   `json:"n"`
	P50us  int64 `json:"p50_us"`
	P90us  int64 `json:"p90_us"`
	P99us  int64 `json:"p99_us"`
	MaxUs  int64 `json:"max_us"`
	MeanUs int64 `json:"mean_us"`
}

// MarshalJSON writes the summary in whole microseconds.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(summaryJSON{N: s.N, P50us: micros(s.P50), P90us: micros(s.P90), P99us: micros(s.P99), MaxUs: micros(s.Max), MeanUs: micros(s.Mean)})
}

// Rate is events per second over elapsed; zero when nothing elapsed.
func Rate(events int, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(events) / elapsed.Seconds()
}

// Ratio is a/b, or 0 when b is zero: a ratio against a missing baseline
// is reported as absent, never as infinity.
func Ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}
