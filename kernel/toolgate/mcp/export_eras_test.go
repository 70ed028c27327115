package mcp

// PrivateScope exposes privateScope to the tests.
var PrivateScope = privateScope
