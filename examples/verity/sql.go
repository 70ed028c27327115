//go:build sql

package main

// The SQL drivers, compiled in only with the build tag "sql": the pure-Go
// SQLite driver alone takes minutes to compile on a cold cache, and most
// logs are files. Build with them:
//
//	go build -tags sql ./examples/verity

import (
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)
