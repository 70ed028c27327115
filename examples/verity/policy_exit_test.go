//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPolicyExitCodes: verity policy's one rule, read from the built
// command's exit status: 0 the policy is clean or every case passed, 1
// the check found problems or a case failed, 2 the check or test could
// not run — a usage error, or a policy, cases or tools file that is
// missing, a FIFO, invalid or not JSON, or an upstream that lists no
// tools. A bad or missing policy used to exit 1, like a finding.
func TestPolicyExitCodes(t *testing.T) {
	bin := verityBinary(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	missing := filepath.Join(dir, "missing.json")
	invalid := filepath.Join(dir, "invalid.json")
	require.NoError(t, os.WriteFile(invalid, []byte(`{"version": 1, "budget": "1", "min_cost": "0", "tools": [{"match": "x"}]}`), 0o600))
	notJSON := filepath.Join(dir, "not.json")
	require.NoError(t, os.WriteFile(notJSON, []byte("not json"), 0o600))
	failing := filepath.Join(dir, "failing.cases.json")
	require.NoError(t, os.WriteFile(failing, []byte(`{"cases": [{"name": "moves run at once", "tool": "move_file", "arguments": {"source": "/a", "destination": "/b"}, "expect": "allow"}]}`), 0o600))
	example := "../../kernel/toolgate/testdata/policy/example.json"
	for _, tc := range []struct {
		code int
		args []string
		says string
	}{
		{0, []string{"policy", "check", fsPolicy, "-tools", fsTools}, ""},
		{0, []string{"policy", "test", fsPolicy, fsCases}, ""},
		{1, []string{"policy", "check", example, "-tools", fsTools}, "the policy has problems"},
		{1, []string{"policy", "test", fsPolicy, failing}, "1 case(s) failed"},
		{2, []string{"policy", "check", missing, "-tools", fsTools}, "no such file"},
		{2, []string{"policy", "check", invalid, "-tools", fsTools}, "/min_cost"},
		{2, []string{"policy", "check", fifo, "-tools", fsTools}, "not a regular file"},
		{2, []string{"policy", "check", fsPolicy, "-tools", missing}, "no such file"},
		{2, []string{"policy", "check", fsPolicy, "-tools", notJSON}, "not a tools/list result"},
		{2, []string{"policy", "check", fsPolicy, "--", filepath.Join(dir, "no-such-server")}, "no-such-server"},
		{2, []string{"policy", "test", missing, fsCases}, "no such file"},
		{2, []string{"policy", "test", invalid, fsCases}, "/min_cost"},
		{2, []string{"policy", "test", fsPolicy, missing}, "no such file"},
		{2, []string{"policy", "test", fsPolicy, notJSON}, "not.json"},
		{2, []string{"policy", "test", fsPolicy, fifo}, "not a regular file"},
		{2, []string{"policy", "check", fsPolicy}, "give -tools FILE"},
		{2, []string{"policy", "test", fsPolicy}, "want POLICY CASES"},
	} {
		r := verityProcess(t, bin, 30*time.Second, tc.args...)
		assert.Equal(t, tc.code, r.code, "%q: %s%s", tc.args, r.stdout, r.stderr)
		assert.Contains(t, r.stdout+r.stderr, tc.says, "%q", tc.args)
		if tc.code == 2 && tc.says != "give -tools FILE" && tc.says != "want POLICY CASES" {
			assert.NotContains(t, r.stderr, "usage: verity", "%q: an input error, not a usage error: no usage text", tc.args)
		}
	}
}
