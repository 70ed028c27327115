// Command rootsserver is an MCP server over stdio that relies on its
// client's roots the way the reference filesystem server
// (@modelcontextprotocol/server-filesystem) does when it is run without
// directory arguments. The tests of verity-mcp run it as the upstream to
// check what the proxy offers an upstream and relays to it. It is
// written without an SDK, so that it speaks the protocol of 2025-11-25
// exactly as that server does (no server/discover).
//
//	rootsserver [-journal PATH]
//
// After notifications/initialized it sends roots/list when the client's
// capabilities offer roots, and again on each
// notifications/roots/list_changed; the file: roots of the answer become
// its allowed directories (a failed or empty answer keeps the ones it
// had). A client that offers no roots leaves it with none, and it says so
// on stderr (the filesystem server cannot operate then). Its tools:
//
//   - list_allowed_directories: "Allowed directories:\n" and the
//     directories, one a line, as the filesystem server answers;
//   - sample: sends sampling/createMessage offering the tools named in
//     the argument "tools" (an array of names) and returns the answer's
//     text, or the error as a tool error;
//   - open: sends a URL-mode elicitation/create for the argument "url"
//     and returns "action: " and the answer's action, or the error as a
//     tool error.
//
// The journal gets one line per event: "initialize CAPS" (the client's
// capabilities as sent), "roots N" (an answer of N roots), "roots-error
// MESSAGE", "list_changed".
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
)

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type server struct {
	out     *bufio.Writer
	journal string

	mu      sync.Mutex // guards out, allowed, roots, waits, next
	allowed []string
	roots   bool // the client offered roots
	waits   map[string]chan message
	next    int
}

func main() {
	journal := flag.String("journal", "", "append events to this file")
	flag.Parse()
	s := &server{out: bufio.NewWriter(os.Stdout), journal: *journal, waits: map[string]chan message{}}
	if len(flag.Args()) == 0 {
		fmt.Fprintln(os.Stderr, "rootsserver: no directories given: the allowed directories come from the client's roots")
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "rootsserver: unreadable message:", err)
			continue
		}
		if m.Method == "" { // a response to one of ours
			s.mu.Lock()
			ch := s.waits[string(m.ID)]
			delete(s.waits, string(m.ID))
			s.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		go s.handle(m)
	}
}

func (s *server) write(v any) {
	b, _ := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

func (s *server) note(format string, args ...any) {
	if s.journal == "" {
		return
	}
	f, err := os.OpenFile(s.journal, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rootsserver: journal:", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

func (s *server) respond(id json.RawMessage, result any) {
	s.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *server) fail(id json.RawMessage, code int, msg string) {
	s.write(map[string]any{"jsonrpc": "2.0", "id": id, "error": rpcError{Code: code, Message: msg}})
}

// ask sends the client a request and waits for its answer.
func (s *server) ask(method string, params any) message {
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf(`"rs-%d"`, s.next)
	ch := make(chan message, 1)
	s.waits[id] = ch
	s.mu.Unlock()
	s.write(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	return <-ch
}

func (s *server) handle(m message) {
	switch m.Method {
	case "initialize":
		var p struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		}
		_ = json.Unmarshal(m.Params, &p)
		caps, _ := json.Marshal(p.Capabilities)
		s.note("initialize %s", caps)
		s.mu.Lock()
		_, s.roots = p.Capabilities["roots"]
		s.mu.Unlock()
		s.respond(m.ID, map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "rootsserver", "version": "v1"},
		})
	case "notifications/initialized":
		s.mu.Lock()
		roots := s.roots
		s.mu.Unlock()
		if roots {
			s.listRoots()
		} else {
			fmt.Fprintln(os.Stderr, "rootsserver: the client offers no roots and no directories were given: no allowed directories")
		}
	case "notifications/roots/list_changed":
		s.note("list_changed")
		s.listRoots()
	case "ping":
		s.respond(m.ID, map[string]any{})
	case "tools/list":
		s.respond(m.ID, map[string]any{"tools": []any{
			tool("list_allowed_directories", map[string]any{}),
			tool("sample", map[string]any{"tools": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}),
			tool("open", map[string]any{"url": map[string]any{"type": "string"}}),
		}})
	case "tools/call":
		s.call(m)
	default:
		if len(m.ID) > 0 {
			s.fail(m.ID, -32601, "Method not found")
		}
	}
}

func tool(name string, props map[string]any) map[string]any {
	return map[string]any{"name": name, "inputSchema": map[string]any{"type": "object", "properties": props}}
}

// listRoots asks the client for its roots and keeps the file: ones as
// the allowed directories.
func (s *server) listRoots() {
	r := s.ask("roots/list", map[string]any{})
	if r.Error != nil {
		s.note("roots-error %s", r.Error.Message)
		fmt.Fprintln(os.Stderr, "rootsserver: roots/list:", r.Error.Message)
		return
	}
	var res struct {
		Roots []struct {
			URI string `json:"uri"`
		} `json:"roots"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		s.note("roots-error %v", err)
		return
	}
	s.note("roots %d", len(res.Roots))
	var dirs []string
	for _, root := range res.Roots {
		if u, err := url.Parse(root.URI); err == nil && u.Scheme == "file" {
			dirs = append(dirs, u.Path)
		}
	}
	if len(dirs) == 0 {
		fmt.Fprintln(os.Stderr, "rootsserver: no valid root directories provided by the client")
		return
	}
	s.mu.Lock()
	s.allowed = dirs
	s.mu.Unlock()
}

func (s *server) call(m message) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Tools []string `json:"tools"`
			URL   string   `json:"url"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		s.fail(m.ID, -32602, err.Error())
		return
	}
	text := func(t string, isError bool) {
		s.respond(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}, "isError": isError})
	}
	switch p.Name {
	case "list_allowed_directories":
		s.mu.Lock()
		dirs := strings.Join(s.allowed, "\n")
		s.mu.Unlock()
		text("Allowed directories:\n"+dirs, false)
	case "sample":
		tools := []any{}
		for _, n := range p.Arguments.Tools {
			tools = append(tools, tool(n, map[string]any{}))
		}
		r := s.ask("sampling/createMessage", map[string]any{
			"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "hello"}}},
			"maxTokens": 10, "tools": tools,
		})
		if r.Error != nil {
			text("sampling error: "+r.Error.Message, true)
			return
		}
		var res struct {
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(r.Result, &res)
		text("sampled: "+string(res.Content), false)
	case "open":
		r := s.ask("elicitation/create", map[string]any{"mode": "url", "message": "sign in", "url": p.Arguments.URL, "elicitationId": "e1"})
		if r.Error != nil {
			text("elicitation error: "+r.Error.Message, true)
			return
		}
		var res struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal(r.Result, &res)
		text("action: "+res.Action, false)
	default:
		s.fail(m.ID, -32602, "unknown tool "+p.Name)
	}
}
