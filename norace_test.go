//go:build !race

package verity_test

const raceEnabled = false
