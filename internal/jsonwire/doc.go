// Package jsonwire is the JSON that mcpgen reads and writes by hand: a
// scanner that checks syntax while keeping every value as the bytes it was
// read from, the string encoder and decoder that agree with it, and a
// marshal that leaves <, > and & alone.
//
// mcpgen needs this where a generic decoder would lose something: the MCP
// wire (package mcp) must tell a syntax error from a message of the wrong
// shape, match member names exactly and pass payloads through untouched;
// the providers merge configs without reformatting what a person wrote, and
// fingerprint entries by their canonical text. One scanner and one encoder
// serve them all, so that what one part writes, another reads the same way.
//
// The package imports nothing of the module. Package mcp, which may import
// no other package of mcpgen, uses it as its own machinery that happens to
// be shared: it holds no MCP, manifest or provider concept, only JSON.
package jsonwire
