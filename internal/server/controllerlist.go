package server

import (
	"fmt"
	"os"
	"path/filepath"

	"orch/internal/controller"
	"orch/internal/controller/clusterdns"
	"orch/internal/controller/cronjob"
	"orch/internal/controller/daemonset"
	"orch/internal/controller/deployment"
	"orch/internal/controller/disruption"
	"orch/internal/controller/endpoints"
	"orch/internal/controller/endpointslice"
	"orch/internal/controller/garbagecollector"
	"orch/internal/controller/job"
	"orch/internal/controller/namespace"
	"orch/internal/controller/nodeipam"
	"orch/internal/controller/nodelifecycle"
	"orch/internal/controller/nodepassword"
	"orch/internal/controller/podgc"
	"orch/internal/controller/pvbinder"
	"orch/internal/controller/replicaset"
	"orch/internal/controller/resourcequota"
	"orch/internal/controller/rootcacertpublisher"
	"orch/internal/controller/serviceaccount"
	"orch/internal/controller/servicelb"
	"orch/internal/controller/statefulset"
	"orch/internal/controller/ttlafterfinished"
	"orch/internal/pki"
	"orch/internal/run"
	"orch/internal/scheduler"
)

// controllers builds the scheduler and every controller `orch server` runs.
func controllers(p parsed) func(ctx controller.Context) ([]run.Named, error) {
	return func(ctx controller.Context) ([]run.Named, error) {
		ipam, err := nodeipam.New(ctx, p.clusterCIDR, nodeCIDRMaskSize)
		if err != nil {
			return nil, err
		}
		lifecycle, err := nodelifecycle.New(ctx)
		if err != nil {
			return nil, err
		}
		caPath := filepath.Join(p.tlsDir(), pki.CACertFile)
		rootCA, err := os.ReadFile(caPath)
		if err != nil {
			return nil, fmt.Errorf("read the cluster CA for kube-root-ca.crt: %w", err)
		}
		return []run.Named{
			{Name: "scheduler", Runnable: scheduler.New(scheduler.Config{Client: ctx.Client, Informers: ctx.Informers,
				Recorder: ctx.Recorder(scheduler.Name), Log: ctx.Log, Clock: ctx.Clock})},
			{Name: "nodelifecycle", Runnable: lifecycle},
			{Name: "podgc", Runnable: podgc.New(ctx)},
			{Name: "replicaset", Runnable: replicaset.New(ctx)},
			{Name: "deployment", Runnable: deployment.New(ctx)},
			{Name: "statefulset", Runnable: statefulset.New(ctx)},
			{Name: "daemonset", Runnable: daemonset.New(ctx)},
			{Name: "job", Runnable: job.New(ctx)},
			{Name: "cronjob", Runnable: cronjob.New(ctx)},
			{Name: "garbagecollector", Runnable: garbagecollector.New(ctx)},
			{Name: "namespace", Runnable: namespace.New(ctx)},
			{Name: "serviceaccount", Runnable: serviceaccount.New(ctx)},
			{Name: rootcacertpublisher.Name, Runnable: rootcacertpublisher.New(ctx, rootCA)},
			{Name: "resourcequota", Runnable: resourcequota.New(ctx)},
			{Name: "ttlafterfinished", Runnable: ttlafterfinished.New(ctx)},
			{Name: "nodeipam", Runnable: ipam},
			{Name: "endpointslice", Runnable: endpointslice.New(ctx)},
			{Name: "endpoints", Runnable: endpoints.New(ctx)},
			{Name: "disruption", Runnable: disruption.New(ctx)},
			{Name: "pvbinder", Runnable: pvbinder.New(ctx)},
			{Name: nodepassword.Name, Runnable: nodepassword.New(ctx)},
			{Name: clusterdns.Name, Runnable: clusterdns.New(ctx)},
			{Name: servicelb.Name, Runnable: servicelb.New(ctx)},
		}, nil
	}
}

// nodeCIDRMaskSize is the size of each node's pod network (/24: 254 pods).
const nodeCIDRMaskSize = 24
