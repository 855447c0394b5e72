package podautoscaler

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// selectors remembers the pod selector of each autoscaler's target (by
// namespace, then autoscaler name), to tell when two autoscalers would
// scale the same pods.
type selectors struct {
	mu sync.RWMutex
	ns map[string]map[string]labels.Selector
}

func newSelectors() *selectors { return &selectors{ns: map[string]map[string]labels.Selector{}} }

// add registers an autoscaler, selecting nothing until its target's
// selector is known; an autoscaler already known keeps its selector.
func (s *selectors) add(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ns[namespace] == nil {
		s.ns[namespace] = map[string]labels.Selector{}
	}
	if _, ok := s.ns[namespace][name]; !ok {
		s.ns[namespace][name] = labels.Nothing()
	}
}

// set records the selector of a registered autoscaler; false when it is
// not registered (it was deleted meanwhile).
func (s *selectors) set(namespace, name string, sel labels.Selector) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ns[namespace][name]; !ok {
		return false
	}
	s.ns[namespace][name] = sel
	return true
}

func (s *selectors) delete(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ns[namespace], name)
	if len(s.ns[namespace]) == 0 {
		delete(s.ns, namespace)
	}
}

// matching returns the keys ("namespace/name", sorted) of the autoscalers
// of namespace whose selector matches any of pods, stopping at limit.
func (s *selectors) matching(namespace string, pods []*corev1.Pod, limit int) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for _, pod := range pods {
		set := labels.Set(pod.Labels)
		for name, sel := range s.ns[namespace] {
			if !seen[name] && sel.Matches(set) {
				seen[name] = true
				out = append(out, namespace+"/"+name)
				if len(out) >= limit {
					sort.Strings(out)
					return out
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
