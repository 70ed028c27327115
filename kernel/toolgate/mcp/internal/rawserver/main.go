// Command rawserver is an MCP server over stdio, written without an SDK
// so that it controls every byte it sends, that the tests of verity-mcp
// run as the upstream to check what reaches the client unchanged and how
// the proxy meets failures.
//
//	rawserver -journal PATH [-twice NAME]
//
// It answers initialize with protocol version 2025-11-25 and tools with
// listChanged. Its tools, listed in this order (not sorted), each with
// an "execution" member: zeta (returns "x\ud800y", a lone surrogate, as
// text and structured content), alpha (returns "ok"), scan (returns
// structuredContent {"scanned": N} and _meta {"cost": N} for the
// argument n when given), hang (never answers), crash (exits with status
// 3 without answering), grow (adds the tool omega, sends
// notifications/tools/list_changed, then answers), ask (sends
// elicitation/create to its client and returns the answer's action),
// roots (sends roots/list and returns the first root's uri). Every
// tools/call it receives appends "NAME\n" to the journal before it acts.
// With -twice NAME it lists the tool NAME a second time, at the end.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
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
	Error   json.RawMessage `json:"error,omitempty"`
}

const tool = `{"name":%q,"description":"%s","inputSchema":{"type":"object"},"execution":{"taskSupport":"forbidden"},"annotations":{"readOnlyHint":true}}`

type server struct {
	out     *bufio.Writer
	mu      sync.Mutex // guards out, grown, waits, next
	grown   bool
	waits   map[string]chan message
	next    int
	journal string
	twice   string // -twice: a tool listed twice
}

func (s *server) write(raw string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.WriteString(raw)
	s.out.WriteByte('\n')
	s.out.Flush()
}

func (s *server) respond(id json.RawMessage, result string) {
	s.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
}

// request sends a request to the client and waits for its response.
func (s *server) request(method, params string) message {
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf(`"up-%d"`, s.next)
	ch := make(chan message, 1)
	s.waits[id] = ch
	s.mu.Unlock()
	s.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params))
	return <-ch
}

func (s *server) tools() string {
	names := []string{"zeta", "alpha", "scan", "hang", "crash", "grow", "ask", "roots"}
	s.mu.Lock()
	if s.grown {
		names = append(names, "omega")
	}
	s.mu.Unlock()
	if s.twice != "" {
		names = append(names, s.twice)
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf(tool, n, "the "+n+" tool"))
	}
	return `{"tools":[` + strings.Join(parts, ",") + `]}`
}

func text(s string) string {
	b, _ := json.Marshal(s)
	return `{"content":[{"type":"text","text":` + string(b) + `}]}`
}

func (s *server) call(m message) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			N json.RawMessage `json:"n"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		s.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"bad params"}}`, m.ID))
		return
	}
	f, err := os.OpenFile(s.journal, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		fmt.Fprintln(f, p.Name)
		f.Close()
	}
	switch p.Name {
	case "zeta":
		s.respond(m.ID, `{"content":[{"type":"text","text":"x\ud800y"}],"structuredContent":{"s":"x\ud800y"}}`)
	case "alpha", "omega":
		s.respond(m.ID, text("ok"))
	case "scan":
		if len(p.Arguments.N) == 0 {
			s.respond(m.ID, text("scanned, uncounted"))
			return
		}
		s.respond(m.ID, fmt.Sprintf(`{"content":[{"type":"text","text":"scanned"}],"structuredContent":{"scanned":%s},"_meta":{"cost":%s}}`, p.Arguments.N, p.Arguments.N))
	case "hang":
		select {}
	case "crash":
		os.Exit(3)
	case "grow":
		s.mu.Lock()
		s.grown = true
		s.mu.Unlock()
		s.write(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		s.respond(m.ID, text("grown"))
	case "ask":
		r := s.request("elicitation/create", `{"mode":"form","message":"may I?","requestedSchema":{"type":"object","properties":{}}}`)
		var res struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal(r.Result, &res)
		s.respond(m.ID, text("answer: "+res.Action+string(r.Error)))
	case "roots":
		r := s.request("roots/list", `{}`)
		var res struct {
			Roots []struct {
				URI string `json:"uri"`
			} `json:"roots"`
		}
		_ = json.Unmarshal(r.Result, &res)
		uri := "none" + string(r.Error)
		if len(res.Roots) > 0 {
			uri = res.Roots[0].URI
		}
		s.respond(m.ID, text("root: "+uri))
	default:
		s.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool"}}`, m.ID))
	}
}

func main() {
	journal := flag.String("journal", os.DevNull, "where every tools/call is recorded")
	twice := flag.String("twice", "", "list this tool a second time")
	flag.Parse()
	s := &server{out: bufio.NewWriter(os.Stdout), waits: map[string]chan message{}, journal: *journal, twice: *twice}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			continue
		}
		if m.Method == "" { // a response to one of our requests
			s.mu.Lock()
			ch := s.waits[string(m.ID)]
			delete(s.waits, string(m.ID))
			s.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		if len(m.ID) == 0 {
			continue // a notification
		}
		switch m.Method {
		case "initialize":
			s.respond(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"rawserver","version":"v1"}}`)
		case "ping":
			s.respond(m.ID, `{}`)
		case "tools/list":
			s.respond(m.ID, s.tools())
		case "tools/call":
			go s.call(m)
		default:
			s.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID))
		}
	}
}
