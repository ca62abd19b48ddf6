// Package httplimit bounds what one HTTP request may cost a server that
// anyone who reaches its port may call: the body's size (a declared
// Content-Length above the cap is refused before a byte of it is read; a body
// without one stops at the cap) and the time its body may take to arrive (a
// client dripping bytes cannot hold a handler, and the memory it read so far,
// forever).
//
// The hub's webhook server serves admission reviews, the addon conversion
// webhook and the live compliance report on one port (hub.Run wraps it with
// Server); controller-runtime's http.Server already bounds headers
// (ReadHeaderTimeout 32 s, MaxHeaderBytes 1 MiB) and idle connections
// (IdleTimeout 90 s), but not bodies.
package httplimit
