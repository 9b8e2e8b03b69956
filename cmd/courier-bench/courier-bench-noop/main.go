// Command courier-bench-noop does nothing: courier-bench runs it beside
// the child to measure a Go process's start and exit alone, so that
// everything the child does beyond it (its package initialisation, its
// dynamic linking, its flags, its work) counts as the child's own. It
// imports nothing, on purpose: keep it so.
package main

func main() {}
