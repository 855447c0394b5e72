package plugins

import (
	fw "orch/internal/scheduler/framework"
)

// ImageLocality prefers nodes that already have the pod's images, the
// more so the bigger the images and the more nodes share them (so that
// one node does not attract every pod of a popular image).
type ImageLocality struct{}

// Name of the plugin.
func (ImageLocality) Name() string { return "ImageLocality" }

const (
	mb                    int64 = 1024 * 1024
	minImageThreshold     int64 = 23 * mb
	maxContainerThreshold int64 = 1000 * mb
)

type imageState struct{ snap *fw.Snapshot }

func (s *imageState) Clone() fw.StateData { return s }

// PreScore keeps the snapshot for the node count.
func (p ImageLocality) PreScore(cs *fw.CycleState, _ *fw.PodInfo, snap *fw.Snapshot, _ []*fw.NodeInfo) *fw.Status {
	cs.Write(p.Name(), &imageState{snap: snap})
	return nil
}

// Score sums the spread-scaled sizes of the images present and maps the
// sum between 23 MB and 1000 MB per container onto 0..100.
func (p ImageLocality) Score(cs *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) int64 {
	s, _ := cs.Read(p.Name()).(*imageState)
	if s == nil || len(n.Images) == 0 {
		return 0
	}
	total := len(s.snap.Nodes())
	var sum int64
	count := 0
	add := func(image string) {
		count++
		name := fw.NormalizedImageName(image)
		if size, ok := n.Images[name]; ok {
			sum += int64(float64(size) * float64(s.snap.ImageNodes(name)) / float64(total))
		}
	}
	spec := &pi.Pod.Spec
	for i := range spec.InitContainers {
		add(spec.InitContainers[i].Image)
	}
	for i := range spec.Containers {
		add(spec.Containers[i].Image)
	}
	for i := range spec.Volumes {
		if img := spec.Volumes[i].Image; img != nil {
			add(img.Reference)
		}
	}
	if count == 0 {
		return 0
	}
	maxThreshold := maxContainerThreshold * int64(count)
	sum = min(max(sum, minImageThreshold), maxThreshold)
	return fw.MaxNodeScore * (sum - minImageThreshold) / (maxThreshold - minImageThreshold)
}
