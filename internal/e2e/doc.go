// Package e2e tests orch end to end with real processes: the `orch server`
// binary (from $ORCH_BIN, or built once by TestMain) on free loopback ports
// in a temporary data directory, the real kubectl through `orch kubectl`,
// client-go, and raw HTTPS with the admin client certificate for the bad
// input kubectl never sends. Each test starts its own server; nothing is
// shared between tests but the binary.
//
// Run it with `make build && ORCH_BIN=$PWD/bin/orch go test ./internal/e2e`.
package e2e
