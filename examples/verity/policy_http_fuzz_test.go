package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzReadEvents: whatever a hostile upstream streams, reading its
// events returns the response to the request or an error, never a
// panic, and never a message that is not that response.
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n"))
	f.Add([]byte(": comment\r\nid: 7\r\ndata:{\"id\":2}\r\n\r\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		m, err := readEvents(bytes.NewReader(stream), json.RawMessage("1"))
		if err == nil && (string(m.ID) != "1" || m.Method != "") {
			t.Fatalf("returned %+v for request 1", m)
		}
	})
}
