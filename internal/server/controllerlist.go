package server

import (
	"fmt"
	"os"
	"path/filepath"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"orch/internal/apiserver/authz"
	"orch/internal/controller"
	"orch/internal/controller/certificates"
	"orch/internal/controller/clusterdns"
	"orch/internal/controller/clusterroleaggregation"
	"orch/internal/controller/crd"
	"orch/internal/controller/cronjob"
	"orch/internal/controller/daemonset"
	"orch/internal/controller/deployment"
	"orch/internal/controller/disruption"
	"orch/internal/controller/endpoints"
	"orch/internal/controller/endpointslice"
	"orch/internal/controller/endpointslicemirroring"
	"orch/internal/controller/ephemeral"
	"orch/internal/controller/garbagecollector"
	gatewaystatus "orch/internal/controller/gateway"
	"orch/internal/controller/job"
	"orch/internal/controller/localpath"
	"orch/internal/controller/namespace"
	"orch/internal/controller/nodeipam"
	"orch/internal/controller/nodelifecycle"
	"orch/internal/controller/nodepassword"
	"orch/internal/controller/podautoscaler"
	"orch/internal/controller/podgc"
	"orch/internal/controller/pvbinder"
	"orch/internal/controller/pvcprotection"
	"orch/internal/controller/pvprotection"
	"orch/internal/controller/replicaset"
	"orch/internal/controller/resourcequota"
	"orch/internal/controller/rootcacertpublisher"
	"orch/internal/controller/serviceaccount"
	"orch/internal/controller/servicelb"
	"orch/internal/controller/statefulset"
	"orch/internal/controller/ttlafterfinished"
	"orch/internal/controller/vapstatus"
	"orch/internal/pki"
	"orch/internal/rbacpolicy"
	"orch/internal/run"
	"orch/internal/scheduler"
)

// controllers builds the scheduler and every controller `orch server`
// runs, each acting as its own identity (as(user, groups...) gives a
// Context whose clients authenticate as that user): the scheduler as
// system:kube-scheduler, each controller as its kube-system service account
// of the bootstrap policy (rbacpolicy.ControllerServiceAccounts).
func controllers(p parsed) buildFunc {
	return func(ctx controller.Context, as asFunc) ([]run.Named, error) {
		caPath := filepath.Join(p.tlsDir(), pki.CACertFile)
		rootCA, err := os.ReadFile(caPath)
		if err != nil {
			return nil, fmt.Errorf("read the cluster CA for kube-root-ca.crt: %w", err)
		}
		// withConfig: a controller that makes a client of another API
		// group from the Context's configuration.
		withConfig := func(name string, build func(controller.Context) (run.Runnable, error)) func(controller.Context) (run.Runnable, error) {
			return func(c controller.Context) (run.Runnable, error) {
				if c.Config == nil {
					return nil, fmt.Errorf("the %s controller needs its client configuration", name)
				}
				return build(c)
			}
		}
		simple := func(build func(controller.Context) run.Runnable) func(controller.Context) (run.Runnable, error) {
			return func(c controller.Context) (run.Runnable, error) { return build(c), nil }
		}
		specs := []struct {
			name string
			new  func(controller.Context) (run.Runnable, error)
		}{
			{"nodelifecycle", func(c controller.Context) (run.Runnable, error) { return nodelifecycle.New(c) }},
			{"podgc", simple(func(c controller.Context) run.Runnable { return podgc.New(c) })},
			{"replicaset", simple(func(c controller.Context) run.Runnable { return replicaset.New(c) })},
			{"deployment", simple(func(c controller.Context) run.Runnable { return deployment.New(c) })},
			{"statefulset", simple(func(c controller.Context) run.Runnable { return statefulset.New(c) })},
			{"daemonset", simple(func(c controller.Context) run.Runnable { return daemonset.New(c) })},
			{"job", simple(func(c controller.Context) run.Runnable { return job.New(c) })},
			{"cronjob", simple(func(c controller.Context) run.Runnable { return cronjob.New(c) })},
			{"garbagecollector", simple(func(c controller.Context) run.Runnable { return garbagecollector.New(c) })},
			{"namespace", simple(func(c controller.Context) run.Runnable { return namespace.New(c) })},
			{"serviceaccount", simple(func(c controller.Context) run.Runnable { return serviceaccount.New(c) })},
			{rootcacertpublisher.Name, simple(func(c controller.Context) run.Runnable { return rootcacertpublisher.New(c, rootCA) })},
			{"resourcequota", simple(func(c controller.Context) run.Runnable { return resourcequota.New(c) })},
			{"ttlafterfinished", simple(func(c controller.Context) run.Runnable { return ttlafterfinished.New(c) })},
			{"nodeipam", func(c controller.Context) (run.Runnable, error) {
				return nodeipam.New(c, nodeipam.Ranges(p.clusterCIDRs))
			}},
			{"endpointslice", simple(func(c controller.Context) run.Runnable { return endpointslice.New(c) })},
			{"endpointslicemirroring", simple(func(c controller.Context) run.Runnable { return endpointslicemirroring.New(c) })},
			{"endpoints", simple(func(c controller.Context) run.Runnable { return endpoints.New(c) })},
			{"disruption", simple(func(c controller.Context) run.Runnable { return disruption.New(c) })},
			{"pvbinder", simple(func(c controller.Context) run.Runnable { return pvbinder.New(c) })},
			{pvcprotection.Name, simple(func(c controller.Context) run.Runnable { return pvcprotection.New(c) })},
			{pvprotection.Name, simple(func(c controller.Context) run.Runnable { return pvprotection.New(c) })},
			{ephemeral.Name, simple(func(c controller.Context) run.Runnable { return ephemeral.New(c) })},
			{localpath.Name, simple(func(c controller.Context) run.Runnable { return localpath.New(c, p.localStoragePath()) })},
			{clusterroleaggregation.Name, simple(func(c controller.Context) run.Runnable { return clusterroleaggregation.New(c) })},
			{nodepassword.Name, simple(func(c controller.Context) run.Runnable { return nodepassword.New(c) })},
			{clusterdns.Name, simple(func(c controller.Context) run.Runnable { return clusterdns.New(c) })},
			{servicelb.Name, simple(func(c controller.Context) run.Runnable { return servicelb.New(c) })},
			{vapstatus.Name, simple(func(c controller.Context) run.Runnable { return vapstatus.New(c) })},
			{gatewaystatus.Name, withConfig(gatewaystatus.Name, func(c controller.Context) (run.Runnable, error) {
				client, err := gwclient.NewForConfig(c.Config)
				if err != nil {
					return nil, err
				}
				return gatewaystatus.New(c, client), nil
			})},
			{certificates.Name, func(c controller.Context) (run.Runnable, error) {
				caKey, err := os.ReadFile(filepath.Join(p.tlsDir(), pki.CAKeyFile))
				if err != nil {
					return nil, fmt.Errorf("read the cluster CA key for the CSR signer: %w", err)
				}
				ca, err := certificates.ParseCA(rootCA, caKey)
				if err != nil {
					return nil, err
				}
				return certificates.New(c, ca, certificates.Options{})
			}},
			{podautoscaler.Name, withConfig(podautoscaler.Name, func(c controller.Context) (run.Runnable, error) {
				return podautoscaler.New(c)
			})},
			{crd.Name, withConfig(crd.Name, func(c controller.Context) (run.Runnable, error) {
				client, err := apiextensionsclient.NewForConfig(c.Config)
				if err != nil {
					return nil, err
				}
				return crd.New(c, client), nil
			})},
		}
		schedCtx, err := as(rbacpolicy.SchedulerUser)
		if err != nil {
			return nil, err
		}
		out := []run.Named{{Name: "scheduler", Runnable: scheduler.New(scheduler.Config{Client: schedCtx.Client, Informers: ctx.Informers,
			Recorder: ctx.Recorder(scheduler.Name), Log: ctx.Log, Clock: ctx.Clock})}}
		for _, spec := range specs {
			sa, ok := rbacpolicy.ControllerServiceAccounts[spec.name]
			if !ok {
				return nil, fmt.Errorf("the bootstrap policy names no service account for the %s controller", spec.name)
			}
			c, err := as(authz.ServiceAccountUser(metav1.NamespaceSystem, sa), authz.ServiceAccountGroups(metav1.NamespaceSystem)...)
			if err != nil {
				return nil, err
			}
			r, err := spec.new(c)
			if err != nil {
				return nil, err
			}
			out = append(out, run.Named{Name: spec.name, Runnable: r})
		}
		return out, nil
	}
}
