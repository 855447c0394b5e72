package server

import (
	"context"
	"errors"
	"sync/atomic"
)

// postStartHook is a start-up task /readyz waits for, named as upstream's
// kube-apiserver names the post-start hook that does the same: its check,
// "poststarthook/NAME", fails with "not finished" until the task is done.
// A script that waits for /readyz may then rely on what the task makes
// (the default namespaces, the kubernetes Service, the priority classes).
type postStartHook struct {
	name string
	done atomic.Bool
}

var errNotFinished = errors.New("not finished")

// finish marks the task done; the check passes from then on.
func (h *postStartHook) finish() { h.done.Store(true) }

// check is the hook's health check.
func (h *postStartHook) check(context.Context) error {
	if !h.done.Load() {
		return errNotFinished
	}
	return nil
}

// addHookChecks adds the check of each hook to checks, as
// "poststarthook/NAME", and returns checks.
func addHookChecks(checks map[string]func(context.Context) error, hooks ...*postStartHook) map[string]func(context.Context) error {
	for _, h := range hooks {
		checks["poststarthook/"+h.name] = h.check
	}
	return checks
}
