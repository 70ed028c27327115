package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testdata = "../../contracts/testdata"

func TestRun(t *testing.T) {
	valid := filepath.Join(testdata, "valid/rca_report/tool_failure.json")
	invalid := filepath.Join(testdata, "invalid/rca_report/schema.enum--primary_label.json")
	cases := []struct {
		name   string
		args   []string
		status int
		files  int
	}{
		{"all valid", []string{"-kind", "rca_report", valid}, 0, 1},
		{"one invalid", []string{"-kind", "rca_report", valid, invalid}, 1, 2},
		{"unknown kind", []string{"-kind", "rca", valid}, 2, 0},
		{"no kind", []string{valid}, 2, 0},
		{"no file", []string{"-kind", "rca_report"}, 2, 0},
		{"unreadable file", []string{"-kind", "rca_report", valid, filepath.Join(t.TempDir(), "missing.json")}, 2, 0},
		{"bad flag", []string{"-nope"}, 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			status := run(c.args, &out, &errOut)
			assert.Equal(t, c.status, status, errOut.String())
			if c.files == 0 {
				assert.Empty(t, out.String())
				assert.NotEmpty(t, errOut.String())
				return
			}
			var results []Result
			require.NoError(t, json.Unmarshal(out.Bytes(), &results))
			require.Len(t, results, c.files)
			assert.True(t, results[0].Valid)
			assert.NotNil(t, results[0].Violations)
			if c.files == 2 {
				assert.False(t, results[1].Valid)
				require.Len(t, results[1].Violations, 1)
				assert.Equal(t, "/primary_label", results[1].Violations[0].Path)
				assert.Equal(t, "schema.enum", results[1].Violations[0].Rule)
			}
		})
	}
}

// TestRunEveryFixture: every fixture directory is one kind; the command
// accepts each valid fixture and rejects each invalid one.
func TestRunEveryFixture(t *testing.T) {
	for _, dir := range []string{"valid", "invalid"} {
		kinds, err := os.ReadDir(filepath.Join(testdata, dir))
		require.NoError(t, err)
		for _, k := range kinds {
			files, err := filepath.Glob(filepath.Join(testdata, dir, k.Name(), "*.json"))
			require.NoError(t, err)
			require.NotEmpty(t, files)
			for _, f := range files {
				var out, errOut bytes.Buffer
				status := run([]string{"-kind", k.Name(), f}, &out, &errOut)
				want := 0
				if dir == "invalid" {
					want = 1
				}
				assert.Equal(t, want, status, "%s: %s%s", f, out.String(), errOut.String())
			}
		}
	}
}

// TestBinary builds the command and checks its exit status as a shell
// sees it.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "validate")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	cmd := exec.Command(bin, "-kind", "incident_dossier", filepath.Join(testdata, "invalid/incident_dossier/incident_dossier.timeline_sorted.json"))
	out, err := cmd.Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(out), `"rule": "incident_dossier.timeline_sorted"`)
	cmd = exec.Command(bin, "-kind", "nope", "x.json")
	require.ErrorAs(t, cmd.Run(), &exit)
	assert.Equal(t, 2, exit.ExitCode())
}
