// Command testserver is a small MCP server over stdio that the tests of
// kernel/toolgate/mcp run as the upstream behind verity-mcp. It serves a
// sandbox of files and records every tool execution it actually performs,
// so a test checks "ran once" and "never ran" on the upstream's side.
//
//	testserver -root DIR -journal PATH
//
// Tools: read_file {path}, write_file {path, content}, delete_file {path},
// search {query}, echo {text}. Each execution appends one line
// "TOOL ARGUMENTS-JSON" to the journal before it returns; a refused call
// never reaches the server, so it never appears there.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type pathArgs struct {
	Path string `json:"path" jsonschema:"the file's path inside the sandbox"`
}

type writeArgs struct {
	Path    string `json:"path" jsonschema:"the file's path inside the sandbox"`
	Content string `json:"content" jsonschema:"what to write"`
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"the text to look for"`
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

// sandbox is the server's state: a directory it works in and the journal
// of executions.
type sandbox struct {
	root    string
	journal string
	mu      sync.Mutex // serialises journal appends
}

func (s *sandbox) record(tool string, args any) error {
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.journal, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%s %s\n", tool, b); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// resolve maps a sandbox path to a file under root, refusing escapes.
func (s *sandbox) resolve(p string) (string, error) {
	if p == "" || !filepath.IsLocal(p) {
		return "", fmt.Errorf("path %q is not inside the sandbox", p)
	}
	return filepath.Join(s.root, p), nil
}

func text(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

func (s *sandbox) readFile(_ context.Context, _ *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
	if err := s.record("read_file", in); err != nil {
		return nil, nil, err
	}
	p, err := s.resolve(in.Path)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, err
	}
	return text("%s", b), nil, nil
}

func (s *sandbox) writeFile(_ context.Context, _ *mcp.CallToolRequest, in writeArgs) (*mcp.CallToolResult, any, error) {
	if err := s.record("write_file", in); err != nil {
		return nil, nil, err
	}
	p, err := s.resolve(in.Path)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(p, []byte(in.Content), 0o600); err != nil {
		return nil, nil, err
	}
	return text("wrote %d bytes to %s", len(in.Content), in.Path), nil, nil
}

func (s *sandbox) deleteFile(_ context.Context, _ *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
	if err := s.record("delete_file", in); err != nil {
		return nil, nil, err
	}
	p, err := s.resolve(in.Path)
	if err != nil {
		return nil, nil, err
	}
	if err := os.Remove(p); err != nil {
		return nil, nil, err
	}
	return text("deleted %s", in.Path), nil, nil
}

func (s *sandbox) search(_ context.Context, _ *mcp.CallToolRequest, in searchArgs) (*mcp.CallToolResult, any, error) {
	if err := s.record("search", in); err != nil {
		return nil, nil, err
	}
	var hits []string
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), in.Query) {
			rel, err := filepath.Rel(s.root, p)
			if err != nil {
				return err
			}
			hits = append(hits, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(hits)
	return text("%s", strings.Join(hits, "\n")), nil, nil
}

func (s *sandbox) echo(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
	if err := s.record("echo", in); err != nil {
		return nil, nil, err
	}
	return text("%s", in.Text), nil, nil
}

func newServer(s *sandbox) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Description: "Read a file of the sandbox."}, s.readFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file", Description: "Write a file of the sandbox."}, s.writeFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_file", Description: "Delete a file of the sandbox."}, s.deleteFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Description: "List the files that contain a text."}, s.search)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Return the text given."}, s.echo)
	return srv
}

func main() {
	root := flag.String("root", "", "the sandbox directory")
	journal := flag.String("journal", "", "the file every execution is appended to")
	flag.Parse()
	if *root == "" || *journal == "" {
		log.Fatal("testserver: -root and -journal are required")
	}
	s := &sandbox{root: *root, journal: *journal}
	err := newServer(s).Run(context.Background(), &mcp.StdioTransport{})
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}
