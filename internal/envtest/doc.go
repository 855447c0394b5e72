// Package envtest is the one environment of orch's integration tests: a real
// apiserver on a real embedded etcd (Start), a client, shared informers and
// an event recorder on it (New), Eventually for waiting on what the code
// under test does, Create, Get and Update (retrying conflicts) over a typed
// client that fail the test on an error, the real kubectl run in process
// (Kubectl), and FreeAddr for a listening address. Everything is torn down when the test ends.
//
//	env := envtest.New(t, "default")
//	c := mycomponent.New(env.Client, env.Informers) // registers informers
//	env.Start(t, c)
//	envtest.EventuallyTrue(t, "the pod to be bound", func() bool { … })
//	envtest.KubectlContains(t, env.Server.Config, "Running", "get", "pods")
package envtest
