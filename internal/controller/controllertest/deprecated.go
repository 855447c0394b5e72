package controllertest

import "orch/internal/envtest"

// These forward to envtest for the kubelet/pods and kubelet/node tests,
// which are being rewritten elsewhere; new tests call envtest directly.
var (
	// Deprecated: use envtest.Eventually.
	Eventually = envtest.Eventually
	// Deprecated: use envtest.EventuallyTrue.
	EventuallyTrue = envtest.EventuallyTrue
	// Deprecated: use envtest.Events.
	Events = envtest.Events
	// Deprecated: use envtest.CountPrefix.
	CountPrefix = envtest.CountPrefix
)
