package verity_test

// The README cannot drift from the code: TestREADMEGoBlocksCompile builds
// every Go block of README.md, and TestREADMECommands runs its shell
// blocks that need no network, as a reader would, in order.
//
// The README marks what the second test does with HTML comments (which
// the reader never sees) on the line before a fenced block:
//
//	<!-- check: file DIR/NAME -->  the block is a file the reader saves: written to DIR/NAME
//	<!-- check: run in DIR -->     the sh block is run by bash (set -euo pipefail) in DIR
//	<!-- check: output -->         the block is exactly what the last run block printed
//
// DIR is relative to a temporary workspace that stands for the directory
// a reader cloned the repository into: it holds "verity", a copy of this
// checkout's files, made instead of running a block's `git clone` line
// (the one line that needs the network, and the only one not run). Go
// modules come from the module cache (GOPROXY=off): the test builds
// offline, from what the checkout itself requires (go mod download fills
// the cache first when a fresh machine has not yet). Commands installed with `go install` land in the workspace's
// bin, first on PATH.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate"
)

// block is one fenced block of the README.
type block struct {
	line   int    // the fence's line number, from 1
	lang   string // the fence's info string
	text   string // the content, ending in a newline
	marker string // the check: comment just before the fence, without "check: "
}

var markerRE = regexp.MustCompile(`^<!-- check: (.+?) -->$`)

// readmeBlocks returns the fenced blocks of README.md.
func readmeBlocks(t *testing.T) []block {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks []block
		cur    *block
		prev   string
		fence  string
	)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur != nil && trimmed == fence:
			blocks = append(blocks, *cur)
			cur, prev = nil, ""
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(trimmed, "```"):
			fence = trimmed[:strings.LastIndex(trimmed, "`")+1]
			cur = &block{line: n, lang: strings.TrimSpace(trimmed[len(fence):])}
			if m := markerRE.FindStringSubmatch(prev); m != nil {
				cur.marker = m[1]
			}
		case trimmed != "":
			prev = trimmed
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: a block is never closed", cur.line)
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no fenced block")
	}
	return blocks
}

// repoRoot is this checkout's root: the directory of this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// readmeModules are the modules whose packages the README's commands
// build: the root, and the MCP module (verity-mcp and its test server).
var readmeModules = []string{".", "kernel/toolgate/mcp"}

// rootModulesCached makes sure the modules this checkout's README builds
// require are in the module cache (go mod download, with the environment
// the tests run in: nothing is fetched when they already are), so that
// the README's commands, run offline, find everything a clone's build
// would.
func rootModulesCached(t *testing.T, root string) {
	t.Helper()
	for _, mod := range readmeModules {
		cmd := exec.Command("go", "mod", "download")
		cmd.Dir = filepath.Join(root, mod)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go mod download in %s: %v\n%s", cmd.Dir, err, out)
		}
	}
}

// offlineEnv is the environment of the go commands the tests run: no
// module proxy, no checksum database (the cached modules were checked
// against the checkout's go.sum when they were downloaded), no workspace
// file.
func offlineEnv(extra ...string) []string {
	return append(os.Environ(), append([]string{"GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local"}, extra...)...)
}

// TestREADMEGoBlocksCompile builds every Go block of the README, each as
// a package of its own in a module that requires Verity from this
// checkout (a replace directive), as a reader's module would.
func TestREADMEGoBlocksCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root := repoRoot(t)
	rootModulesCached(t, root)
	mod := t.TempDir()
	n := 0
	for _, b := range readmeBlocks(t) {
		if b.lang != "go" {
			continue
		}
		if !regexp.MustCompile(`(?m)^package \w+`).MatchString(b.text) {
			t.Errorf("README.md:%d: a Go block is a whole file, beginning with its package clause", b.line)
			continue
		}
		dir := filepath.Join(mod, fmt.Sprintf("block%d", b.line))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("README.md has no Go block")
	}
	gomod := fmt.Sprintf("module readme.example\n\ngo %s\n\nrequire github.com/verity-go/verity v0.0.0\n\nreplace github.com/verity-go/verity => %s\n",
		strings.TrimPrefix(goVersion(t, root), "go"), root)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}, {"build", "-o", os.DevNull, "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = mod, offlineEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the README's module (block N is the block at README.md line N): %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// goVersion is the go directive of the checkout's go.mod.
func goVersion(t *testing.T, root string) string {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

// TestREADMECommands runs the README's marked blocks in order, as a
// reader who copies them would (see the top of this file).
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's programs; not with -short")
	}
	if raceEnabled {
		t.Skip("the README's programs are built by the go commands the test starts, never with -race: run without it")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the README's commands are for a POSIX shell")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root := repoRoot(t)
	rootModulesCached(t, root)
	ws := t.TempDir()
	copyCheckout(t, root, filepath.Join(ws, "verity"))
	bin := filepath.Join(ws, "bin")
	env := offlineEnv("GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	var last string // what the last run block printed
	ran, outputs := 0, 0
	for _, b := range readmeBlocks(t) {
		kind, arg, _ := strings.Cut(b.marker, " ")
		switch kind {
		case "":
			continue
		case "file":
			path := filepath.Join(ws, filepath.FromSlash(arg))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(b.text), 0o644); err != nil {
				t.Fatal(err)
			}
		case "run":
			dir, ok := strings.CutPrefix(arg, "in ")
			if !ok || b.lang != "sh" {
				t.Fatalf("README.md:%d: a run marker reads <!-- check: run in DIR --> before an sh block", b.line)
			}
			var script strings.Builder
			script.WriteString("set -euo pipefail\n")
			for _, l := range strings.Split(b.text, "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "git clone ") {
					continue // the workspace already holds the checkout
				}
				script.WriteString(l + "\n")
			}
			cmd := exec.Command("bash", "-c", script.String())
			cmd.Dir, cmd.Env = filepath.Join(ws, filepath.FromSlash(dir)), env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("README.md:%d: the block run in %s failed: %v\n%s\nstdout:\n%s\nstderr:\n%s", b.line, dir, err, b.text, stdout.String(), stderr.String())
			}
			last = stdout.String()
			ran++
		case "output":
			if got, want := trimLines(last), trimLines(b.text); got != want {
				t.Errorf("README.md:%d: the output shown is not what the commands before it print\nshown:\n%s\nprinted:\n%s", b.line, want, got)
			}
			outputs++
		default:
			t.Fatalf("README.md:%d: unknown marker %q", b.line, b.marker)
		}
	}
	if ran == 0 || outputs == 0 {
		t.Fatalf("README.md has %d run blocks and %d output blocks; the guide's commands and output must be marked", ran, outputs)
	}
}

// trimLines drops trailing spaces and blank lines at the end.
func trimLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n "), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

// copyCheckout copies the files git tracks in root to dst: a clone's
// content, without the build artefacts and logs a working tree may hold.
func copyCheckout(t *testing.T, root, dst string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (the test copies the checkout's tracked files)", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or not a regular file
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// policyLinkRE finds the policy files the README links to.
var policyLinkRE = regexp.MustCompile(`\]\(([^)\s]+\.json)\)`)

// TestREADMEPoliciesSayWhatTheyDo: every policy file the README links to
// loads and compiles, and no rule's description promises a settlement
// the rule cannot make: a rule said to be "settled at" a measured figure
// is reserved and names the figure (cost_from).
func TestREADMEPoliciesSayWhatTheyDo(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range policyLinkRE.FindAllStringSubmatch(string(b), -1) {
		path := filepath.FromSlash(m[1])
		p, err := toolgate.LoadPolicy(path)
		if err != nil {
			t.Errorf("README links %s: %v", m[1], err)
			continue
		}
		if _, err := p.Compile(); err != nil {
			t.Errorf("README links %s: %v", m[1], err)
			continue
		}
		n++
		rules := p.Tools
		if p.DefaultRule != nil {
			rules = append(rules, *p.DefaultRule)
		}
		for i, r := range rules {
			if strings.Contains(r.Description, "settled at") && (!r.Reserve || r.CostFrom == "") {
				t.Errorf("%s: rule %d (%s) says %q but has no cost_from to settle at", m[1], i, r.Match, r.Description)
			}
		}
	}
	if n < 2 {
		t.Fatalf("README links %d policy files; it shows at least the demonstration's and the filesystem server's", n)
	}
}
