package namespace

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch/internal/controller"
	"orch/internal/controller/controllertest"
)

// newContext returns a controller.Context on a fresh test apiserver.
func newContext(t *testing.T) controller.Context {
	t.Helper()
	return controllertest.New(t).Context
}

// run starts the controller and the informers until the test ends.
func run(t *testing.T, cctx controller.Context, c *Controller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	cctx.Informers.StartWithContext(ctx)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
		cctx.Informers.Shutdown()
	})
}

// gone is a condition: get returns NotFound.
func gone(get func() error) func() (bool, error) {
	return func() (bool, error) {
		err := get()
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

// conditionIs is true when ns has condition t with status and message.
func conditionIs(ns *corev1.Namespace, t corev1.NamespaceConditionType, status corev1.ConditionStatus, reason, message string) bool {
	c := getCondition(ns.Status.Conditions, t)
	return c != nil && c.Status == status && c.Reason == reason && c.Message == message
}
