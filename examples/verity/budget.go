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
	"text/tabwriter"
	"time"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

const budgetUsage = `usage:
  verity budget show SRC -policy POLICY [-at RFC3339] [--json]
        each caller's budget as the tool gate's log records it: the period, what was spent
        (open reservations at their upper bound), the limit with the period's grants, what
        remains, the calls made and allowed, the open reservations, when it renews
  verity budget show -db DB [-id PREFIX] [--json]
        the shared budgets in a database (sqlite:PATH or postgres://…; needs -tags sql):
        one row per budget, and per period of a shared budget that renews (ID@PERIOD)
  verity budget grant -policy POLICY -caller KEY -amount N -reason TEXT  WHERE
  verity budget reset -policy POLICY -caller KEY -reason TEXT  WHERE
        an approver adds N to a caller's budget for the current period (grant), or gives it
        its whole budget back (reset); the log records who and why. WHERE is one of
          -inbox URL [-token TOKEN]   through the approval inbox of the verity-mcp that holds
                                      the log (-approvals; a token with -jwks, else as its
                                      -approver); the token may be in $VERITY_INBOX_TOKEN
          -log FILE -approver NAME    appended to a log file no process holds, as NAME, one of
                                      the policy's approvers
        Refused without an approver, without a reason, and when the policy's budget does not
        renew (no budget_period).
exit: 0 done, 1 refused or failed, 2 usage (see verity -h for a log that does not verify)
`

// cmdBudget is verity budget.
func cmdBudget(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(e.stderr, budgetUsage)
		if len(args) == 0 {
			return usagef("budget needs show, grant or reset")
		}
		return nil
	}
	switch args[0] {
	case "show":
		return budgetShow(ctx, e, args[1:])
	case "grant", "reset":
		return budgetChange(ctx, e, args[0], args[1:])
	}
	return usagef("budget: unknown subcommand %q (show, grant, reset)", args[0])
}

func budgetFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("budget "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseInterleaved parses flags and at most one positional argument in
// any order.
func parseInterleaved(fs *flag.FlagSet, args []string) (string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", usagef("%v", err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) > 1 {
		return "", usagef("one SRC, got %q", pos)
	}
	if len(pos) == 1 {
		return pos[0], nil
	}
	return "", nil
}

func loadCompiled(path string) (*toolgate.Compiled, error) {
	if path == "" {
		return nil, usagef("-policy POLICY is needed: the budget, its period and the approvers are the policy's")
	}
	p, err := toolgate.LoadPolicy(path)
	if err != nil {
		return nil, &inputError{err}
	}
	comp, err := p.Compile()
	if err != nil {
		return nil, &inputError{err}
	}
	return comp, nil
}

func budgetShow(ctx context.Context, e *env, args []string) error {
	fs := budgetFlags("show")
	policy := fs.String("policy", "", "")
	db := fs.String("db", "", "")
	prefix := fs.String("id", "", "")
	at := fs.String("at", "", "")
	asJSON := fs.Bool("json", false, "")
	srcArg, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *db != "" {
		if srcArg != "" || *policy != "" || *at != "" {
			return usagef("budget show -db reads the database's shared budgets: no SRC, -policy or -at")
		}
		return showShared(ctx, e, *db, *prefix, *asJSON)
	}
	if srcArg == "" {
		return usagef("budget show needs SRC (a log) or -db DB")
	}
	now := time.Now()
	if *at != "" {
		if now, err = time.Parse(time.RFC3339, *at); err != nil {
			return usagef("-at %q is not an RFC 3339 time such as 2026-11-30T09:00:00Z", *at)
		}
	}
	comp, err := loadCompiled(*policy)
	if err != nil {
		return err
	}
	src, err := ParseSource(srcArg)
	if err != nil {
		return usagef("%v", err)
	}
	o, err := openLog(ctx, e, src)
	if err != nil {
		return err
	}
	defer o.close()
	log, err := trace.NewLog(o.store)
	if err != nil {
		return err
	}
	statuses, err := toolgate.Budgets(ctx, log, comp, now)
	if err != nil {
		return err
	}
	if *asJSON {
		type row struct {
			Caller     string      `json:"caller"`
			Period     string      `json:"period,omitempty"`
			Renews     *time.Time  `json:"renews,omitempty"`
			Spent      kernel.Cost `json:"spent"`
			Limit      kernel.Cost `json:"limit"`
			Remaining  kernel.Cost `json:"remaining"`
			Granted    kernel.Cost `json:"granted,omitempty"`
			Calls      uint64      `json:"calls"`
			MaxCalls   uint64      `json:"max_calls"`
			Open       int         `json:"open_reservations"`
			OpenAmount kernel.Cost `json:"open_amount"`
		}
		enc := json.NewEncoder(e.stdout)
		for _, s := range statuses {
			r := row{Caller: s.Caller, Period: s.Period, Spent: s.Spent, Limit: s.Limit, Remaining: s.Remaining, Granted: s.Granted,
				Calls: s.Calls, MaxCalls: s.MaxCalls, Open: s.Open, OpenAmount: s.OpenAmount}
			if !s.Renews.IsZero() {
				t := s.Renews.UTC()
				r.Renews = &t
			}
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CALLER\tPERIOD\tSPENT\tLIMIT\tREMAINING\tCALLS\tOPEN\tRENEWS")
	for _, s := range statuses {
		period, renews := s.Period, "-"
		if period == "" {
			period = "life (no budget_period)"
		}
		if !s.Renews.IsZero() {
			renews = s.Renews.Format(time.RFC3339)
		}
		granted := ""
		if s.Granted > 0 {
			granted = " (+" + s.Granted.String() + " granted)"
		}
		open := "0"
		if s.Open > 0 {
			open = fmt.Sprintf("%d (%s)", s.Open, s.OpenAmount)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\t%s\t%d/%d\t%s\t%s\n", oneLine(s.Caller), period, s.Spent, s.Limit, granted, s.Remaining,
			s.Calls, s.MaxCalls, open, renews)
	}
	return tw.Flush()
}

// oneLine keeps a caller key on one line of the table.
func oneLine(s string) string { return toolgate.OneLine(s) }

func showShared(ctx context.Context, e *env, dbArg, prefix string, asJSON bool) error {
	src, err := ParseSource(dbArg)
	if err != nil || src.IsFile() || src.HasLog {
		return usagef("-db %q: want sqlite:PATH or postgres://USER@HOST/DB, without #LOG", redactArg(dbArg))
	}
	db, err := openDB(src)
	if err != nil {
		return err
	}
	defer db.Close()
	bs, err := sqlbudget.Open(ctx, db, src.Dialect)
	if err != nil {
		return err
	}
	rows, err := bs.List(ctx, prefix)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		for _, r := range rows {
			if err := enc.Encode(map[string]any{"id": r.ID, "limit": r.Limit, "spent": r.Gross - r.Refunded,
				"remaining": r.Limit - (r.Gross - r.Refunded), "gross": r.Gross, "refunded": r.Refunded}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BUDGET\tSPENT\tLIMIT\tREMAINING")
	for _, r := range rows {
		net := r.Gross - r.Refunded
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", oneLine(r.ID), net, r.Limit, r.Limit-net)
	}
	return tw.Flush()
}

// redactArg hides a password in a -db value for a message.
func redactArg(s string) string {
	if strings.HasPrefix(s, "postgres") {
		return redact(s)
	}
	return s
}

func budgetChange(ctx context.Context, e *env, action string, args []string) error {
	fs := budgetFlags(action)
	policy := fs.String("policy", "", "")
	caller := fs.String("caller", "", "")
	amountArg := fs.String("amount", "", "")
	reason := fs.String("reason", "", "")
	inbox := fs.String("inbox", "", "")
	token := fs.String("token", "", "")
	logPath := fs.String("log", "", "")
	approver := fs.String("approver", "", "")
	if extra, err := parseInterleaved(fs, args); err != nil {
		return err
	} else if extra != "" {
		return usagef("budget %s takes flags only, got %q", action, extra)
	}
	switch {
	case *caller == "":
		return usagef("-caller KEY is needed: whose budget to change (as verity budget show lists it)")
	case strings.TrimSpace(*reason) == "":
		return usagef("-reason TEXT is needed: the log records why")
	case action == "grant" && *amountArg == "":
		return usagef("-amount N is needed: what the grant adds, in units (\"2.5\")")
	case action == "reset" && *amountArg != "":
		return usagef("a reset gives the whole budget back: no -amount")
	case (*inbox == "") == (*logPath == ""):
		return usagef("give either -inbox URL (a running verity-mcp holds the log) or -log FILE (no process holds it)")
	}
	var amount kernel.Cost
	if action == "grant" {
		a, err := kernel.ParseCost(*amountArg)
		if err != nil || a <= 0 {
			return usagef("-amount %q is not a positive exact amount such as \"2.5\"", *amountArg)
		}
		amount = a
	}
	if *inbox != "" {
		if *approver != "" || *policy != "" {
			return usagef("with -inbox the verity-mcp holding the log checks its policy and the approver (the token's, or its -approver): no -policy or -approver")
		}
		tok := *token
		if tok == "" {
			tok = os.Getenv("VERITY_INBOX_TOKEN")
		}
		return grantThroughInbox(ctx, e, *inbox, tok, *caller, action, *amountArg, *reason)
	}
	if *approver == "" {
		return usagef("-approver NAME is needed: one of the policy's approvers, recorded as who changed the budget")
	}
	comp, err := loadCompiled(*policy)
	if err != nil {
		return err
	}
	st, err := trace.OpenFile(*logPath, trace.FileOptions{})
	if errors.Is(err, trace.ErrLocked) {
		return fmt.Errorf("%w: a running process (verity-mcp) holds the log; change the budget through its approval inbox: verity budget %s -inbox URL …", err, action)
	}
	if err != nil {
		return err
	}
	log, err := trace.NewLog(st)
	if err != nil {
		st.Close()
		return err
	}
	defer log.Close()
	g, err := toolgate.New(ctx, log, comp)
	if err != nil {
		return err
	}
	if err := g.Grant(ctx, toolgate.BudgetGrant{Caller: *caller, Approver: *approver, Amount: amount, Reset: action == "reset", Reason: *reason}); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s recorded for %s by %s\n", action, oneLine(*caller), *approver)
	return nil
}

// grantThroughInbox posts the change to the approval inbox at base.
func grantThroughInbox(ctx context.Context, e *env, base, token, caller, action, amount, reason string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("-inbox %q is not the inbox's http(s) URL (verity-mcp prints it: msg=\"approval inbox\" url=…)", base)
	}
	u = u.JoinPath("api", "budget")
	body := map[string]string{"caller": caller, "action": action, "reason": reason}
	if amount != "" {
		body["amount"] = amount
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("reaching the inbox: %w", err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var res struct {
		By    string `json:"by"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal(rb, &res)
	if resp.StatusCode != http.StatusOK {
		msg := res.Error
		if msg == "" {
			msg = strings.TrimSpace(string(rb))
		}
		return fmt.Errorf("the inbox refused the %s (%s): %s", action, resp.Status, oneLine(msg))
	}
	fmt.Fprintf(e.stdout, "%s recorded for %s by %s\n", action, oneLine(caller), oneLine(res.By))
	return nil
}
