// Package archtest holds no code: its test checks that courier's packages
// import each other only as docs/ARCHITECTURE.md draws them, reading the
// import graph from `go list`.
package archtest
