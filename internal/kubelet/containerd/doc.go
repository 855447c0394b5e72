// Package containerd runs the container runtime of an orch agent that was
// given no --container-runtime-endpoint: the containerd linked into orch
// (package daemon; `orch containerd`) as a supervised child process with a
// configuration orch writes, running pods with the runc, shim and CNI
// plugins orch carries (package payload), and the images it must hold — the built-in pause image and
// the air-gap archives of data-dir/agent/images — imported into its k8s.io
// namespace with containerd's Go client.
//
// An agent composes it like this (both are Start(ctx) error components):
//
//	cfg := containerd.NewConfig(dataDir)
//	sup := containerd.NewSupervisor(cfg, log)
//	go sup.Start(ctx)              // runs until ctx ends
//	<-sup.Ready()                  // containerd answers CRI v1
//	store, _ := containerd.NewStore(cfg.Address)
//	imp := containerd.NewImporter(store, cfg.ImagesDir, cfg.ImportState, containerd.Builtins(), log)
//	go imp.Start(ctx)
//	<-imp.Ready()                  // the pause image is there: pods can start
//	rt, _ := cri.Connect(ctx, sup.Endpoint())
package containerd
