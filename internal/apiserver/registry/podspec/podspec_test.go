package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDefaultPodSpec(t *testing.T) {
	spec := corev1.PodSpec{
		DeprecatedServiceAccount: "builder",
		Containers: []corev1.Container{{
			Name:  "app",
			Image: "nginx:1.27",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Env: []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"},
			}}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"),
			}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)},
			}},
		}},
		Volumes: []corev1.Volume{
			{Name: "scratch"},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}},
		},
	}
	DefaultPodSpec(&spec)

	c := spec.Containers[0]
	checks := []struct {
		name      string
		got, want interface{}
	}{
		{"restartPolicy", spec.RestartPolicy, corev1.RestartPolicyAlways},
		{"dnsPolicy", spec.DNSPolicy, corev1.DNSClusterFirst},
		{"terminationGracePeriodSeconds", *spec.TerminationGracePeriodSeconds, int64(30)},
		{"schedulerName", spec.SchedulerName, "default-scheduler"},
		{"securityContext", spec.SecurityContext != nil, true},
		{"serviceAccountName", spec.ServiceAccountName, "builder"},
		{"enableServiceLinks (pod only)", spec.EnableServiceLinks == nil, true},
		{"imagePullPolicy", c.ImagePullPolicy, corev1.PullIfNotPresent},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP},
		{"fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"requests not copied in templates", c.Resources.Requests == nil, true},
		{"probe timeout", c.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe period", c.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe success", c.LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failure", c.LivenessProbe.FailureThreshold, int32(3)},
		{"httpGet scheme", c.LivenessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP},
		{"httpGet path", c.LivenessProbe.HTTPGet.Path, "/"},
		{"volume emptyDir", spec.Volumes[0].EmptyDir != nil, true},
		{"configMap defaultMode", *spec.Volumes[1].ConfigMap.DefaultMode, int32(420)},
		{"hostPath type", *spec.Volumes[2].HostPath.Type, corev1.HostPathUnset},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}

	DefaultPodOnly(&spec)
	if got := spec.Containers[0].Resources.Requests.Cpu().String(); got != "500m" {
		t.Errorf("requests.cpu = %s, want 500m", got)
	}
	if spec.EnableServiceLinks == nil || !*spec.EnableServiceLinks {
		t.Errorf("enableServiceLinks not defaulted to true")
	}
}

func TestDefaultPodOnlyHostNetwork(t *testing.T) {
	spec := corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}
	DefaultPodOnly(&spec)
	if got := spec.Containers[0].Ports[0].HostPort; got != 8080 {
		t.Errorf("hostPort = %d, want 8080", got)
	}
}

func validSpec() corev1.PodSpec {
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:         "app",
			Image:        "nginx",
			Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}},
		Volumes: []corev1.Volume{{Name: "data"}},
	}
	DefaultPodSpec(&spec)
	return spec
}

func TestValidatePodSpec(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		want   []string // "type field" of each expected error; empty means valid
	}{
		{"valid", func(*corev1.PodSpec) {}, nil},
		{"no containers", func(s *corev1.PodSpec) { s.Containers = nil }, []string{"Required value spec.containers"}},
		{"sysctls", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "foo-"}, {Name: "kernel.shmmax"}, {Name: "safe-and-unsafe"}, {Name: "bar.."}, {Name: "kernel.shmmax"}}}
		}, []string{"Invalid value spec.securityContext.sysctls[0].name", "Invalid value spec.securityContext.sysctls[3].name", "Duplicate value spec.securityContext.sysctls[4].name"}},
		{"net sysctl on the host's network", func(s *corev1.PodSpec) {
			s.HostNetwork = true
			s.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_forward"}, {Name: "kernel.shm_rmid_forced"}}}
		}, []string{"Invalid value spec.securityContext.sysctls[0].name"}},
		{"bad container name", func(s *corev1.PodSpec) { s.Containers[0].Name = "App_1" }, []string{"Invalid value spec.containers[0].name"}},
		{"duplicate container name", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{s.Containers[0]}
			s.InitContainers[0].Ports = nil
		}, []string{"Duplicate value spec.containers[0].name"}},
		{"no image", func(s *corev1.PodSpec) { s.Containers[0].Image = "" }, []string{"Required value spec.containers[0].image"}},
		{"port out of range", func(s *corev1.PodSpec) { s.Containers[0].Ports[0].ContainerPort = 70000 }, []string{"Invalid value spec.containers[0].ports[0].containerPort"}},
		{"bad protocol", func(s *corev1.PodSpec) { s.Containers[0].Ports[0].Protocol = "HTTP" }, []string{"Unsupported value spec.containers[0].ports[0].protocol"}},
		{"duplicate port name", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = append(s.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: "TCP"})
		}, []string{"Duplicate value spec.containers[0].ports[1].name"}},
		{"env without name", func(s *corev1.PodSpec) { s.Containers[0].Env = []corev1.EnvVar{{Value: "x"}} }, []string{"Required value spec.containers[0].env[0].name"}},
		{"env bad name", func(s *corev1.PodSpec) { s.Containers[0].Env = []corev1.EnvVar{{Name: "A=B"}} }, []string{"Invalid value spec.containers[0].env[0].name"}},
		{"request above limit", func(s *corev1.PodSpec) {
			s.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			}
		}, []string{"Invalid value spec.containers[0].resources.requests[cpu]"}},
		{"negative memory", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Mi")}
		}, []string{"Invalid value spec.containers[0].resources.limits[memory]"}},
		{"unknown resource", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Limits = corev1.ResourceList{"gpu": resource.MustParse("1")}
		}, []string{"Invalid value spec.containers[0].resources.limits[gpu]"}},
		{"duplicate volume", func(s *corev1.PodSpec) { s.Volumes = append(s.Volumes, s.Volumes[0]) }, []string{"Duplicate value spec.volumes[1].name"}},
		{"two volume sources", func(s *corev1.PodSpec) {
			s.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/x"}
		}, []string{"Forbidden spec.volumes[0].emptyDir"}},
		{"mount of missing volume", func(s *corev1.PodSpec) { s.Containers[0].VolumeMounts[0].Name = "nope" }, []string{"Not found spec.containers[0].volumeMounts[0].name"}},
		{"secret without name", func(s *corev1.PodSpec) {
			s.Volumes[0].VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}
		}, []string{"Required value spec.volumes[0].secret.secretName"}},
		{"bad restartPolicy", func(s *corev1.PodSpec) { s.RestartPolicy = "Sometimes" }, []string{"Unsupported value spec.restartPolicy"}},
		{"bad dnsPolicy", func(s *corev1.PodSpec) { s.DNSPolicy = "Google" }, []string{"Unsupported value spec.dnsPolicy"}},
		{"dnsPolicy None without config", func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSNone }, []string{"Required value spec.dnsConfig"}},
		{"probe without handler", func(s *corev1.PodSpec) {
			s.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
		}, []string{"Required value spec.containers[0].readinessProbe"}},
		{"liveness success threshold", func(s *corev1.PodSpec) {
			s.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 2}
		}, []string{"Invalid value spec.containers[0].livenessProbe.successThreshold"}},
		{"toleration Exists with value", func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}, []string{"Invalid value spec.tolerations[0].operator"}},
		{"node affinity without terms", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}, []string{"Required value spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"}},
		{"pod anti-affinity without topologyKey", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			}}}}
		}, []string{"Required value spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"}},
		{"sidecar probe allowed", func(s *corev1.PodSpec) {
			always := corev1.ContainerRestartPolicyAlways
			s.InitContainers = []corev1.Container{{Name: "side", Image: "busybox", RestartPolicy: &always,
				ImagePullPolicy: "Always", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File",
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 1}}}
		}, nil},
		{"init probe forbidden", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox",
				ImagePullPolicy: "Always", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File",
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 1}}}
		}, []string{"Forbidden spec.initContainers[0].livenessProbe"}},
		{"ephemeral container", func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{ephemeral("debug", "app")}
		}, nil},
		{"ephemeral container forbidden fields", func(s *corev1.PodSpec) {
			ec := ephemeral("debug", "")
			ec.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: "TCP"}}
			ec.ReadinessProbe = &corev1.Probe{}
			ec.Lifecycle = &corev1.Lifecycle{}
			ec.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			ec.RestartPolicy = new(corev1.ContainerRestartPolicy)
			ec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPathExpr: "$(X)"}}
			s.EphemeralContainers = []corev1.EphemeralContainer{ec}
		}, []string{
			"Forbidden spec.ephemeralContainers[0].ports", "Forbidden spec.ephemeralContainers[0].resources",
			"Forbidden spec.ephemeralContainers[0].restartPolicy", "Forbidden spec.ephemeralContainers[0].readinessProbe",
			"Forbidden spec.ephemeralContainers[0].lifecycle", "Forbidden spec.ephemeralContainers[0].volumeMounts[0].subPathExpr",
		}},
		{"ephemeral container target and name", func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{ephemeral("debug", "app"), ephemeral("app", "debug")}
		}, []string{"Duplicate value spec.ephemeralContainers[1].name", "Not found spec.ephemeralContainers[1].targetContainerName"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := validSpec()
			tc.mutate(&spec)
			assertErrors(t, ValidatePodSpec(&spec, field.NewPath("spec")), tc.want)
		})
	}
}

// ephemeral is a defaulted ephemeral container targeting target.
func ephemeral(name, target string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{TargetContainerName: target, EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: "busybox", ImagePullPolicy: "Always", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File",
	}}
}

func TestValidatePodTemplateSpec(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "-bad"}},
		Spec:       validSpec(),
	}
	tmpl.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", ImagePullPolicy: "Always", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File",
	}}}
	assertErrors(t, ValidatePodTemplateSpec(&tmpl, field.NewPath("spec", "template")), []string{
		"Invalid value spec.template.metadata.labels",
		"Forbidden spec.template.spec.ephemeralContainers",
	})
}

func TestValidatePersistentVolumeClaimSpec(t *testing.T) {
	spec := corev1.PersistentVolumeClaimSpec{}
	assertErrors(t, ValidatePersistentVolumeClaimSpec(&spec, field.NewPath("spec")), []string{
		"Required value spec.accessModes",
		"Required value spec.resources[storage]",
	})
}

// assertErrors checks that errs holds exactly the wanted "type field" pairs.
func assertErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Type.String()+" "+e.Field)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s\n(full: %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), errs)
	}
}

func TestValidatePodCertificateProjection(t *testing.T) {
	p := field.NewPath("spec", "volumes").Index(0).Child("projected")
	src := func(pc corev1.PodCertificateProjection) *corev1.ProjectedVolumeSource {
		return &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{PodCertificate: &pc}}}
	}
	exp := func(s int32) *int32 { return &s }
	for _, tc := range []struct {
		name string
		pc   corev1.PodCertificateProjection
		want []string
	}{
		{"valid", corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519", CredentialBundlePath: "creds.pem", MaxExpirationSeconds: exp(3600)}, nil},
		{"key and chain", corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ECDSAP256", KeyPath: "key.pem", CertificateChainPath: "chain.pem"}, nil},
		{"too short", corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519", CredentialBundlePath: "c", MaxExpirationSeconds: exp(3599)},
			[]string{"Invalid value spec.volumes[0].projected.sources[0].podCertificate.maxExpirationSeconds"}},
		{"over 91 days", corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519", CredentialBundlePath: "c", MaxExpirationSeconds: exp(91*24*3600 + 1)},
			[]string{"Invalid value spec.volumes[0].projected.sources[0].podCertificate.maxExpirationSeconds"}},
		{"kubernetes.io over a day", corev1.PodCertificateProjection{SignerName: "kubernetes.io/x", KeyType: "ED25519", CredentialBundlePath: "c", MaxExpirationSeconds: exp(86401)},
			[]string{"Invalid value spec.volumes[0].projected.sources[0].podCertificate.maxExpirationSeconds"}},
		{"no path, bad key type", corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "DSA"},
			[]string{"Unsupported value spec.volumes[0].projected.sources[0].podCertificate.keyType", "Required value spec.volumes[0].projected.sources[0].podCertificate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, validateProjected(src(tc.pc), p), tc.want)
		})
	}
}
