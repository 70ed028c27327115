// Command validate checks documents against the formal contracts.
//
//	go run ./examples/validate -kind KIND FILE...
//
// KIND is one of run_record, rca_report, compliance_report,
// incident_dossier, policy_control, policy_control_library, annotation. For
// each FILE it prints one JSON object with the file, whether it is valid,
// and every violation (JSON Pointer path, rule, message), as a JSON array
// on standard output.
//
// Exit status: 0 if every document is valid, 1 if any is invalid, 2 on a
// usage error (no or unknown kind, no file, a file that cannot be read).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/verity-go/verity/contracts"
)

// Result is the report on one file.
type Result struct {
	File       string                `json:"file"`
	Kind       contracts.Kind        `json:"kind"`
	Valid      bool                  `json:"valid"`
	Violations []contracts.Violation `json:"violations"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kindName := fs.String("kind", "", fmt.Sprintf("contract kind, one of %v", contracts.Kinds()))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: validate -kind KIND FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	kind, err := contracts.ParseKind(*kindName)
	if err != nil {
		fmt.Fprintln(stderr, "validate:", err)
		fs.Usage()
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "validate: no file given")
		fs.Usage()
		return 2
	}
	docs := make([][]byte, fs.NArg())
	for i, name := range fs.Args() {
		if docs[i], err = os.ReadFile(name); err != nil {
			fmt.Fprintln(stderr, "validate:", err)
			return 2
		}
	}
	results := make([]Result, 0, len(docs))
	status := 0
	for i, data := range docs {
		vs, err := contracts.Check(kind, data)
		if err != nil { // only for an unknown kind, which ParseKind ruled out, or a broken build
			fmt.Fprintln(stderr, "validate:", err)
			return 2
		}
		if vs == nil {
			vs = []contracts.Violation{}
		}
		if len(vs) > 0 {
			status = 1
		}
		results = append(results, Result{File: fs.Arg(i), Kind: kind, Valid: len(vs) == 0, Violations: vs})
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(results); err != nil {
		fmt.Fprintln(stderr, "validate:", err)
		return 1
	}
	return status
}
