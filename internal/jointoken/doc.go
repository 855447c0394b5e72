// Package jointoken keeps the cluster's two join tokens in agreement on
// every server, and rotates them.
//
// The tokens are the server token (K10<hash>::server:<secret>, which joins
// servers and agents and seals the cluster's bootstrap data) and the agent
// token (K10<hash>::node:<secret>, which joins agents only); see
// internal/pki/token.go. Each server keeps them in data-dir/server/token
// and data-dir/server/agent-token, and the cluster keeps them in etcd as a
// Record, sealed with a key derived from the cluster CA's private key: only
// a host that already holds the CA key, which every server has and which
// is itself sealed with the server token in the bootstrap data, can read
// it. `orch token rotate` writes a new Record; every server watches it and
// swaps the secrets its join handler accepts (Holder) at once.
//
// The decisions are pure and apart from etcd: Reconcile says what a
// starting server holds given its files, its flags and the cluster's
// Record; Rotate makes the Record after a rotation.
//
//	rec, err := jointoken.Rotate(current, caPEM, jointoken.ServerToken, "")
//	sealed, err := jointoken.SealRecord(caKeyPEM, rec)
package jointoken
