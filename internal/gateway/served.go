package gateway

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// resources are the Gateway API resources orch follows.
var resources = []string{"gatewayclasses", "gateways", "httproutes", "referencegrants"}

// Served reports whether the apiserver serves the Gateway API resources
// orch follows (their CustomResourceDefinitions are installed).
func Served(d discovery.DiscoveryInterface) bool {
	list, err := d.ServerResourcesForGroupVersion(Group + "/v1")
	if err != nil || list == nil {
		return false
	}
	for _, want := range resources {
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == want }) {
			return false
		}
	}
	return true
}

// WaitServed returns true once the resources are served (checking every
// interval), false when ctx ends first.
func WaitServed(ctx context.Context, d discovery.DiscoveryInterface, interval time.Duration) bool {
	t := time.NewTicker(interval)
	defer t.Stop()
	for !Served(d) {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}
