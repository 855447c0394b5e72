package staticpods

import (
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The API's defaulting of a Pod lives in the apiserver's registry
// (internal/apiserver/registry/podspec and .../pods), which no kubelet
// package may import. apiDefaults repeats it here, field for field, so a
// static pod looks to the pod workers as it would had it been created
// through the API; a test checks it against the real apiserver.
//
// Pod: dnsPolicy ClusterFirst, restartPolicy Always, securityContext {},
// terminationGracePeriodSeconds 30, schedulerName default-scheduler,
// serviceAccount = serviceAccountName, enableServiceLinks true, hostPort =
// containerPort under hostNetwork, overhead and pod resources rounded up to
// milli units.
//
// Each container (init, regular, ephemeral): imagePullPolicy (Always for
// :latest or no tag, IfNotPresent otherwise), terminationMessagePath
// /dev/termination-log, terminationMessagePolicy File, port protocol TCP,
// env fieldRef apiVersion v1, fileKeyRef optional false, resources rounded,
// requests taken from limits (init and regular containers), probes
// (timeout 1, period 10, success 1, failure 3, httpGet path / scheme HTTP,
// grpc service ""), lifecycle httpGet path and scheme.
//
// Each volume: emptyDir when it names no source; hostPath type "";
// secret, configMap, downwardAPI and projected defaultMode 0644; fieldRef
// apiVersion v1; projected token expiration 1 h; image volume pull policy;
// the declared defaults of iSCSI, RBD, Azure disk, ScaleIO and ephemeral
// volume claims.
func apiDefaults(pod *corev1.Pod) {
	spec := &pod.Spec
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &grace
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	if spec.EnableServiceLinks == nil {
		links := corev1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &links
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i].VolumeSource)
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
		requestsFromLimits(&spec.InitContainers[i].Resources)
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
		requestsFromLimits(&spec.Containers[i].Resources)
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	if spec.HostNetwork {
		hostPortsFromContainerPorts(spec.InitContainers)
		hostPortsFromContainerPorts(spec.Containers)
	}
	roundUp(spec.Overhead)
	if spec.Resources != nil {
		roundUp(spec.Resources.Limits)
		roundUp(spec.Resources.Requests)
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		defaultFieldRef(from.FieldRef)
		if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
			optional := false
			from.FileKeyRef.Optional = &optional
		}
	}
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

// pullPolicy is Always for an image tagged latest or not tagged nor
// pinned by digest, IfNotPresent otherwise (and for a reference that does
// not parse, which validation then refuses).
func pullPolicy(image string) corev1.PullPolicy {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	tag := ""
	if tagged, ok := named.(reference.Tagged); ok {
		tag = tagged.Tag()
	}
	_, digested := named.(reference.Digested)
	if tag == "latest" || (tag == "" && !digested) {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	setInt32(&p.TimeoutSeconds, 1)
	setInt32(&p.PeriodSeconds, 10)
	setInt32(&p.SuccessThreshold, 1)
	setInt32(&p.FailureThreshold, 3)
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		service := ""
		p.GRPC.Service = &service
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	setString(&h.Path, "/")
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldRef(f *corev1.ObjectFieldSelector) {
	if f != nil {
		setString(&f.APIVersion, "v1")
	}
}

func requestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

func hostPortsFromContainerPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			if p := &containers[i].Ports[j]; p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}

func defaultVolume(src *corev1.VolumeSource) {
	if volumeSources(src) == 0 {
		*src = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		unset := corev1.HostPathUnset
		src.HostPath.Type = &unset
	}
	if src.Secret != nil {
		setMode(&src.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil {
		setMode(&src.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if d := src.DownwardAPI; d != nil {
		setMode(&d.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		for i := range d.Items {
			defaultFieldRef(d.Items[i].FieldRef)
		}
	}
	if p := src.Projected; p != nil {
		setMode(&p.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for i := range p.Sources {
			s := &p.Sources[i]
			if s.DownwardAPI != nil {
				for j := range s.DownwardAPI.Items {
					defaultFieldRef(s.DownwardAPI.Items[j].FieldRef)
				}
			}
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
				hour := int64(3600)
				s.ServiceAccountToken.ExpirationSeconds = &hour
			}
		}
	}
	if src.ISCSI != nil {
		setString(&src.ISCSI.ISCSIInterface, "default")
	}
	if r := src.RBD; r != nil {
		setString(&r.RBDPool, "rbd")
		setString(&r.RadosUser, "admin")
		setString(&r.Keyring, "/etc/ceph/keyring")
	}
	if d := src.AzureDisk; d != nil {
		if d.CachingMode == nil {
			m := corev1.AzureDataDiskCachingReadWrite
			d.CachingMode = &m
		}
		if d.FSType == nil {
			fs := "ext4"
			d.FSType = &fs
		}
		if d.ReadOnly == nil {
			ro := false
			d.ReadOnly = &ro
		}
		if d.Kind == nil {
			k := corev1.AzureSharedBlobDisk
			d.Kind = &k
		}
	}
	if s := src.ScaleIO; s != nil {
		setString(&s.StorageMode, "ThinProvisioned")
		setString(&s.FSType, "xfs")
	}
	if e := src.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		spec := &e.VolumeClaimTemplate.Spec
		if spec.VolumeMode == nil {
			fs := corev1.PersistentVolumeFilesystem
			spec.VolumeMode = &fs
		}
		roundUp(spec.Resources.Limits)
		roundUp(spec.Resources.Requests)
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = pullPolicy(src.Image.Reference)
	}
}

// volumeSources counts the sources a volume names (a valid one names one).
func volumeSources(s *corev1.VolumeSource) int {
	n := 0
	for _, set := range []bool{
		s.HostPath != nil, s.EmptyDir != nil, s.GCEPersistentDisk != nil, s.AWSElasticBlockStore != nil,
		s.GitRepo != nil, s.Secret != nil, s.NFS != nil, s.ISCSI != nil, s.Glusterfs != nil,
		s.PersistentVolumeClaim != nil, s.RBD != nil, s.FlexVolume != nil, s.Cinder != nil, s.CephFS != nil,
		s.Flocker != nil, s.DownwardAPI != nil, s.FC != nil, s.AzureFile != nil, s.ConfigMap != nil,
		s.VsphereVolume != nil, s.Quobyte != nil, s.AzureDisk != nil, s.PhotonPersistentDisk != nil,
		s.Projected != nil, s.PortworxVolume != nil, s.ScaleIO != nil, s.StorageOS != nil, s.CSI != nil,
		s.Ephemeral != nil, s.Image != nil,
	} {
		if set {
			n++
		}
	}
	return n
}

// roundUp rounds every quantity up to milli units, as the API stores them.
func roundUp(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

func setString(s *string, value string) {
	if *s == "" {
		*s = value
	}
}

func setInt32(n *int32, value int32) {
	if *n == 0 {
		*n = value
	}
}

func setMode(m **int32, value int32) {
	if *m == nil {
		*m = &value
	}
}
