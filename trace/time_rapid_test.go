package trace

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestTimeWireFormIsTimeFormat: the wire form of every time (appendTime,
// FormatTime) is what time.Time.Format writes with the wire layout: in
// years 0000-9999, both sides of every month, day and leap day.
func TestTimeWireFormIsTimeFormat(t *testing.T) {
	const layout = "2006-01-02T15:04:05.000000000Z"
	check := func(t *rapid.T, at time.Time) {
		if got, want := FormatTime(at), at.UTC().Format(layout); got != want {
			t.Fatalf("FormatTime(%v) = %s, want %s", at, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		at := time.Unix(rapid.Int64Range(minUnix, maxUnix-1).Draw(t, "sec"), rapid.Int64Range(0, 999999999).Draw(t, "nsec"))
		check(t, at)
		// Around midnight of a drawn day, in some zone.
		day := at.UTC().Truncate(24 * time.Hour)
		for _, d := range []time.Duration{-time.Nanosecond, 0, time.Nanosecond} {
			if u := day.Add(d).Unix(); u >= minUnix && u < maxUnix {
				check(t, day.Add(d).In(time.FixedZone("z", rapid.IntRange(-14*3600, 14*3600).Draw(t, "zone"))))
			}
		}
	})
	for _, s := range []string{"0000-01-01T00:00:00.000000000Z", "0000-02-29T23:59:59.999999999Z", "0000-03-01T00:00:00.000000000Z",
		"1900-02-28T12:00:00.000000001Z", "1970-01-01T00:00:00.000000000Z", "1969-12-31T23:59:59.999999999Z", "2000-02-29T00:00:00.000000000Z",
		"2100-03-01T00:00:00.000000000Z", "9999-12-31T23:59:59.999999999Z"} {
		at, err := time.Parse(layout, s)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatTime(at); got != s {
			t.Errorf("FormatTime(%s) = %s", s, got)
		}
	}
}
