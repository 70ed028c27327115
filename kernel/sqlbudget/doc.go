// Package sqlbudget is a budget shared by any number of processes — and
// the rate windows, flow labels and pinned tool definitions the replicas
// of one tool gate deployment share beside it: its
// balance lives in a SQL database (PostgreSQL for several machines, SQLite
// for several processes on one machine), and a kernel.Session consults it
// through kernel.WithSharedBudget. It removes the safety kernel's "single
// process" assumption for T1: however many workers charge one budget, the
// database admits only what fits.
//
// # Usage
//
// The host opens the database with its driver (this package imports none)
// and gives every worker the same budget id:
//
//	import _ "github.com/jackc/pgx/v5/stdlib"
//	db, _ := sql.Open("pgx", os.Getenv("DATABASE_URL"))
//	store, _ := sqlbudget.Open(ctx, db, sqlstore.Postgres)
//	shared, _ := store.OpenOrCreate(ctx, "team-alpha", 500*kernel.Unit)
//	sess, _ := kernel.NewSession(ctx, log, k, initial, kernel.WithSharedBudget(shared))
//
// The session's own budget still applies; the shared one is consulted
// inside the session's atomic path after the local checks pass. A refused
// shared charge is a recorded rejection whose failed check is
// kernel.CheckSharedBudget; a rollback gives the execution's cost back to
// the shared balance. The session's trace can live in the same database
// (trace/sqlstore).
//
// # How the database keeps T1
//
// Two tables (component "budget" in the version table verity_schema,
// created and migrated by Open as sqlstore.Migrate does the trace
// tables):
//
//	verity_budgets        (budget_id, limit_amount, gross, refunded)
//	verity_budget_charges (budget_id, action_id, charged, refunded)
//
// A charge is one transaction whose decision is a single conditional
// UPDATE:
//
//	UPDATE verity_budgets SET gross = gross + cost
//	 WHERE budget_id = ? AND cost <= limit_amount - (gross - refunded) AND gross <= MaxInt64 - cost
//
// followed by the insert of the action's ledger row (a second charge of
// the same action id is refused by its primary key). Concurrent charges
// queue on the budget's row and each re-evaluates the condition against
// the balance its predecessor left (PostgreSQL re-checks the WHERE clause
// of an UPDATE that waited for a row lock; SQLite admits one writer at a
// time), so no interleaving of processes can overspend. A refund is one
// transaction of two conditional UPDATEs — the budget's refunded total
// (amount ≤ gross − refunded) and the action's row (amount ≤ charged −
// refunded) — taken in the same row order as a charge, so the two never
// deadlock. CHECK constraints restate the invariants in the schema
// (gross − refunded ≤ limit, refunded ≤ charged, no negative amounts), so
// even a statement from outside this package cannot break them.
//
// With SQLite, the charges and refunds of one process (one Store) queue
// on a mutex, since SQLite admits one writer at a time anyway; other
// processes wait on SQLite's busy timeout.
//
// Amounts are kernel.Cost units (thousandths). Errors wrap the kernel's
// sentinels: kernel.CheckBudget, kernel.ErrDuplicateExecution,
// kernel.ErrUnknownExecution, kernel.ErrRefundTooLarge,
// kernel.ErrInvalidCost, kernel.ErrOverflow; and this package's
// ErrNotFound, ErrExists, ErrLimitMismatch, ErrInvalidID. A refused call
// changes nothing.
//
// # Budgets that renew
//
// A budget that renews each calendar period keeps one budget per
// period: SharedBudget.ForPeriod(ctx, key) opens (creating it with the
// budget's limit the first time any process asks) the budget id@key,
// key naming the period ("2026-11-30", "2026-11"). The tool gate
// computes the key from the time it records a call's decision at, so
// every replica charges the same row for the same period, and the next
// period starts on a new row with nothing spent; T1 holds per period.
// Store.List reads every budget and its totals (verity budget show -db).
//
// # Rate windows
//
// The same Store holds the tool gate's shared rate windows (it implements
// toolgate.RateWindows; give it to a gate with toolgate.WithSharedWindows)
// so that several gates, in several processes, enforce "at most N calls
// per duration" together. Store.Admit(ctx, key, at, per, limit) admits a
// call when fewer than limit calls of key fall after at − per, records it
// at at, and returns how many it saw. One table (schema version 2 of the
// component "budget"; a version-1 database is migrated by Open):
//
//	verity_rate_windows (seq, window_key, at_ns, expires_ns)
//
// A decision is one transaction that first takes the key's lock — an
// advisory transaction lock on a hash of the key in PostgreSQL
// (pg_advisory_xact_lock), the database's write lock in SQLite (BEGIN
// IMMEDIATE) — then deletes the key's calls at or before at − per, counts
// the rest and, below the limit, inserts the call. No interleaving of
// processes admits more than limit calls in a window. Times are the
// calls' own (the gate's recorded time, not the database's clock), as
// int64 nanoseconds; calls recorded later than at by another gate still
// count, so clock skew between gates refuses rather than admits.
// PruneWindows deletes the expired calls of keys no call visits any more.
//
// # Flow labels
//
// The same Store holds the flow labels several tool gates share (it
// implements toolgate.SharedLabels; give it to a gate with
// toolgate.WithSharedLabels): replicas of one deployment, each with its
// own log, see the labels any of them attached to a caller, so that a
// toxic flow whose first call lands on one replica and last on another is
// refused. Store.Attach records a caller's labels, caller-wide or in one
// conversation, with their end (the rule's label_ttl after the call's
// recorded time, or for good); Store.Labels returns those a caller
// carries at a time, caller-wide and in a conversation, each once with
// its later end, and the last declassification of each of the caller's
// labels; Store.Clear records a declassification (toolgate.LabelClear):
// the label as attached at or before it is removed everywhere, and the
// declassification is kept, so that a gate whose own session carries the
// label clears it too before its next decision. Two tables, their own
// component "flow_labels" (version 1), created by Open:
//
//	verity_flow_labels       (caller, conversation, label, until_ns, since_ns)
//	verity_flow_label_clears (caller, label, cleared_ns, approver, reason)
//
// keyed by caller, conversation ("" for caller-wide) and label. An
// attach is an upsert that keeps the later end (for good is
// math.MaxInt64) and the later start, in one transaction per call, its
// rows taken in label order; ends are exclusive, as the gate's own. A
// read is one round trip (the labels and the declassifications, UNION
// ALL). The gate reads before it
// decides and writes after the labelling call's execution is recorded;
// how it records what it read is in toolgate's labels_shared.go.
// PruneLabels deletes the labels that ended.
//
// # Pinned tool definitions
//
// The same Store holds the pins verity-mcp's replicas share (it
// implements kernel/toolgate/mcp's SharedPins): one server's first-use
// pins, claimed by the first replica to list it (ClaimPins: an INSERT of
// the server's row that a second claim finds taken, in one transaction
// with its tools', so that every replica gets the same pins), and the
// re-pins approved on any replica (RecordRepin: a compare and set on the
// hash the approver saw pinned; a stale one is ErrPinConflict), each
// raising the server's version, which a replica reads before each call
// (PinVersion) and, when it moved, loads the pins (LoadPins) and records
// what differs on its own log. Two tables, component "pins" (version 1):
//
//	verity_pin_servers (server, instructions, version)
//	verity_pins        (server, tool, hash, old, approver, requested_by, reason)
//
// # Guarantees
//
// T1 (net spend ≤ limit) and T4 (gross never decreases) hold for any
// number of connection pools and processes on one budget, and a refund
// never exceeds its charge; the header of budget_test.go lists the tests
// that check each, on PostgreSQL and on SQLite. A rate window never admits
// more than its limit, across pools and processes, and decides as a naive
// reference does: the header of windows_test.go lists its tests. The flow
// labels decide as a naive reference does, through several pools, and
// gates sharing them refuse a toxic flow across gates and replay from
// their own logs: the header of labels_test.go. One pin claim wins and a
// re-pin is a compare and set: the header of pins_test.go.
//
// # What it does not cover
//
// A rate window is a sliding log of calls, not a token bucket: a window
// holding limit calls costs limit rows. The windows of one key should
// keep one duration (the gate's keys name the rule and the window).
// It does not reserve and later settle (a charge is final until
// refunded), expire or reset budgets, or resize one (OpenOrCreate refuses
// a different limit). The kernel's compensation rule applies: if a
// session cannot record an execution after charging, it refunds; if that
// refund fails the shared balance overstates spending, which is the safe
// direction for T1. Connection pooling, timeouts and durability settings
// are the host's driver configuration.
package sqlbudget
