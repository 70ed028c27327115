package mcp

// FilterTools exposes filterTools to the tests.
var FilterTools = filterTools
