package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

// readGatewayFile reads the gateway file at path with gateway.Parse (the
// strict reader of the published gateway.schema.json, every problem
// reported at once), its relative paths resolved against the file's
// directory, and returns it with the SHA-256 (hex) of the bytes read —
// the hash a toolgate.reload entry records, so that an auditor can match
// it to the file. The file is read once: what is hashed is what is
// served.
func readGatewayFile(path string) (gateway.File, string, error) {
	data, err := readRegular(path, gateway.MaxFileSize)
	if err != nil {
		return gateway.File{}, "", err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return gateway.File{}, "", err
	}
	f, err := gateway.Parse(data, dir)
	if err != nil {
		return gateway.File{}, "", fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	return f, hex.EncodeToString(sum[:]), nil
}

// readRegular reads a regular file of at most max bytes.
func readRegular(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: over %d bytes", path, max)
	}
	return data, nil
}

// resolve is path relative to dir, the gateway file's directory.
func resolve(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// oneLines splits an error (errors.Join's) into its lines.
func oneLines(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
