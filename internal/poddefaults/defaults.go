// Package poddefaults applies upstream's defaults (SetDefaults_PodSpec and
// the defaults of the types a PodSpec holds) to core/v1 pod specs. The
// apiserver uses it for every resource that embeds a pod
// (internal/apiserver/registry/podspec) and the kubelet for static pods read
// from files (internal/kubelet/staticpods), so a pod means the same in both.
// Rules that only apply to alpha features or removed volume plugins are
// left out.
package poddefaults

import (
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodTemplateSpec applies upstream defaults to a pod template.
func PodTemplateSpec(t *corev1.PodTemplateSpec) {
	if t == nil {
		return
	}
	PodSpec(&t.Spec)
}

// PodSpec applies the defaults upstream applies to every PodSpec,
// whether it is in a Pod or in a template: pod-level policies, containers,
// probes, volumes and resource lists. Defaults upstream applies only to Pod
// objects (enableServiceLinks, requests copied from limits, host ports under
// hostNetwork) are applied by PodOnly, which pods call on top of this.
func PodSpec(spec *corev1.PodSpec) {
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
		period := int64(corev1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &period
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	// serviceAccount is the deprecated alias of serviceAccountName: upstream
	// reads it when the new field is empty and always writes both.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	RoundResourceList(spec.Overhead)
	if spec.Resources != nil {
		RoundResourceList(spec.Resources.Limits)
		RoundResourceList(spec.Resources.Requests)
	}
}

// PodOnly applies the defaults upstream applies to Pod objects but not
// to pod templates: enableServiceLinks, requests taken from limits where a
// container sets no request, and host ports equal to container ports when the
// pod uses the host network. Call it after PodSpec.
func PodOnly(spec *corev1.PodSpec) {
	for i := range spec.InitContainers {
		requestsFromLimits(&spec.InitContainers[i].Resources)
	}
	for i := range spec.Containers {
		requestsFromLimits(&spec.Containers[i].Resources)
	}
	if spec.EnableServiceLinks == nil {
		enable := corev1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &enable
	}
	if spec.HostNetwork {
		hostPortsFromContainerPorts(spec.InitContainers)
		hostPortsFromContainerPorts(spec.Containers)
	}
}

// RoundResourceList rounds every quantity up to milli precision, as upstream
// does for each resource list it stores.
func RoundResourceList(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
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
			p := &containers[i].Ports[j]
			if p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
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
		if from := c.Env[i].ValueFrom; from != nil {
			defaultFieldRef(from.FieldRef)
			if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
				optional := false
				from.FileKeyRef.Optional = &optional
			}
		}
	}
	RoundResourceList(c.Resources.Limits)
	RoundResourceList(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		defaultLifecycleHandler(c.Lifecycle.PostStart)
		defaultLifecycleHandler(c.Lifecycle.PreStop)
	}
}

// defaultPullPolicy is Always for an image whose tag is "latest" (an image
// with neither tag nor digest means "latest"), and IfNotPresent otherwise,
// including for references that do not parse.
func defaultPullPolicy(image string) corev1.PullPolicy {
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
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		service := ""
		p.GRPC.Service = &service
	}
}

func defaultLifecycleHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		defaultHTTPGet(h.HTTPGet)
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldRef(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func defaultVolume(v *corev1.Volume) {
	if len(VolumeSourceNames(&v.VolumeSource)) == 0 {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	src := &v.VolumeSource
	if src.HostPath != nil && src.HostPath.Type == nil {
		unset := corev1.HostPathUnset
		src.HostPath.Type = &unset
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = mode(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = mode(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = mode(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range src.DownwardAPI.Items {
			defaultFieldRef(src.DownwardAPI.Items[i].FieldRef)
		}
	}
	if src.Projected != nil {
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = mode(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range src.Projected.Sources {
			p := &src.Projected.Sources[i]
			if p.DownwardAPI != nil {
				for j := range p.DownwardAPI.Items {
					defaultFieldRef(p.DownwardAPI.Items[j].FieldRef)
				}
			}
			if p.ServiceAccountToken != nil && p.ServiceAccountToken.ExpirationSeconds == nil {
				hour := int64(3600)
				p.ServiceAccountToken.ExpirationSeconds = &hour
			}
		}
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if src.RBD != nil {
		defaultString(&src.RBD.RBDPool, "rbd")
		defaultString(&src.RBD.RadosUser, "admin")
		defaultString(&src.RBD.Keyring, "/etc/ceph/keyring")
	}
	if src.AzureDisk != nil {
		AzureDisk(src.AzureDisk)
	}
	if src.ScaleIO != nil {
		defaultString(&src.ScaleIO.StorageMode, "ThinProvisioned")
		defaultString(&src.ScaleIO.FSType, "xfs")
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		spec := &src.Ephemeral.VolumeClaimTemplate.Spec
		if spec.VolumeMode == nil {
			fs := corev1.PersistentVolumeFilesystem
			spec.VolumeMode = &fs
		}
		RoundResourceList(spec.Resources.Limits)
		RoundResourceList(spec.Resources.Requests)
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = defaultPullPolicy(src.Image.Reference)
	}
}

// AzureDisk applies the declared defaults of an Azure disk source,
// shared by pod volumes and persistent volumes.
func AzureDisk(d *corev1.AzureDiskVolumeSource) {
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

func defaultString(s *string, value string) {
	if *s == "" {
		*s = value
	}
}

func mode(m int32) *int32 { return &m }

// VolumeSourceNames names the sources set in a volume (upstream allows one).
func VolumeSourceNames(s *corev1.VolumeSource) []string {
	var names []string
	add := func(set bool, name string) {
		if set {
			names = append(names, name)
		}
	}
	add(s.HostPath != nil, "hostPath")
	add(s.EmptyDir != nil, "emptyDir")
	add(s.GCEPersistentDisk != nil, "gcePersistentDisk")
	add(s.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	add(s.GitRepo != nil, "gitRepo")
	add(s.Secret != nil, "secret")
	add(s.NFS != nil, "nfs")
	add(s.ISCSI != nil, "iscsi")
	add(s.Glusterfs != nil, "glusterfs")
	add(s.PersistentVolumeClaim != nil, "persistentVolumeClaim")
	add(s.RBD != nil, "rbd")
	add(s.FlexVolume != nil, "flexVolume")
	add(s.Cinder != nil, "cinder")
	add(s.CephFS != nil, "cephfs")
	add(s.Flocker != nil, "flocker")
	add(s.DownwardAPI != nil, "downwardAPI")
	add(s.FC != nil, "fc")
	add(s.AzureFile != nil, "azureFile")
	add(s.ConfigMap != nil, "configMap")
	add(s.VsphereVolume != nil, "vsphereVolume")
	add(s.Quobyte != nil, "quobyte")
	add(s.AzureDisk != nil, "azureDisk")
	add(s.PhotonPersistentDisk != nil, "photonPersistentDisk")
	add(s.Projected != nil, "projected")
	add(s.PortworxVolume != nil, "portworxVolume")
	add(s.ScaleIO != nil, "scaleIO")
	add(s.StorageOS != nil, "storageos")
	add(s.CSI != nil, "csi")
	add(s.Ephemeral != nil, "ephemeral")
	add(s.Image != nil, "image")
	return names
}
