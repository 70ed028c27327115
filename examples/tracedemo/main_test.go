package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTraceDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"appended #3", "chain verified", "tampered", "detected: entry 1"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}
