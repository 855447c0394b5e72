package podconfig

import (
	"fmt"
	"maps"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels the kubelet puts on sandboxes and containers.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
)

// Sandbox is what RunPodSandbox needs beyond the pod and the node,
// decided elsewhere.
type Sandbox struct {
	// Attempt counts the pod's sandboxes, from 0.
	Attempt uint32
	// DNS is the pod's resolv.conf (dnsPolicy and dnsConfig applied).
	DNS *runtimeapi.DNSConfig
	// CgroupParent is the pod's cgroup (see PodCgroupName).
	CgroupParent string
	// LogDirectory is the pod's log directory (see PodLogDirectory).
	LogDirectory string
}

// SandboxConfig is the PodSandboxConfig of RunPodSandbox for pod.
func SandboxConfig(pod *corev1.Pod, node Node, in Sandbox) (*runtimeapi.PodSandboxConfig, error) {
	if err := checkUserNamespaces(pod); err != nil {
		return nil, err
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: in.Attempt,
		},
		Labels:       PodLabels(pod),
		Annotations:  maps.Clone(pod.Annotations),
		DnsConfig:    in.DNS,
		LogDirectory: in.LogDirectory,
		PortMappings: PortMappings(pod),
	}
	if !pod.Spec.HostNetwork {
		// A host-network pod keeps the node's hostname: none is sent.
		host, domain, err := Hostname(pod, node.ClusterDomain)
		if err != nil {
			return nil, err
		}
		if domain != "" && pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
			fqdn := host + "." + domain
			if len(fqdn) > 64 {
				return nil, Invalidf("FQDN %s of the pod is too long (%d characters is the max, %d characters requested)", fqdn, 64, len(fqdn))
			}
			host = fqdn
		}
		cfg.Hostname = host
	}
	linux, err := sandboxLinux(pod, node, in)
	if err != nil {
		return nil, err
	}
	cfg.Linux = linux
	return cfg, nil
}

func sandboxLinux(pod *corev1.Pod, node Node, in Sandbox) (*runtimeapi.LinuxPodSandboxConfig, error) {
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		Privileged: hasPrivilegedContainer(pod),
		// The sandbox (pause) always runs with the runtime's default
		// seccomp profile, whatever its containers use.
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		// Upstream sets namespaces only when the pod has a security
		// context, which the API server always defaults; orch always does.
		NamespaceOptions: NamespaceOptions(pod),
	}
	lc := &runtimeapi.LinuxPodSandboxConfig{CgroupParent: in.CgroupParent, SecurityContext: sc, Sysctls: map[string]string{}}
	if p := pod.Spec.SecurityContext; p != nil {
		for _, s := range p.Sysctls {
			lc.Sysctls[s.Name] = s.Value
		}
		sc.RunAsUser = int64Value(p.RunAsUser)
		sc.RunAsGroup = int64Value(p.RunAsGroup)
		if p.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *p.FSGroup)
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, p.SupplementalGroups...)
		if p.SupplementalGroupsPolicy != nil {
			v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*p.SupplementalGroupsPolicy)]
			if !ok {
				return nil, Invalidf("unsupported supplementalGroupsPolicy %q", *p.SupplementalGroupsPolicy)
			}
			sc.SupplementalGroupsPolicy = runtimeapi.SupplementalGroupsPolicy(v)
		}
		sc.SelinuxOptions = selinuxOptions(p.SELinuxOptions)
	}
	lc.Resources, lc.Overhead = SandboxResources(pod, node)
	return lc, nil
}

// PodLabels are the sandbox's labels: the pod's, plus its name,
// namespace and UID under io.kubernetes.pod.*.
func PodLabels(pod *corev1.Pod) map[string]string {
	l := maps.Clone(pod.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelPodName] = pod.Name
	l[LabelPodNamespace] = pod.Namespace
	l[LabelPodUID] = string(pod.UID)
	return l
}

// Hostname is the pod's hostname and domain: hostnameOverride, else
// spec.hostname, else the pod's name, cut to 63 characters (without a
// trailing - or .); the domain is <subdomain>.<namespace>.svc.<clusterDomain>
// when the pod has a subdomain (and no hostnameOverride).
func Hostname(pod *corev1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) > 0 {
			return "", "", Invalidf("pod hostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, "; "))
		}
		h, err := truncateHostname(pod.Name, *o)
		return h, "", err
	}
	hostname = pod.Name
	if h := pod.Spec.Hostname; h != "" {
		if msgs := validation.IsDNS1123Label(h); len(msgs) > 0 {
			return "", "", Invalidf("pod hostname %q is not a valid DNS label: %s", h, strings.Join(msgs, "; "))
		}
		hostname = h
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if s := pod.Spec.Subdomain; s != "" {
		if msgs := validation.IsDNS1123Label(s); len(msgs) > 0 {
			return "", "", Invalidf("pod subdomain %q is not a valid DNS label: %s", s, strings.Join(msgs, "; "))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", s, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

func truncateHostname(pod, hostname string) (string, error) {
	if len(hostname) <= 63 {
		return hostname, nil
	}
	h := strings.TrimRight(hostname[:63], "-.")
	if h == "" {
		return "", Invalidf("hostname for pod %q was invalid: %q", pod, hostname)
	}
	return h, nil
}

// PortMappings are the ports of the pod's regular containers (all of
// them, with or without hostPort: the runtime's portmap uses those with
// one). A port name used twice in a container counts once.
func PortMappings(pod *corev1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		seen := map[string]bool{}
		for _, p := range c.Ports {
			name := p.Name
			if name == "" {
				family := "any"
				if p.HostIP != "" {
					family = "v4"
					if ip := net.ParseIP(p.HostIP); ip != nil && ip.To4() == nil {
						family = "v6"
					}
				}
				name = fmt.Sprintf("%s-%s-%s:%d:%d", family, p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      runtimeProtocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func runtimeProtocol(p corev1.Protocol) runtimeapi.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}
