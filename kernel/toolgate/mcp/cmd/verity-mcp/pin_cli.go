package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel/toolgate/pin"
)

// verity-mcp pin review|approve: the re-pin page's two actions from a
// terminal, as a client of a running proxy's approval inbox (its
// /api/pins and /api/repin, authenticated as the page is). `verity pin
// approve` (examples/verity) re-pins a tool in a lock file instead; this
// re-pins it in the running proxy, on its log.
//
//	verity-mcp pin review  -inbox URL [-token-file FILE]
//	verity-mcp pin approve -inbox URL -tool NAME [-seen HASH] [-reason TEXT] [-token-file FILE]
//
// review prints every drifted tool's review: both hashes, the diff of
// its definitions with invisible and look-alike characters written as
// visible escapes, and the warnings. approve prints the tool's review and
// re-pins it to exactly the definition shown (or, with -seen, only if the
// listed definition is still the one of that hash, as reviewed before):
// the proxy records the re-pin as the token's principal (or -approver
// without tokens). Exit status: 0 done, 1 refused or failed (the
// inbox's reason is printed), 2 usage.

const pinUsage = `usage: verity-mcp pin review -inbox URL [-token-file FILE]
       verity-mcp pin approve -inbox URL -tool NAME [-seen HASH] [-reason TEXT] [-token-file FILE]`

// runPin is `verity-mcp pin …`: it returns the exit status.
func runPin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "review" && args[0] != "approve") {
		fmt.Fprintln(stderr, pinUsage)
		return 2
	}
	verb := args[0]
	fs := flag.NewFlagSet("verity-mcp pin "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	inbox := fs.String("inbox", "", "the proxy's approval inbox (its -approvals address), e.g. http://127.0.0.1:8081/")
	tokenFile := fs.String("token-file", "", "a file holding the bearer token (a proxy with -jwks)")
	tool := fs.String("tool", "", "approve: the tool to re-pin")
	seen := fs.String("seen", "", "approve: the hash of the listed definition reviewed (refused if the server lists another)")
	reason := fs.String("reason", "", "approve: why, recorded with the re-pin")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "verity-mcp pin %s: %s\n%s\n", verb, msg, pinUsage)
		return 2
	}
	base, err := url.Parse(*inbox)
	switch {
	case *inbox == "":
		return usage("-inbox is required")
	case err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "":
		return usage(fmt.Sprintf("-inbox %q is not an http(s) URL", *inbox))
	case fs.NArg() > 0:
		return usage(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	case verb == "approve" && *tool == "":
		return usage("-tool is required")
	case verb == "review" && (*tool != "" || *seen != "" || *reason != ""):
		return usage("-tool, -seen and -reason are approve's")
	case *seen != "" && !pin.ValidHash(*seen):
		return usage(`-seen is "sha256:" and 64 lower-case hex digits`)
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	c := &inboxClient{base: base, http: &http.Client{Timeout: 30 * time.Second}}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return usage(fmt.Sprintf("-token-file: %v", err))
		}
		c.token = strings.TrimSpace(string(b))
	}
	list, err := c.reviews(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "verity-mcp pin %s: %v\n", verb, err)
		return 1
	}
	if verb == "review" {
		if len(list.Reviews) == 0 {
			fmt.Fprintln(stdout, "every tool the server lists is at its pinned definition")
		}
		for _, r := range list.Reviews {
			fmt.Fprintf(stdout, "%s (%s)\n%s\n", pin.Visible(r.Tool), r.Change, r.Text)
		}
		return 0
	}
	var r *pinReview
	for i := range list.Reviews {
		if list.Reviews[i].Tool == *tool {
			r = &list.Reviews[i]
		}
	}
	switch {
	case r == nil:
		fmt.Fprintf(stderr, "verity-mcp pin approve: tool %s is not drifted (nothing to approve)\n", pin.Visible(*tool))
		return 1
	case r.Seen == "":
		fmt.Fprintf(stderr, "verity-mcp pin approve: tool %s is no longer listed: there is no definition to pin\n", pin.Visible(*tool))
		return 1
	case *seen != "" && *seen != r.Seen:
		fmt.Fprintf(stderr, "verity-mcp pin approve: tool %s is listed at %s now, not %s: review it again\n", pin.Visible(*tool), r.Seen, *seen)
		return 1
	}
	fmt.Fprint(stdout, r.Text)
	res, status, err := c.repin(ctx, inboxRepin{Tool: r.Tool, Pinned: r.Pinned, Seen: r.Seen, Reason: *reason})
	if err != nil {
		fmt.Fprintf(stderr, "verity-mcp pin approve: %v\n", err)
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "verity-mcp pin approve: refused (HTTP %d): %s\n", status, res.Error)
		return 1
	}
	fmt.Fprintf(stdout, "re-pinned tool %s to %s as %s\n", pin.Visible(r.Tool), res.Pinned, list.You)
	return 0
}

// inboxClient talks to a proxy's approval inbox.
type inboxClient struct {
	base  *url.URL
	token string
	http  *http.Client
}

// maxInboxResponse bounds what the client reads of an answer.
const maxInboxResponse = 64 << 20

func (c *inboxClient) do(ctx context.Context, method, path string, body []byte) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base.JoinPath(path).String(), bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxInboxResponse))
	return b, resp.StatusCode, err
}

func (c *inboxClient) reviews(ctx context.Context) (pinList, error) {
	b, status, err := c.do(ctx, http.MethodGet, "api/pins", nil)
	if err != nil {
		return pinList{}, err
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return pinList{}, fmt.Errorf("the inbox refused the token (HTTP %d): give a valid one with -token-file", status)
	case status != http.StatusOK:
		return pinList{}, fmt.Errorf("listing the changed tools: HTTP %d", status)
	}
	var l pinList
	if err := json.Unmarshal(b, &l); err != nil {
		return pinList{}, fmt.Errorf("listing the changed tools: %w", err)
	}
	if !l.Pinning {
		return pinList{}, errors.New("the proxy pins no definitions (-pins off)")
	}
	return l, nil
}

func (c *inboxClient) repin(ctx context.Context, a inboxRepin) (repinResult, int, error) {
	body, err := json.Marshal(a)
	if err != nil {
		return repinResult{}, 0, err
	}
	b, status, err := c.do(ctx, http.MethodPost, "api/repin", body)
	if err != nil {
		return repinResult{}, 0, err
	}
	var r repinResult
	if err := json.Unmarshal(b, &r); err != nil {
		return repinResult{}, status, fmt.Errorf("the inbox's answer (HTTP %d): %w", status, err)
	}
	return r, status, nil
}
