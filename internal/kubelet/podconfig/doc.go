// Package podconfig turns a Pod and its containers into the CRI requests
// the kubelet sends to the runtime: the PodSandboxConfig of RunPodSandbox
// and the ContainerConfig of CreateContainer, as upstream's kubelet builds
// them (labels, annotations, log paths, environment, mounts, cgroup
// resources, security context), so that a container sees the same
// environment under orch as under Kubernetes. It also forms what the
// kubelet writes for a pod's name resolution: the sandbox's DNSConfig
// from the pod's dnsPolicy and dnsConfig, the cluster DNS and the node's
// resolv.conf (DNSConfig, ParseResolvConf), and the pod's /etc/hosts
// (EtcHosts, EtcHostsHostNetwork).
//
// The package is pure: it does no I/O and talks to no API. What it needs
// from elsewhere comes in as values (Node, Sandbox, Container: the node's
// name and IPs, the pod's IPs, the cgroup parent, the DNS config, the host
// paths of prepared volumes) or through EnvSource, which hands over the
// ConfigMaps, Secrets and Services the environment refers to.
//
//	qos := podconfig.QOSClass(pod)
//	sb, err := podconfig.SandboxConfig(pod, node, podconfig.Sandbox{
//		CgroupParent: podconfig.PodCgroupName(pod, qos, false),
//		LogDirectory: podconfig.PodLogDirectory("/var/log/pods", pod),
//		DNS:          dns,
//	})
//	cc, err := podconfig.ContainerConfig(pod, &pod.Spec.Containers[0], node, podconfig.Container{
//		ImageRef: imageID, PodIPs: ips, Volumes: volumes, EtcHostsPath: hosts,
//	}, envSource)
package podconfig
