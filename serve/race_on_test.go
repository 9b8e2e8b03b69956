//go:build race

package serve

// raceEnabled says the tests run under the race detector, which makes
// reading and checking a gigabyte of requests minutes slower.
const raceEnabled = true
