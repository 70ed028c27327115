package mcp

import (
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkOutcome is outcome's reading of a raw result through the SDK's
// CallToolResult alone: what plainText must agree with.
func sdkOutcome(raw []byte) ([]byte, error) {
	var decoded sdk.CallToolResult
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return raw, err
	}
	return outcome(&decoded, nil)
}

var plainTextSeeds = []string{
	`{"content":[{"type":"text","text":"ping"}]}`,
	`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"isError":true}`,
	`{"content":[],"isError":false}`,
	`{}`,
	`{"_meta":{"k":1},"content":[{"text":"x","type":"text"}]}`,
	`{"content":[{"type":"text","text":"x\ud800y"}]}`,
	`{"content":[{"type":"text","text":"caf\u00e9 \"q\" \n"}]}`,
	`{"Content":[{"type":"text","text":"shadow"}],"content":[{"type":"text","text":"x"}]}`,
	`{"content":[{"type":"text","text":"x"}],"content":[{"type":"text","text":"y"}]}`,
	`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":1}}`,
	`{"content":[{"type":"text","text":"x"}],"isError":"yes"}`,
	`{"content":[{"type":"text"}]}`,
	`{"content":null}`,
	`{"content":[{"type":"text","text":"x"}],"_meta":null}`,
	`{"content":[{"type":"text","text":"x"}],"_meta":{"n":12345678901234567890}}`,
	`[1]`,
	`{"content":[{"type":"text","text":"x"}]} `,
	"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
}

// TestPlainTextReadsTheCommonResult: the results a tool usually returns
// take plainText's path, and read as the SDK reads them; the others are
// left to the SDK.
func TestPlainTextReadsTheCommonResult(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"ping"}]}`,
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"isError":true}`,
		`{"content":[],"isError":false}`,
		`{"content":[{"text":"x","type":"text"}]}`,
		`{"content":[{"type":"text","text":"caf\u00e9 \ud83d\ude00 \"q\"\n"}]}`,
	} {
		if _, _, ok := plainText([]byte(raw)); !ok {
			t.Errorf("%s: not read by plainText", raw)
		}
		checkPlainText(t, []byte(raw))
	}
	for _, raw := range []string{
		`{"Content":[{"type":"text","text":"shadow"}],"content":[{"type":"text","text":"x"}]}`,
		`{"content":[{"type":"text","text":"x"}],"content":[{"type":"text","text":"y"}]}`,
		`{"content":[{"type":"text","text":"x\ud800y"}]}`,
		`{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":1}}`,
		`{"_meta":{"k":1},"content":[{"type":"text","text":"x"}]}`,
		`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}`,
		`{"content":[{"type":"text","text":"x"}],"isError":null}`,
	} {
		if _, _, ok := plainText([]byte(raw)); ok {
			t.Errorf("%s: read by plainText, which leaves it to the SDK", raw)
		}
	}
}

// FuzzPlainTextAgrees: whenever plainText reads a result, it reads what
// the SDK's CallToolResult reads — the same text, the same failure.
func FuzzPlainTextAgrees(f *testing.F) {
	for _, s := range plainTextSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkPlainText(t, raw)
	})
}

func checkPlainText(t *testing.T, raw []byte) {
	t.Helper()
	text, isError, ok := plainText(raw)
	if !ok {
		return
	}
	want, werr := sdkOutcome(raw)
	if string(want) != text {
		t.Fatalf("%q: plainText reads %q, the SDK %q", raw, text, want)
	}
	if isError != (werr != nil) {
		t.Fatalf("%q: plainText reads isError %v, the SDK's error is %v", raw, isError, werr)
	}
	if werr != nil && werr.Error() != text {
		t.Fatalf("%q: the SDK's error %q is not the text %q", raw, werr, text)
	}
	got, gerr := outcome(&RawResult{JSON: raw}, nil)
	if string(got) != text || (gerr != nil) != isError || (gerr != nil && gerr.Error() != text) {
		t.Fatalf("%q: outcome reads %q %v", raw, got, gerr)
	}
}
