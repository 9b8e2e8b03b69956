//go:build race

package prompt

// raceDetector says the tests run with the race detector, under which
// reading a megabyte costs a hundred times more.
const raceDetector = true
