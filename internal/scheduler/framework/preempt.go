package framework

import (
	"math"
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Candidate is a node where evicting Victims makes room for the pod.
type Candidate struct {
	Node    string
	Victims []*v1.Pod
}

// preemption messages, as upstream's.
const (
	msgNotHelpful  = "Preemption is not helpful for scheduling"
	msgNoVictims   = "No preemption victims found for incoming pod"
	msgNeverPolicy = "not eligible due to preemptionPolicy=Never."
	msgTerminating = "not eligible due to a terminating pod on the nominated node."
)

// Preempt looks, as upstream's DefaultPreemption, for lower-priority pods
// whose eviction lets pod fit on a node that rejected it (diag is the
// Diagnosis of its FitError). It returns the best candidate, or nil and
// the message to add to the FitError ("preemption: ..."); keep tells that
// the pod may not preempt now and its nominated node, if any, stays.
func (f *Framework) Preempt(pod *v1.Pod, snap *Snapshot, diag Diagnosis) (cand *Candidate, msg string, keep bool) {
	pi := NewPodInfo(pod)
	if p := pod.Spec.PreemptionPolicy; p != nil && *p == v1.PreemptNever {
		return nil, "preemption: " + msgNeverPolicy, true
	}
	if nnn := pod.Status.NominatedNodeName; nnn != "" && diag.NodeToStatus[nnn].CodeOf() != UnschedulableAndUnresolvable {
		if n := snap.Get(nnn); n != nil {
			for _, p := range n.Pods {
				if p.Priority < pi.Priority && terminatingByPreemption(p.Pod) {
					return nil, "preemption: " + msgTerminating, true
				}
			}
		}
	}
	all := snap.Nodes()
	var potential []*NodeInfo
	for _, n := range all {
		if diag.NodeToStatus[n.Name()].CodeOf() == Unschedulable {
			potential = append(potential, n)
		}
	}
	statuses := map[string]*Status{}
	var candidates []*Candidate
	cs := NewCycleState()
	if len(potential) > 0 && f.runPreFilters(cs, pi, snap).IsSuccess() {
		want := min(max(len(potential)/10, 100), len(potential))
		offset := f.intN(len(potential))
		for i := range potential {
			if len(candidates) >= want {
				break
			}
			n := potential[(offset+i)%len(potential)]
			victims, st := f.selectVictims(cs.Clone(), pi, n.Clone(), snap)
			if st.IsSuccess() {
				candidates = append(candidates, &Candidate{Node: n.Name(), Victims: victims})
			} else {
				statuses[n.Name()] = st
			}
		}
	}
	if len(candidates) == 0 {
		msg := "0/" + strconv.Itoa(len(all)) + " nodes are available:"
		if h := histogram(statuses, len(all), NewStatus(UnschedulableAndUnresolvable, msgNotHelpful)); h != "" {
			msg += " " + h + "."
		}
		return nil, "preemption: " + msg, false
	}
	return f.pickCandidate(candidates), "", false
}

// selectVictims removes every lower-priority pod from the (cloned) node,
// checks that the pod then fits, and gives back as many of them as still
// leave room, most important first; the rest are the victims.
func (f *Framework) selectVictims(cs *CycleState, pi *PodInfo, n *NodeInfo, snap *Snapshot) ([]*v1.Pod, *Status) {
	var potential []*PodInfo
	for _, p := range append([]*PodInfo(nil), n.Pods...) {
		if p.Priority < pi.Priority {
			potential = append(potential, p)
			n.RemovePod(p.Pod.UID)
			f.removePod(cs, pi, p, n)
		}
	}
	if len(potential) == 0 {
		return nil, NewStatus(UnschedulableAndUnresolvable, msgNoVictims)
	}
	if st := f.filterWithNominated(cs, pi, n, snap); !st.IsSuccess() {
		return nil, st
	}
	sort.SliceStable(potential, func(i, j int) bool { return f.moreImportant(potential[i], potential[j]) })
	var victims []*v1.Pod
	for _, p := range potential {
		n.AddPod(p)
		f.addPod(cs, pi, p, n)
		if !f.filterWithNominated(cs, pi, n, snap).IsSuccess() {
			n.RemovePod(p.Pod.UID)
			f.removePod(cs, pi, p, n)
			victims = append(victims, p.Pod)
		}
	}
	return victims, nil
}

func (f *Framework) moreImportant(a, b *PodInfo) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return f.startTime(a.Pod).Before(f.startTime(b.Pod))
}

func (f *Framework) startTime(p *v1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// pickCandidate applies upstream's criteria in turn: the lowest highest
// victim priority, the lowest sum of priorities, the fewest victims, the
// latest start among the highest-priority victims; then the first.
func (f *Framework) pickCandidate(cands []*Candidate) *Candidate {
	prio := func(p *v1.Pod) int64 {
		if p.Spec.Priority != nil {
			return int64(*p.Spec.Priority)
		}
		return 0
	}
	scoreFuncs := []func(c *Candidate) int64{
		func(c *Candidate) int64 { return -prio(c.Victims[0]) },
		func(c *Candidate) int64 {
			var sum int64
			for _, v := range c.Victims {
				sum += prio(v) + int64(math.MaxInt32) + 1
			}
			return -sum
		},
		func(c *Candidate) int64 { return -int64(len(c.Victims)) },
		func(c *Candidate) int64 {
			top, earliest := prio(c.Victims[0]), f.startTime(c.Victims[0])
			for _, v := range c.Victims {
				if t := f.startTime(v); prio(v) == top && t.Before(earliest) {
					earliest = t
				}
			}
			return earliest.UnixNano()
		},
	}
	for _, score := range scoreFuncs {
		var best []*Candidate
		bestScore := int64(math.MinInt64)
		for _, c := range cands {
			switch s := score(c); {
			case s > bestScore:
				bestScore, best = s, []*Candidate{c}
			case s == bestScore:
				best = append(best, c)
			}
		}
		if len(best) == 1 {
			return best[0]
		}
		cands = best
	}
	return cands[0]
}

// terminatingByPreemption tells a pod being deleted because the scheduler
// preempted it.
func terminatingByPreemption(p *v1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler
		}
	}
	return false
}
