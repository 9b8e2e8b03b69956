//go:build !race

package prompt

// raceDetector says the tests run with the race detector.
const raceDetector = false
