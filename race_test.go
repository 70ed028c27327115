//go:build race

package verity_test

// raceEnabled: the tests are built with -race. TestREADMECommands, whose
// work is done by the go commands it starts (not built with -race), runs
// once, without it.
const raceEnabled = true
