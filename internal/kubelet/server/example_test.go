package server_test

import (
	"context"
	"crypto/tls"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/server"
)

// The agent serves the kubelet API with the node's serving certificate
// (join.Credentials.ServingTLSConfig), checks bearer tokens with
// TokenReviews and authorizes requests with SubjectAccessReviews as the
// node, and finds containers by their CRI labels.
func Example() {
	var (
		ctx       context.Context
		rt        *cri.Runtime         // cri.Connect(ctx, endpoint)
		serving   *tls.Config          // creds.ServingTLSConfig()
		clientset kubernetes.Interface // kubernetes.NewForConfig(creds.RESTConfig())
		pods      func() []*corev1.Pod // the pods bound to this node, with their status
		log       = slog.Default().With("component", "kubelet-server")
	)
	if rt == nil {
		return // (the variables above are only sketched)
	}
	srv, err := server.New(server.Config{
		TLS:                  serving,
		TokenReviews:         clientset.AuthenticationV1().TokenReviews(),
		SubjectAccessReviews: clientset.AuthorizationV1().SubjectAccessReviews(),
		Runtime:              rt,
		Containers:           server.NewCRIFinder(rt, pods),
		Pods:                 pods,
		NodeName:             "node-1",
		RootDir:              "/var/lib/orch",
		Log:                  log,
	})
	if err != nil {
		panic(err)
	}
	_ = srv.Start(ctx) // a run.Runnable: blocks until ctx ends
	// Output:
}
