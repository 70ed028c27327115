// Package pin pins the tool definitions an MCP server lists, so that a
// call runs only against a definition somebody trusted, and the log says
// which.
//
// A tool's description and schemas are instructions to the model. A
// server that changes them after they were reviewed — a "rug pull", or a
// description poisoned with invisible characters — steers the agent
// without any policy noticing. A host that pins definitions (verity-mcp
// -pins, `verity pin`) refuses a call to a tool whose definition is not
// the pinned one, hides that tool from tools/list, and records every pin,
// drift and re-approval on the log.
//
// # What is pinned
//
// A tool is pinned by the hash of its whole definition as the server
// listed it and the host forwarded it: "sha256:" and the lower-case hex
// SHA-256 of the RFC 8785 canonical form of the JSON object — name,
// title, description, inputSchema, outputSchema, annotations, icons,
// _meta and any member still to come (HashDefinition). Member order and
// white space do not change the hash; any member's value does. A "$ref"
// is hashed as the string it is: nothing is fetched or followed. A
// server's instructions are pinned too (HashInstructions), and so is the
// set: a tool the pins do not name is unpinned, one they name that the
// server no longer lists is reported removed.
//
// # Two ways to pin
//
// A lock file (Lock, pins.json, its schema LockSchema) is written from a
// live server by `verity pin -- UPSTREAM…`, reviewed, committed, and
// loaded by the host (State.LockLoaded): ParseLock refuses a malformed
// or tampered one (an unknown member, a bad hash, a tool named twice, a
// definition that does not hash to its pin) with one line. Without a
// lock file, the first listing of each server is trusted and recorded as
// its pins (trust on first use, SourceFirstUse); after a lock file is
// loaded, no server is trusted on first use.
//
// # The state and its steps
//
// State is a value: each step returns a new State and the entries that
// record it, and leaves the old one as it was (a host that cannot append
// the entries keeps the old State). The steps are
//
//   - Listed, for every listing the host reads (at start, on tools/list,
//     on notifications/tools/list_changed, after a reconnect): the first
//     of a server without a lock file pins it; then each tool whose
//     definition differs from what the log last said is recorded as a
//     drift (changed, new, removed, restored, instructions), and
//     Outcome.Drift lists every tool not at its pin;
//   - LockLoaded, for a lock file;
//   - Repin, a person's re-approval of the definition the server lists
//     now, refused when the approver is the principal whose call asked
//     for it (ErrSelfApproval), or when what they approved is not the
//     tool's present state (ErrStaleApproval).
//
// Check is asked before every call: it returns the pinned hash of the
// definition the call runs against, which the host records as the call's
// toolgate.Call.Definition (so that every decision entry names the
// definition it trusted), or a *RefusedError naming the tool and both
// hashes. A call runs only against a definition whose hash is pinned at
// that moment (TestCallRunsOnlyAgainstAPinnedDefinition).
//
// The State changes only by applying the entries it asks for
// (gatelog.KindPin, KindDrift, KindRepin); Replay applies them from a
// log, and rebuilds exactly the State the live host had
// (TestReplayYieldsTheLivePins).
//
// # Reviewing a change
//
// Compare shows a person what changed in a definition: a line diff of the
// two canonical forms in which invisible and look-alike characters —
// Unicode TAG characters, zero-width and other format characters, bidi
// controls, Cyrillic and Greek letters posing as Latin ones — are written
// as visible escapes (⟦U+200B ZERO WIDTH SPACE⟧), never rendered, as text
// for a terminal (Review.Text) or as escaped HTML for a page
// (Review.HTML). Visible does the same to any string.
//
// Warnings flags, at pin time, what deserves a second look: invisible,
// bidirectional or look-alike characters, a description over
// LongDescription characters, phrases that instruct the model ("ignore
// previous", "before using any other tool", "<IMPORTANT>"…) and mentions
// of the server's other tools. They are warnings, never refusals: the
// person reviewing decides.
//
// # Annotations
//
// A tool's annotations (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint) are members of its definition, so they are pinned with
// it: a server that turns a destructive tool "read-only" changes its hash
// and the tool is refused until a person re-approves it. A host that lets
// such hints inform its policy reads them from the definition whose hash
// Check returned — never from a listing that is not pinned — and lets the
// policy's own tiers override them.
//
// # What it does not do
//
// The package reads bytes and returns values: it runs no server, writes
// no log and reads no file. It does not judge whether a definition is
// malicious — it makes sure that whatever runs is what somebody saw. A
// changed instructions text is reported (Instructions) but has no
// re-pin: a host withholds instructions that are not pinned, and a new
// lock file pins new ones.
package pin
