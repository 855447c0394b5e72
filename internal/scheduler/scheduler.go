package scheduler

import (
	"context"
	"log/slog"
	"reflect"
	"sync"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	fw "orch/internal/scheduler/framework"
	"orch/internal/scheduler/plugins"
	"orch/internal/scheduler/queue"
)

// Name is the scheduler name pods ask for, and the events' source.
const Name = "default-scheduler"

// Scheduler assigns pending pods to nodes: it keeps a snapshot of the
// cluster from informers, pops pods from a priority queue, runs the
// framework over the snapshot, and binds through pods/binding.
type Scheduler struct {
	// DisablePreemption turns preemption off.
	DisablePreemption bool

	client   kubernetes.Interface
	recorder record.EventRecorder
	log      *slog.Logger
	clock    clock.WithTicker
	fw       *fw.Framework
	queue    *queue.Queue
	cache    *cache
	pods     corelisters.PodLister
	classes  schedulinglisters.PriorityClassLister
	synced   []toolscache.InformerSynced
	wg       sync.WaitGroup
}

// Config is what a scheduler needs from the process that runs it.
type Config struct {
	// Client binds pods and writes their status.
	Client kubernetes.Interface
	// Informers is shared with the rest of the process; the caller starts
	// it after New has asked for its informers.
	Informers informers.SharedInformerFactory
	// Recorder writes the scheduler's events (as Name).
	Recorder record.EventRecorder
	// Log is scoped with "component", "scheduler".
	Log *slog.Logger
	// Clock is injected so tests can move time.
	Clock clock.WithTicker
}

// New builds a scheduler and registers its informers on cfg.Informers;
// the caller starts the factory.
func New(cfg Config) *Scheduler {
	inf := cfg.Informers
	s := &Scheduler{
		client: cfg.Client, recorder: cfg.Recorder, log: cfg.Log.With("component", "scheduler"),
		clock: cfg.Clock, fw: plugins.NewDefault(), queue: queue.New(cfg.Clock), cache: newCache(),
		pods: inf.Core().V1().Pods().Lister(), classes: inf.Scheduling().V1().PriorityClasses().Lister(),
	}
	s.fw.Now = cfg.Clock.Now
	sel := &selectors{services: inf.Core().V1().Services().Lister(), rcs: inf.Core().V1().ReplicationControllers().Lister(),
		rss: inf.Apps().V1().ReplicaSets().Lister(), sss: inf.Apps().V1().StatefulSets().Lister()}
	s.cache.snap.Selectors = sel.of
	s.cache.snap.Volumes = &volumes{pvcs: inf.Core().V1().PersistentVolumeClaims().Lister(),
		pvs: inf.Core().V1().PersistentVolumes().Lister(), classes: inf.Storage().V1().StorageClasses().Lister()}

	s.handle(inf.Core().V1().Pods().Informer(), toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.podChanged(nil, obj.(*v1.Pod)) },
		UpdateFunc: func(old, obj any) { s.podChanged(old.(*v1.Pod), obj.(*v1.Pod)) },
		DeleteFunc: s.podDeleted,
	})
	s.handle(inf.Core().V1().Nodes().Informer(), toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			s.cache.locked(func(snap *fw.Snapshot) { snap.SetNode(obj.(*v1.Node)) })
			s.move(nodeAdd)
		},
		UpdateFunc: func(old, obj any) {
			o, n := old.(*v1.Node), obj.(*v1.Node)
			s.cache.locked(func(snap *fw.Snapshot) { snap.SetNode(n) })
			if !reflect.DeepEqual(o.Labels, n.Labels) || !reflect.DeepEqual(o.Spec, n.Spec) || !reflect.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) {
				s.move(nodeUpdate)
			}
		},
		DeleteFunc: func(obj any) {
			if n, ok := unwrap(obj).(*v1.Node); ok {
				s.cache.locked(func(snap *fw.Snapshot) { snap.RemoveNode(n.Name) })
			}
		},
	})
	s.handle(inf.Core().V1().Namespaces().Informer(), toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.namespaceChanged(obj, true) },
		UpdateFunc: func(_, obj any) { s.namespaceChanged(obj, true) },
		DeleteFunc: func(obj any) { s.namespaceChanged(obj, false) },
	})
	volumeEvent := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { s.move(volumeChange) }, UpdateFunc: func(_, _ any) { s.move(volumeChange) },
	}
	s.handle(inf.Core().V1().PersistentVolumeClaims().Informer(), volumeEvent)
	s.handle(inf.Core().V1().PersistentVolumes().Informer(), volumeEvent)
	s.handle(inf.Storage().V1().StorageClasses().Informer(), volumeEvent)
	for _, i := range []toolscache.SharedIndexInformer{inf.Scheduling().V1().PriorityClasses().Informer(),
		inf.Core().V1().Services().Informer(), inf.Core().V1().ReplicationControllers().Informer(),
		inf.Apps().V1().ReplicaSets().Informer(), inf.Apps().V1().StatefulSets().Informer()} {
		s.synced = append(s.synced, i.HasSynced)
	}
	return s
}

func (s *Scheduler) handle(i toolscache.SharedIndexInformer, h toolscache.ResourceEventHandler) {
	reg, err := i.AddEventHandler(h)
	if err != nil {
		s.log.Error("cannot watch", "err", err)
		return
	}
	s.synced = append(s.synced, reg.HasSynced)
}

// Start schedules pods until ctx ends.
func (s *Scheduler) Start(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return nil
	}
	s.log.Info("scheduler started")
	go s.queue.Run(ctx)
	for s.scheduleOne(ctx) {
	}
	s.wg.Wait()
	return nil
}

func unwrap(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// responsible tells a pending pod this scheduler must place.
func responsible(p *v1.Pod) bool {
	return p.Spec.NodeName == "" && p.Spec.SchedulerName == Name && p.DeletionTimestamp == nil &&
		!terminal(p) && len(p.Spec.SchedulingGates) == 0
}

func (s *Scheduler) podChanged(old, pod *v1.Pod) {
	switch {
	case pod.Spec.NodeName != "" && terminal(pod):
		s.queue.Delete(pod.UID)
		s.cache.removePod(pod.UID)
		s.move(podDelete)
	case pod.Spec.NodeName != "":
		s.queue.Delete(pod.UID)
		s.cache.setPod(s.withPriority(pod))
		switch {
		case old == nil || old.Spec.NodeName == "":
			s.move(podAdd)
		case !reflect.DeepEqual(old.Labels, pod.Labels):
			s.move(podUpdate)
		}
	case responsible(pod):
		pod = s.withPriority(pod)
		s.cache.nominate(pod, pod.Status.NominatedNodeName)
		s.queue.Add(pod)
	default:
		s.queue.Delete(pod.UID)
		s.cache.nominate(pod, "")
	}
}

func (s *Scheduler) podDeleted(obj any) {
	pod, ok := unwrap(obj).(*v1.Pod)
	if !ok {
		return
	}
	s.queue.Delete(pod.UID)
	s.cache.removePod(pod.UID)
	s.cache.nominate(pod, "")
	if pod.Spec.NodeName != "" {
		s.move(podDelete)
	}
}

func (s *Scheduler) namespaceChanged(obj any, present bool) {
	ns, ok := unwrap(obj).(*v1.Namespace)
	if !ok {
		return
	}
	s.cache.locked(func(snap *fw.Snapshot) {
		if present {
			snap.SetNamespace(ns.Name, ns.Labels)
		} else {
			snap.RemoveNamespace(ns.Name)
		}
	})
	s.move(namespaceChange)
}

// withPriority fills spec.priority from the pod's PriorityClass (or the
// global default class) when admission has not done so.
func (s *Scheduler) withPriority(pod *v1.Pod) *v1.Pod {
	if pod.Spec.Priority != nil {
		return pod
	}
	var pc *schedulingv1.PriorityClass
	if name := pod.Spec.PriorityClassName; name != "" {
		pc, _ = s.classes.Get(name)
	} else if all, err := s.classes.List(labels.Everything()); err == nil {
		for _, c := range all {
			if c.GlobalDefault {
				pc = c
			}
		}
	}
	if pc == nil {
		return pod
	}
	p := pod.DeepCopy()
	p.Spec.Priority = &pc.Value
	if p.Spec.PreemptionPolicy == nil {
		p.Spec.PreemptionPolicy = pc.PreemptionPolicy
	}
	return p
}

// event is a change in the cluster that may let unschedulable pods fit.
type event int

const (
	nodeAdd event = iota
	nodeUpdate
	podAdd
	podUpdate
	podDelete
	volumeChange
	namespaceChange
)

// interests lists, per plugin, the events that may undo its rejection.
var interests = map[string][]event{
	"NodeName":          {nodeAdd},
	"NodeUnschedulable": {nodeAdd, nodeUpdate},
	"TaintToleration":   {nodeAdd, nodeUpdate},
	"NodeAffinity":      {nodeAdd, nodeUpdate},
	"NodePorts":         {nodeAdd, podDelete},
	"NodeResourcesFit":  {nodeAdd, nodeUpdate, podDelete, podUpdate},
	"VolumeBinding":     {nodeAdd, nodeUpdate, volumeChange},
	"PodTopologySpread": {nodeAdd, nodeUpdate, podAdd, podUpdate, podDelete},
	"InterPodAffinity":  {nodeAdd, nodeUpdate, podAdd, podUpdate, podDelete, namespaceChange},
}

// move sends back the unschedulable pods that a plugin interested in e
// rejected (or that failed for another reason).
func (s *Scheduler) move(e event) {
	s.queue.MoveAll(func(qp *queue.QueuedPod) bool {
		if len(qp.Plugins) == 0 {
			return true
		}
		for p := range qp.Plugins {
			for _, want := range interests[p] {
				if want == e {
					return true
				}
			}
		}
		return false
	})
}
